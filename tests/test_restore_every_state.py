"""A refused restore changes nothing, for every algorithm's state. Each case edits one value of a
checkpoint (state.json or learner.pt, recording the new SHA-256s as someone who knows the format
would), restores it into a running algorithm, expects an error naming the checkpoint, the file and
the field, and then finds the algorithm exactly as before (counters, weights, optimizer and RNG
states, replay buffers, filter statistics, running episodes) and still training."""

import hashlib
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from helpers import small_impala, small_ppo
from test_checkpoint_trust import _copy, _edit_manifest, _version
from test_checkpoint_values import _apex, _dqn, _sac, mean_std_filter

import rlcourse.course.multi_agent_envs  # noqa: F401 (registers MultiAgentCartPole)
from rlcourse.callbacks import Callbacks
from rlcourse.utils.checkpoints import STATE_JSON, CheckpointError
from rlcourse.utils.serialization import from_plain, to_plain

pytestmark = pytest.mark.timeout(300)

TINY = {"fcnet_hiddens": [8]}


def _ppo():
    return (small_ppo().environment("CartPole-v1").debugging(seed=0)
            .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
            .env_runners(env_to_module_connector=mean_std_filter).callbacks(Callbacks)
            .evaluation(evaluation_interval=1, evaluation_duration=1)
            .rl_module(model_config=TINY))


def _impala():
    return (small_impala().environment("CartPole-v1").debugging(seed=0)
            .env_runners(rollout_fragment_length=50).training(train_batch_size_per_learner=100)
            .rl_module(model_config=TINY))


def _multi_agent():
    return (small_ppo().environment("MultiAgentCartPole", env_config={"num_agents": 2})
            .debugging(seed=0).rl_module(model_config=TINY)
            .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
            .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=_separate))


def _separate(agent_id, episode, **kwargs):
    return f"p{agent_id}"


CONFIGS = {"ppo": _ppo, "impala": _impala, "dqn": _dqn, "sac": _sac, "apex_dqn": _apex,
           "multi_agent_ppo": _multi_agent}


@pytest.fixture(scope="module")
def running(ray_session, tmp_path_factory) -> Callable[[str], Any]:
    """`running(name)`: a running algorithm, and its checkpoint from an iteration ago, shared by
    that algorithm's cases (which come in a row); one algorithm at a time."""
    current: dict[str, Any] = {}

    def get(name: str) -> Any:
        if name not in current:
            for algorithm in current.values():
                algorithm.stop()
            current.clear()
            algorithm = current[name] = CONFIGS[name]().build_algo()
            for _ in range(2):
                algorithm.train()
            folder = tmp_path_factory.mktemp(name) / "ckpt"
            algorithm.checkpoint = Path(algorithm.save_to_path(folder))
            algorithm.train()
        return current[name]

    yield get
    for algorithm in current.values():
        algorithm.stop()


# -- the edits: each takes (state.json, learner.pt) and returns the field the error must name ----

def _optimizer(tensors: dict) -> tuple[dict, str]:
    """The (first module's) optimizer state and its field name."""
    optimizer = tensors["optimizer"]
    if "param_groups" in optimizer:
        return optimizer, "learner.pt: optimizer"
    mid = sorted(optimizer)[0]
    return optimizer[mid], f"learner.pt: optimizer[{mid!r}]"


def _learner(state: dict) -> tuple[dict, str]:
    """The (first module's) JSON learner state and its field name."""
    learner = state["learner"]
    if "modules" in learner:
        mid = sorted(learner["modules"])[0]
        return learner["modules"][mid], f"learner.modules[{mid!r}]"
    return learner, "learner"


def weight_nan(state, tensors):
    key = next(iter(tensors["module"]))
    tensors["module"][key] = tensors["module"][key] * math.nan
    return f"learner.pt: module[{key!r}]"


def _slot(name: str, edit: Callable[[torch.Tensor], torch.Tensor]):
    def apply(state, tensors):
        optimizer, field = _optimizer(tensors)
        index = next(iter(optimizer["state"]))
        optimizer["state"][index][name] = edit(optimizer["state"][index][name])
        return f"{field}.state[{index}][{name!r}]"
    apply.__name__ = f"{name}_edited"
    return apply


def optimizer_eps(state, tensors):
    optimizer, field = _optimizer(tensors)
    optimizer["param_groups"][0]["eps"] = 1.0
    return f"{field}.param_groups[0].eps"


def torch_rng_float(state, tensors):
    tensors["torch_rng"] = tensors["torch_rng"].float()
    return "learner.pt: torch_rng"


BROKEN_GENERATOR = {"__generator__": {"bit_generator": "PCG64", "state": {"state": "x"}}}


def learner_rng(state, tensors):
    rngs = state["learner"]["rngs"]
    if "__generator__" in rngs[0]:
        rngs[0] = BROKEN_GENERATOR
        return "learner.rngs[0]"
    mid = sorted(rngs[0])[0]
    rngs[0][mid] = BROKEN_GENERATOR
    return f"learner.rngs[0][{mid!r}]"


def _learner_value(key: str, value):
    def apply(state, tensors):
        learner, field = _learner(state)
        learner[key] = value
        return f"{field}.{key}"
    apply.__name__ = f"{key}_edited"
    return apply


def runner_rng(state, tensors):
    runner = state["env_runners"][0]
    if "module_rngs" in runner:
        runner["module_rngs"]["p0"] = BROKEN_GENERATOR
        return "env_runners[0].module_rngs['p0']"
    runner["module_rng"] = BROKEN_GENERATOR
    return "env_runners[0].module_rng"


def runner_rng_missing(state, tensors):  # restored counters and weights, then KeyError
    del state["env_runners"][0]["module_rng"]
    return "env_runners[0] has no 'module_rng'"


def runner_episodes_missing(state, tensors):
    del state["env_runners"][0]["episodes"]
    return "env_runners[0] has no 'episodes'"


def betas_missing(state, tensors):  # restored, then train() raised KeyError
    optimizer, name = _optimizer(tensors)
    del optimizer["param_groups"][0]["betas"]
    return f"{name}.param_groups[0] has no 'betas'"


def slot_missing(state, tensors):
    optimizer, name = _optimizer(tensors)
    del optimizer["state"][0]["exp_avg_sq"]
    return f"{name}.state[0] holds ['exp_avg', 'step']"


def _env_layer(state) -> tuple[dict, str]:
    """The innermost layer (the env itself) of the first runner's first sub-env."""
    runner = state["env_runners"][0]
    where = "env_runners[0].episodes.envs[0]" if runner["episodes"] else "env_runners[0].envs[0]"
    envs = runner["episodes"]["envs"] if runner["episodes"] else runner["envs"]
    return envs[0][-1], f"{where}[{len(envs[0]) - 1}]"


def env_state_nan(state, tensors):
    layer, field = _env_layer(state)
    layer["state"] = to_plain(from_plain(layer["state"]) * np.nan)
    return f"{field}.state"


def env_method(state, tensors):
    layer, field = _env_layer(state)
    layer["step"] = 1
    return f"{field} names ['step']"


def running_obs_nan(state, tensors):
    episodes = state["env_runners"][0]["episodes"]
    episodes["obs"] = to_plain(from_plain(episodes["obs"]) * np.nan)
    return "env_runners[0].episodes.obs"


def filter_mean_nan(state, tensors):
    stats = state["env_runners"][0]["env_to_module"][0]["running_stats"]
    stats["mean"] = to_plain(from_plain(stats["mean"]) * np.nan)
    return "env_runners[0].env_to_module[0].running_stats.mean"


def merged_filter_variance_negative(state, tensors):
    stats = state["algorithm"]["env_to_module_state"][0]["running_stats"]
    stats["m2"] = to_plain(-from_plain(stats["m2"]) - 1)
    return "algorithm.env_to_module_state[0].running_stats.m2"


def evaluation_steps(state, tensors):
    state["evaluation_env_runners"][0]["num_env_steps_lifetime"] = -1
    return "evaluation_env_runners[0].num_env_steps_lifetime"


def custom_metric(state, tensors):
    state["algorithm"]["custom_metrics"] = {"x": {"reduce": "median", "window": None,
                                                  "clear_on_reduce": False, "values": [],
                                                  "total": 0.0}}
    return "algorithm.custom_metrics['x']"


def module_returns_nan(state, tensors):
    returns = state["algorithm"]["module_episode_returns"]
    returns["p0"] = [math.nan]
    return "algorithm.module_episode_returns['p0']"


def _replay_slot(key: str, buffer: str, shard: list):
    def apply(state, tensors):
        saved = state[key][buffer]
        for step in shard:
            saved = saved[step]
        slots = saved["episodes"][0]
        slots["slots"] = to_plain(from_plain(slots["slots"]) + 100_000)
        return f"{key}.{buffer}{''.join(f'[{i}]' for i in shard)}.episodes[0].slots"
    apply.__name__ = "replay_slot_out_of_range"
    return apply


def param_groups_str(state, tensors):
    _optimizer(tensors)[0]["param_groups"] = "x"
    return "learner.pt: an optimizer's state"


def module_state_missing(state, tensors):
    del state["learner"]["modules"]["p1"]
    return "learner.modules must be a dict with this algorithm's modules"


def callbacks_list(state, tensors):
    state["callbacks"] = []
    return "callbacks must be a dict"


EVERY_ALGORITHM = [weight_nan, _slot("exp_avg", lambda m: m * math.nan), optimizer_eps,
                   learner_rng, _learner_value("num_updates", -1), runner_rng, betas_missing,
                   slot_missing]
SINGLE_AGENT = [env_state_nan, runner_rng_missing, runner_episodes_missing]
OWN = {"ppo": [_slot("exp_avg_sq", lambda m: -m - 1), torch_rng_float, env_method,
               running_obs_nan, filter_mean_nan, merged_filter_variance_negative, evaluation_steps,
               callbacks_list, custom_metric,
               _learner_value("curr_kl_coeff", math.nan)],
       "multi_agent_ppo": [_learner_value("curr_kl_coeff", -1.0), module_returns_nan,
                           param_groups_str, module_state_missing],
       "dqn": [_learner_value("last_target_update_ts", -1), _replay_slot("dqn", "replay_buffer", [])],
       "sac": [_replay_slot("dqn", "replay_buffer", [])],
       "apex_dqn": [_learner_value("last_target_update_ts", -1),
                    _replay_slot("apex_dqn", "replay_shards", [0])]}
# Each algorithm's edits, then None: it trains on, and restores the unedited checkpoint.
CASES = [(name, edit) for name in CONFIGS
         for edit in EVERY_ALGORITHM + (SINGLE_AGENT if name != "multi_agent_ppo" else [])
         + OWN.get(name, []) + [None]]


def _edit(checkpoint: Path, edit: Callable[[dict, dict], str]) -> str:
    """Apply `edit` to state.json and learner.pt and record their SHA-256s; return its field."""
    version = _version(checkpoint)
    state = json.loads((version / STATE_JSON).read_text())
    tensors = torch.load(version / "learner.pt", weights_only=True)
    field = edit(state, tensors)
    (version / STATE_JSON).write_text(json.dumps(state))
    torch.save(tensors, version / "learner.pt")
    digests = {name: hashlib.sha256((version / name).read_bytes()).hexdigest()
               for name in (STATE_JSON, "learner.pt")}
    _edit_manifest(checkpoint, lambda manifest: manifest["files"].update(digests))
    return field


def _assert_same(before, after, where="state") -> None:
    """Equal plain data, and equal tensors (NaN equal to NaN)."""
    if isinstance(before, torch.Tensor):
        assert torch.equal(before, after) or torch.allclose(before, after, equal_nan=True), where
    elif isinstance(before, dict):
        assert set(before) == set(after), where
        for key in before:
            _assert_same(before[key], after[key], f"{where}[{key!r}]")
    elif isinstance(before, list | tuple):
        assert len(before) == len(after), where
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            _assert_same(b, a, f"{where}[{i}]")
    else:
        assert before == after or before != before and after != after, where


@pytest.mark.parametrize("name, edit", CASES,
                         ids=[f"{name}-{edit.__name__ if edit else 'then_trains'}"
                              for name, edit in CASES])
def test_a_refused_restore_changes_nothing_and_training_goes_on(running, name, edit, tmp_path):
    algo = running(name)
    if edit is None:
        iteration = algo.iteration
        assert algo.train()["training_iteration"] == iteration + 1
        algo.restore_from_path(algo.checkpoint)
        assert algo.iteration == 2
        return
    path = _copy(algo.checkpoint, tmp_path / "edited")
    field = _edit(path, edit)
    before = algo.get_state()
    with pytest.raises(CheckpointError) as error:
        algo.restore_from_path(path)
    message = str(error.value)
    file = "learner.pt" if field.startswith("learner.pt") else STATE_JSON
    assert str(path) in message and file in message and field in message, message
    _assert_same(before, algo.get_state())  # counters, weights, optimizer, RNGs, buffers, filters
