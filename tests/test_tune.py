"""rlcourse Algorithms under real Ray Tune: sweeps, placement groups, checkpoints, failures,
restored experiments, ASHA, what PBT's exploit does (lesson 07 runs PBT itself and checks the perturbed
lr reaches the optimizer), and bad input refused before any trial starts."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import fault_envs
import numpy as np
import pytest
import ray
from fault_envs import CountingEnv
from helpers import small_ppo
from ray import tune
from ray.tune.schedulers import ASHAScheduler

from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.ppo import PPO, PPOConfig
from rlcourse.utils.validation import ConfigError

ray.cloudpickle.register_pickle_by_value(fault_envs)  # trial and runner actors cannot import tests/
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = pytest.mark.usefixtures("ray_session")
RETURN = "env_runners/episode_return_mean"


def small_config(**training) -> PPOConfig:
    """A PPO trial that runs in its own process (no runner actors) and reserves half a CPU."""
    return (small_ppo().environment("CartPole-v1")
            .env_runners(num_env_runners=0, num_envs_per_env_runner=2)
            .resources(num_cpus_for_main_process=0.5)
            .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=2,
                      **training))


def run_config(tmp_path: Path, **kwargs) -> tune.RunConfig:
    return tune.RunConfig(storage_path=str(tmp_path), verbose=0, **kwargs)


class CrashOnceEnv(CountingEnv):
    """Raises on its 300th step the first time only (a marker file remembers), like a flaky env."""

    def __init__(self, config: dict | None = None):
        super().__init__(config)
        self.config = config or {}

    def step(self, action):
        marker = Path(self.config["marker"])
        self.steps_taken = getattr(self, "steps_taken", 0) + 1
        if self.steps_taken == 300 and not marker.exists():
            marker.write_text("crashed")
            raise RuntimeError("CrashOnceEnv: the simulator crashed")
        return super().step(action)


class BrokenEnv(CountingEnv):
    def __init__(self, config: dict | None = None):
        super().__init__(config)
        self.config = config or {}

    def step(self, action):
        if self.config.get("broken"):
            raise RuntimeError("BrokenEnv: this env config cannot be simulated")
        return super().step(action)


@pytest.mark.timeout(240)
def test_grid_sweep_trials_results_on_disk_and_best_checkpoint_loads(tmp_path):
    config = small_config(lr=tune.grid_search([1e-3, 3e-4]))
    results = tune.Tuner(
        PPO.as_trainable(), param_space=config,
        tune_config=tune.TuneConfig(metric=RETURN, mode="max"),
        run_config=run_config(tmp_path, stop={"training_iteration": 3},
                              checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True)),
    ).fit()
    assert not results.errors
    df = results.get_dataframe()
    assert sorted(df["config/lr"]) == [3e-4, 1e-3]
    assert list(df["training_iteration"]) == [3, 3]
    for result in results:  # each trial's own lr reached its learner
        learner = result.metrics["learners"]["default_policy"]
        assert learner["default_optimizer_learning_rate"] == result.config["lr"]
        trial_dir = Path(result.path)
        assert (trial_dir / "progress.csv").read_text().count("\n") == 4  # header + 3 iterations
        assert list(trial_dir.glob("events.out.tfevents.*"))  # TensorBoard reads these
        assert len(result.metrics_dataframe) == 3
    best = results.get_best_result()
    assert best.metrics["env_runners"]["episode_return_mean"] == df[RETURN].max()
    algo = Algorithm.from_checkpoint(best.checkpoint.path)
    try:
        assert isinstance(algo, PPO) and algo.iteration == 3 and algo.config.lr == best.config["lr"]
        assert algo.train()["training_iteration"] == 4
    finally:
        algo.stop()


@pytest.mark.timeout(120)
def test_an_algorithm_name_is_a_trainable_as_in_rllib(tmp_path):
    """tune.Tuner("PPO", param_space=config) runs rlcourse's PPO: a config built where Tune is
    imported registers rlcourse's algorithms under their names."""
    results = tune.Tuner("PPO", param_space=small_config(),
                         run_config=run_config(tmp_path, stop={"training_iteration": 1})).fit()
    assert not results.errors
    (result,) = results
    assert result.metrics["training_iteration"] == 1 and Path(result.path).name.startswith("PPO_")
    assert result.config["config_class"] == "rlcourse.algorithms.ppo.ppo:PPOConfig"
    from rlcourse.algorithms.registry import get_algorithm_class

    assert get_algorithm_class("SAC").__module__ == "rlcourse.algorithms.sac.sac"
    with pytest.raises(ValueError, match="Unknown algorithm 'DreamerV3'.*PPO, IMPALA, APPO, DQN"):
        get_algorithm_class("DreamerV3")


@pytest.mark.timeout(240)
def test_each_trial_reserves_one_placement_group_so_trials_never_oversubscribe(tmp_path):
    # 0.5 CPU for the trial's process + 2 runners x 0.5 = 1.5 CPUs: on 2 CPUs one trial at a time.
    config = (small_config(lr=tune.grid_search([1e-3, 3e-4]))
              .env_runners(num_env_runners=2, num_cpus_per_env_runner=0.5))
    results = tune.Tuner(PPO.as_trainable(), param_space=config,
                         run_config=run_config(tmp_path, stop={"training_iteration": 2})).fit()
    assert not results.errors
    spans = sorted((r.metrics_dataframe["timestamp"].min() - r.metrics_dataframe["time_this_iter_s"]
                    .iloc[0], r.metrics_dataframe["timestamp"].max()) for r in results)
    assert spans[0][1] <= spans[1][0] + 1, f"trials overlapped: {spans}"
    assert all(r.metrics["env_runners"]["num_healthy_env_runners"] == 2 for r in results)


@pytest.mark.timeout(120)
def test_bad_param_space_fails_before_any_trial_starts_naming_the_key(tmp_path):
    with pytest.raises(ConfigError, match="lr.*can take -1.0"):  # checked at Tuner()
        tune.Tuner(PPO.as_trainable(), param_space=small_config(lr=tune.grid_search([1e-3, -1.0])))
    with pytest.raises(ConfigError, match="search space cannot vary model_config"):
        small_ppo().rl_module(model_config=tune.grid_search([{}, {"fcnet_hiddens": [8]}]))
    with pytest.raises(ConfigError, match="has no setting 'lrr'; did you mean 'lr'"):
        tune.Tuner(PPO.as_trainable(),
                   param_space={"env": "CartPole-v1", "lrr": tune.grid_search([1e-3, 3e-4])},
                   run_config=run_config(tmp_path, stop={"training_iteration": 1})).fit()
    assert not list(tmp_path.rglob("result.json"))  # no trial ran


@pytest.mark.timeout(240)
def test_an_env_that_raises_ends_its_trial_only_with_the_env_traceback(tmp_path):
    broken = tune.grid_search([False, True])
    config = small_config().environment(BrokenEnv, env_config={"broken": broken})
    results = tune.Tuner(PPO.as_trainable(), param_space=config,
                         run_config=run_config(tmp_path, stop={"training_iteration": 2})).fit()
    assert len(results.errors) == 1
    assert "BrokenEnv: this env config cannot be simulated" in str(results.errors[0])
    ok = [r for r in results if r.error is None]
    assert len(ok) == 1 and ok[0].metrics["training_iteration"] == 2


@pytest.mark.timeout(240)
def test_a_crashed_trial_is_retried_from_its_last_checkpoint(tmp_path):
    marker = tmp_path / "crashed"
    config = small_config().environment(CrashOnceEnv, env_config={"marker": str(marker)})
    results = tune.Tuner(
        PPO.as_trainable(), param_space=config,
        run_config=run_config(tmp_path, stop={"training_iteration": 4},
                              failure_config=tune.FailureConfig(max_failures=1),
                              checkpoint_config=tune.CheckpointConfig(checkpoint_frequency=1)),
    ).fit()
    assert marker.exists() and not results.errors
    (result,) = results
    assert result.metrics["training_iteration"] == 4
    iterations = list(result.metrics_dataframe["training_iteration"])
    assert iterations == sorted(set(iterations)) and iterations[-1] == 4  # continued, not restarted


@pytest.mark.timeout(600)
def test_tuner_restore_continues_an_interrupted_experiment(tmp_path):
    """The driver is interrupted (SIGINT, as Ctrl-C) after iteration 2 of 5; Tuner.restore in
    another process continues the trial from its checkpoint to iteration 5. (The experiment's
    callbacks are restored too, so only the first process, with INTERRUPT_AT_2 set, interrupts.)"""
    script = textwrap.dedent(f"""
        import os, signal
        from ray import tune
        from tests.test_tune import small_config
        from rlcourse.algorithms.ppo import PPO

        class Interrupt(tune.Callback):
            def on_trial_result(self, iteration, trials, trial, result, **info):
                if result["training_iteration"] == 2 and os.environ.get("INTERRUPT_AT_2"):
                    os.kill(os.getpid(), signal.SIGINT)

        tune.Tuner(PPO.as_trainable(), param_space=small_config(),
                   run_config=tune.RunConfig(
                       name="interrupted", storage_path={str(tmp_path)!r}, verbose=0,
                       stop={{"training_iteration": 5}}, callbacks=[Interrupt()],
                       checkpoint_config=tune.CheckpointConfig(checkpoint_frequency=1))).fit()
    """)
    root = Path(__file__).resolve().parents[1]
    # (Its own Ray starts in that process: minutes at worst on a busy machine.)
    subprocess.run([sys.executable, "-c", script], cwd=root, timeout=300, check=False,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "tests")]),
                        "INTERRUPT_AT_2": "1"})
    path = tmp_path / "interrupted"
    assert tune.Tuner.can_restore(str(path))
    results = tune.Tuner.restore(str(path), trainable=PPO.as_trainable()).fit()
    (result,) = results
    assert not results.errors and result.metrics["training_iteration"] == 5
    iterations = [json.loads(line)["training_iteration"]
                  for line in (Path(result.path) / "result.json").read_text().splitlines()]
    assert 2 <= len(iterations) - 3 <= 3 and iterations.count(1) == 1  # continued, not restarted


@pytest.mark.timeout(300)
def test_asha_stops_trailing_trials_early(tmp_path):
    # lr 1e-6 barely learns: ASHA stops those trials at a rung, long before max_t. The
    # param_space is a plain dict of settings, as RLlib's older examples write it.
    # One trial at a time, the learning one first, all with one seed: ASHA compares a trial with
    # the results already recorded at its rung, so with trials racing each other the order in which
    # they reach a rung (not their learning) decided whether any was stopped; CI failed on it once.
    settings = {"env": "CartPole-v1", "num_env_runners": 0, "num_envs_per_env_runner": 2,
                "num_cpus_for_main_process": 0.5, "train_batch_size_per_learner": 256,
                "minibatch_size": 128, "num_epochs": 2, "seed": 0,
                "lr": tune.grid_search([3e-3, 1e-6, 1e-6])}
    results = tune.Tuner(
        PPO.as_trainable(), param_space=settings,
        tune_config=tune.TuneConfig(metric=RETURN, mode="max", reuse_actors=True,
                                    max_concurrent_trials=1,
                                    scheduler=ASHAScheduler(max_t=8, grace_period=4,
                                                            reduction_factor=2)),
        run_config=run_config(tmp_path, stop={"training_iteration": 8})).fit()
    iterations = {r.metrics["training_iteration"] for r in results}
    assert not results.errors and min(iterations) < 8 and max(iterations) == 8


@pytest.mark.timeout(120)
def test_restoring_another_lr_keeps_the_weights_and_uses_the_new_lr(tmp_path, algo_factory):
    """What PBT's exploit does: a checkpoint restored into an algorithm with a perturbed lr."""
    source = algo_factory(small_config(lr=1e-3))
    source.train()
    path = source.save_to_path(tmp_path / "ckpt")
    target = algo_factory(small_config(lr=3e-3))
    target.restore_from_path(path)
    saved, restored = source.learner_group.get_weights(), target.learner_group.get_weights()
    assert all(np.array_equal(saved[k], restored[k]) for k in saved)
    assert target.train()["learners"]["default_policy"]["default_optimizer_learning_rate"] == 3e-3


@pytest.mark.timeout(120)
def test_tune_stays_out_of_rlcourse_imports_and_runner_actors(algo_factory):
    code = ("import sys, rlcourse, rlcourse.algorithms.ppo, rlcourse.env.env_runner; "
            "print('ray.tune' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
    PPO.as_trainable()  # Tune is in this process now; a runner actor must still go without it
    algo = algo_factory(small_config().env_runners(num_env_runners=1, num_cpus_per_env_runner=0.5))
    assert algo.env_runner_group.foreach_env_runner(
        lambda runner: "ray.tune" in sys.modules) == [False]
    assert ray.is_initialized()


SWEEP = '''
from ray import tune
from rlcourse.algorithms.ppo.ppo import PPOConfig

config = (PPOConfig().environment("CartPole-v1")
          .env_runners(num_env_runners=0, num_envs_per_env_runner=2)
          .resources(num_cpus_for_main_process=0.5)
          .training(lr=tune.grid_search([1e-3, 3e-4]), train_batch_size_per_learner=256,
                    minibatch_size=128, num_epochs=2))
stop = {"training_iteration": 2, "STOP_KEY": 1e9}
pass_criteria = {"env_runners/episode_return_mean": 5}
'''


@pytest.mark.timeout(240)
def test_rlcourse_tune_runs_a_sweep_file_and_prints_the_best_checkpoint(tmp_path, capsys):
    from rlcourse.course.tune_job import main
    from rlcourse.course.tuned_example import TunedExampleError

    typo = tmp_path / "typo_sweep.py"
    typo.write_text(SWEEP.replace("STOP_KEY", "env_runners/episode_reward_mean"))
    with pytest.raises(TunedExampleError, match="did you mean 'env_runners/episode_return_mean'"):
        main([str(typo)])  # Tune itself would only warn, and never stop on it
    sweep = tmp_path / "lr_sweep.py"
    sweep.write_text(SWEEP.replace("STOP_KEY", "time_total_s"))
    assert main([str(sweep), "--storage-path", str(tmp_path / "results")]) == 0
    out = capsys.readouterr().out
    assert "lr=0.001" in out and "lr=0.0003" in out and "PASSED" in out
    checkpoint = out.rsplit("checkpoint: ", 1)[1].strip()
    algo = Algorithm.from_checkpoint(checkpoint)
    try:
        assert algo.iteration == 2
    finally:
        algo.stop()
