"""What an Algorithm's checkpoint holds (`Algorithm.get_state` / `set_state`), and the checks a
restore makes before it changes anything: does the checkpoint fit this algorithm, and are its
values sound (each part's owner checks its own with `check_state`): a misfit changes nothing."""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from rlcourse.algorithms.evaluation import build_eval_env_runner_group
from rlcourse.utils.checkpoint_contents import config_to_json, names_class
from rlcourse.utils.checkpoints import STATE_JSON, CheckpointError
from rlcourse.utils.imports import class_path
from rlcourse.utils.state_values import check_counter, is_count

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm import Algorithm

LEARNER_PT = "learner.pt"
# The learner's state that goes to learner.pt (APPO's learner has a target network too).
TENSORS = ("module", "optimizer", "torch_rng", "target_module")
# The bit generators a saved numpy Generator may name (serialization.from_plain builds it).
BIT_GENERATORS = {"PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"}
FIX_MODEL = ("Build the algorithm with the checkpoint's model_config, or use "
             "Algorithm.from_checkpoint.")
ENV_SETTINGS = ("env", "env_config", "observation_space", "action_space")  # what shapes a network


def learner_field(key: str) -> str:
    """Where the learner state's `key` is in a checkpoint, for errors: its file and field."""
    return f"{LEARNER_PT}: {key}" if key in TENSORS else f"{STATE_JSON}: learner.{key}"


def algorithm_state(algo: "Algorithm") -> tuple[dict[str, Any], dict[str, Any]]:
    """(JSON-compatible state, {"learner.pt": tensors}) of everything a continued run needs."""
    learner_state = algo.learner_group.get_state()
    tensors = {name: learner_state.pop(name) for name in TENSORS if name in learner_state}
    group, eval_group = algo.env_runner_group, algo.eval_env_runner_group
    state = {
        "config": config_to_json(algo.config),
        "algorithm": {"iteration": algo.iteration,
                      "num_env_steps_trained_lifetime": algo.num_env_steps_trained_lifetime,
                      "weights_seq_no": group.weights_seq_no,
                      "env_to_module_state": group.env_to_module_state,
                      **algo.episode_stats.get_state()},
        "learner": learner_state,
        "env_runners": group.get_state(),
        # Evaluation envs go on too, so a resumed run evaluates (and picks a best) as before.
        "evaluation_env_runners": eval_group.get_state() if eval_group else None,
        "callbacks": algo.callbacks.get_state() if algo.callbacks else {},
    }
    return state, {LEARNER_PT: tensors}


def restore_algorithm_state(algo: "Algorithm", state: dict[str, Any], tensors: dict[str, Any],
                            check_own: Callable[[dict[str, Any]], None] | None = None) -> None:
    """Check `algorithm_state`'s result against `algo` (and with `check_own`), then apply it."""
    evaluation = state.get("evaluation_env_runners")  # None: not evaluated yet when saved
    eval_group = algo.eval_env_runner_group
    if evaluation is not None and eval_group is None and algo.config.evaluation_interval:
        eval_group = build_eval_env_runner_group(algo)  # built on first use otherwise; needed now
    try:
        _check_fits(algo, state, tensors)
        learner_state = {**state["learner"], **tensors[LEARNER_PT]}
        algo.learner_group.check_state(learner_state, learner_field)
        try:
            _check_values(algo, state, eval_group, check_own)
        except CheckpointError as e:
            raise CheckpointError(f"{STATE_JSON}: {e}") from None
    except BaseException:
        if eval_group is not algo.eval_env_runner_group:
            eval_group.stop()  # a refused restore leaves the algorithm as it was
        raise
    algo.eval_env_runner_group = eval_group
    counters = state["algorithm"]
    algo.iteration = counters["iteration"]
    algo.num_env_steps_trained_lifetime = counters["num_env_steps_trained_lifetime"]
    algo.episode_stats.set_state(counters)
    algo.learner_group.set_state(learner_state)
    algo.env_runner_group.set_state(state["env_runners"])
    if algo.callbacks:
        algo.callbacks.set_state(state.get("callbacks", {}))  # {}: saved before callbacks had state
    if evaluation is not None and eval_group is not None:
        eval_group.set_state(evaluation)
    algo.sync_env_runner_weights(weights_seq_no=counters["weights_seq_no"],  # None: none saved
                                 env_to_module_state=counters.get("env_to_module_state"))


def _shapes(tensors: dict[str, Any]) -> dict[str, tuple]:
    return {key: tuple(getattr(value, "shape", ())) for key, value in tensors.items()}


def _short(value: Any) -> str:
    """A setting for an error, a space in a few characters: Box(4,), Discrete(2) (as saved or not)."""
    if isinstance(value, dict) and value.get("__space__") in ("Box", "Discrete"):
        return (f"Box{np.shape(value.get('low'))}" if value["__space__"] == "Box"
                else f"Discrete({value.get('n')})")
    return f"Box{value.shape}" if isinstance(value, gym.spaces.Box) else repr(value)


def _check_network(algo: "Algorithm", config: dict[str, Any], saved_weights: dict,
                   weights: dict) -> None:
    """Refuse a checkpoint whose weights have other shapes, blaming its env if that differs."""
    saved, current = _shapes(saved_weights), _shapes(weights)
    if saved == current:
        return
    name = next(key for key in [*saved, *current] if saved.get(key) != current.get(key))
    weight = (f"its first differing weight {name!r} is {saved.get(name, 'missing')} in the "
              f"checkpoint, {current.get(name, 'missing')} here")
    here = config_to_json(algo.config)
    envs = [f"config.{key} is {_short(config.get(key))} in the checkpoint, "
            f"{_short(here.get(key))} here"
            for key in ENV_SETTINGS if config.get(key) != here.get(key)]
    if not envs:
        raise CheckpointError(
            f"The checkpoint's network differs from this algorithm's: {weight}. " + FIX_MODEL)
    spaces = (f" (this algorithm's module sees {_short(algo.observation_space)} observations and "
              f"{_short(algo.action_space)} actions)" if algo.observation_space else "")
    raise CheckpointError(
        f"The checkpoint was trained on another env: {'; '.join(envs)}{spaces}, so {weight}. "
        "Restore it into an algorithm on the checkpoint's env, or use "
        "Algorithm.from_checkpoint(path), which builds one.")


def _check_fits(algo: "Algorithm", state: dict[str, Any], tensors: dict[str, Any]) -> None:
    """What a restore could fail on halfway: another algorithm, a missing part, other modules,
    another network (the values: Learner.check_state; the sub-envs: EnvRunner.check_state)."""
    name = str(state.get("config", {}).get("config_class", ""))
    if not names_class(name, type(algo.config)):
        raise CheckpointError(
            f"The checkpoint is of {name!r}, this algorithm's config is "
            f"{class_path(type(algo.config))!r}: restore it into an algorithm built from that "
            "config, or use Algorithm.from_checkpoint(path), which builds it.")
    missing = [key for key in ("algorithm", "learner", "env_runners") if key not in state]
    missing += [] if LEARNER_PT in tensors else [LEARNER_PT]
    if missing:
        raise CheckpointError(f"The checkpoint is incomplete: it has no {', '.join(missing)}.")
    _check_bit_generators(state)
    saved, current = {**state["learner"], **tensors[LEARNER_PT]}, algo.learner_group.get_state()
    if set(saved) != set(current):
        raise CheckpointError(f"The checkpoint's learner state has {sorted(saved)}, this "
                              f"algorithm's learner has {sorted(current)}.")
    if not isinstance(saved["module"], dict) or not isinstance(saved["optimizer"], dict):
        raise CheckpointError(f"{LEARNER_PT}: module and optimizer must be dicts, as torch saves "
                              "them.")
    optimizers = [saved["optimizer"]]
    if "param_groups" not in current["optimizer"]:  # multi-agent: one optimizer per module
        if set(saved["optimizer"]) != set(current["optimizer"]):
            raise CheckpointError(
                f"The checkpoint has modules {sorted(saved['optimizer'])}, this algorithm has "
                f"modules {sorted(current['optimizer'])}: build it with the checkpoint's "
                "config.multi_agent(policies=...), or use Algorithm.from_checkpoint.")
        optimizers = list(saved["optimizer"].values())
    for optimizer in optimizers:  # their values: Learner.check_state
        if not (isinstance(optimizer, dict) and isinstance(optimizer.get("state"), dict)
                and isinstance(optimizer.get("param_groups"), list)
                and all(isinstance(g, dict) and isinstance(g.get("params"), list)
                        for g in optimizer["param_groups"])):
            raise CheckpointError("learner.pt: an optimizer's state is not torch's state_dict (a "
                                  "dict of param_groups, each with a list of params, and state).")
    _check_network(algo, state["config"], saved["module"], current["module"])


def _check_bit_generators(value: Any) -> None:
    """Refuse random-generator states that name anything but a numpy bit generator."""
    if isinstance(value, dict):
        if "__generator__" in value:
            state = value["__generator__"]
            name = state.get("bit_generator") if isinstance(state, dict) else None
            if name not in BIT_GENERATORS:
                raise CheckpointError(f"The checkpoint: a random generator state names "
                                      f"bit_generator {name!r}; expected one of "
                                      f"{sorted(BIT_GENERATORS)}.")
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            _check_bit_generators(item)


def _check_values(algo: "Algorithm", state: dict[str, Any], eval_group: Any,
                  check_own: Callable[[dict[str, Any]], None] | None) -> None:
    """The values of state.json: the counters and model_config here, as no part owns them; the
    rest by each part's owner (`check_state`), and a subclass's part by `check_own`."""
    counters = state["algorithm"]
    if not isinstance(counters, dict):
        raise CheckpointError("algorithm is not a dict.")
    for key in ("iteration", "num_env_steps_trained_lifetime"):
        check_counter(counters.get(key), f"algorithm.{key}")
    seq_no = counters.get("weights_seq_no")
    if seq_no is not None and not (is_count(seq_no) or seq_no == -1):
        raise CheckpointError(f"algorithm.weights_seq_no is {seq_no!r}; expected an int >= -1.")
    for group in ("env_runners", "evaluation_env_runners"):  # each runner checks its own state
        if not isinstance(state.get(group) or [], list):  # evaluation's: None before it ran
            raise CheckpointError(f"{group} must be a list of runner states.")
    algo.episode_stats.check_state(counters, "algorithm")
    if algo.env_to_module is not None:  # the merged statistics the runners are sent
        algo.env_to_module.check_state(counters.get("env_to_module_state"),
                                       "algorithm.env_to_module_state")
    saved, current = (state["config"].get("model_config"),
                      config_to_json(algo.config).get("model_config"))
    if isinstance(saved, dict):  # else a custom class's settings: its weights' shapes are checked
        for key in sorted(saved.keys() & current.keys()):  # an activation changes no shape
            if saved[key] != current[key]:
                raise CheckpointError(f"config.model_config[{key!r}] is {saved[key]!r} in the "
                                      f"checkpoint, {current[key]!r} here. " + FIX_MODEL)
    algo.env_runner_group.check_state(state["env_runners"], "env_runners")
    if state.get("evaluation_env_runners") is not None and eval_group is not None:
        eval_group.check_state(state["evaluation_env_runners"], "evaluation_env_runners")
    if algo.callbacks:
        try:
            algo.callbacks.check_state(state.get("callbacks", {}))
        except ValueError as e:  # CheckpointError too
            raise CheckpointError(f"callbacks {e}") from None
    if check_own is not None:
        check_own(state)
