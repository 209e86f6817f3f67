"""Helpers the tests import by name (`from helpers import small_ppo`): small configs and checks.

Fixtures live in conftest.py; pytest finds those by itself. Helpers live here, not in conftest.py,
because every folder with tests may have a conftest.py of its own (tests/browser/ has one), and
pytest imports each as the module `conftest`: an import of it by name gets whichever came last.
"""

import os
import select
import signal
import subprocess
import time

import numpy as np
import ray

from rlcourse.algorithms.impala.impala import IMPALAConfig
from rlcourse.algorithms.ppo.ppo import PPOConfig

# PPOConfig's and IMPALAConfig's defaults are RLlib's, sized for long runs on many machines (PPO:
# 4,000-step batches, 30 epochs of 128-row minibatches, 2 runner actors). Unit tests check how
# things work, not how well a big run learns: they start from these small settings, one runner in
# this process and two small networks, and set on top whatever they test.
SMALL_PPO_TRAINING = {"lr": 1e-3, "train_batch_size_per_learner": 2000, "minibatch_size": 250,
                      "num_epochs": 6, "grad_clip": 0.5, "lambda_": 0.95, "clip_param": 0.2,
                      "vf_loss_coeff": 0.5, "use_kl_loss": False}
SMALL_MODEL = {"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh", "vf_share_layers": False}
# For configs whose runners are killed: a restarted runner process has this long to answer (30 s by
# default, as in RLlib); on a 2-core machine busy with another test lane, a new process takes longer.
SLOW_RESTARTS = {"env_runner_health_probe_timeout_s": 120}


def small_ppo(config_class: type[PPOConfig] = PPOConfig) -> PPOConfig:
    """A PPOConfig (or subclass) sized for a unit test (see above)."""
    return (config_class().env_runners(num_env_runners=0).training(**SMALL_PPO_TRAINING)
            .rl_module(model_config=SMALL_MODEL))


def small_impala(config_class: type[IMPALAConfig] = IMPALAConfig) -> IMPALAConfig:
    """An IMPALAConfig (or subclass) sized for a unit test: the course's CartPole settings, one
    runner in this process."""
    return (config_class()
            .env_runners(num_env_runners=0, max_requests_in_flight_per_env_runner=2)
            .training(lr=1e-3, learner_queue_size=4)
            .rl_module(model_config=SMALL_MODEL))


def read_line(process: subprocess.Popen, timeout_s: float) -> str:
    """The next line `process` prints, or "" if none came within `timeout_s`: a child that hangs
    before printing fails the test instead of hanging it."""
    ready, _, _ = select.select([process.stdout], [], [], timeout_s)
    return process.stdout.readline() if ready else ""


def kill_session(process: subprocess.Popen) -> None:
    """Kill `process` (started with start_new_session=True) and all it started, unless it has
    exited: for a `finally`, so a failed or timed-out test leaves no Ray behind."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def record_batches(learner, monkeypatch) -> list[dict]:
    """Every minibatch `learner.compute_loss` sees, in a list that fills as it trains."""
    seen = []
    compute_loss = learner.compute_loss

    def recording(batch):
        seen.append(batch)
        return compute_loss(batch)

    monkeypatch.setattr(learner, "compute_loss", recording)
    return seen


def free_cpus_after_release(expected: float, timeout_s: float = 20) -> float:
    """Free CPUs once killed actors have released theirs (Ray updates this within a second)."""
    deadline = time.monotonic() + timeout_s
    while ray.available_resources().get("CPU", 0) < expected and time.monotonic() < deadline:
        time.sleep(0.1)
    return ray.available_resources().get("CPU", 0)


def runner_module_in_a_fresh_process(config_class: str, env: str) -> tuple[str, bool]:
    """Validate `config_class` on `env` and build a runner in a fresh Python process; return the
    runner's module class name and whether that process imported torch (runners must not)."""
    import subprocess
    import sys
    import textwrap

    package, name = config_class.rsplit(".", 1)
    code = textwrap.dedent(f"""
        import sys
        from {package} import {name}
        from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner
        config = {name}().environment({env!r})
        config.validate()
        runner = SingleAgentEnvRunner(config, config.get_env_creator())
        print(type(runner.module).__name__, "torch" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    module_name, torch_imported = out.stdout.split()
    return module_name, torch_imported == "True"


def assert_learners_updated_together(group, before: dict) -> None:
    """Data-parallel learners moved away from `before` and hold identical weights (one all-reduced
    step each)."""
    first, second = group.foreach_learner("get_weights")
    assert any(not np.array_equal(first[k], before[k]) for k in before)
    for key in first:
        np.testing.assert_array_equal(first[key], second[key], err_msg=key)
