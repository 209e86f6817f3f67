"""What an Algorithm's checkpoint holds (`Algorithm.get_state` / `set_state`): state.json has the
config, counters, learner, runners' env and connector state and callbacks; learner.pt the tensors.
A restore checks all of it first (checkpoint_checks.py: does it fit; then are its values sound:
checkpoint_values.py, and each part's owner, Learner, EnvRunner, EpisodeStats and Callbacks, its
own `check_state`), so a misfit or an edited value changes nothing."""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rlcourse.algorithms.checkpoint_checks import check_restorable, env_layers
from rlcourse.algorithms.checkpoint_values import (
    check_counters,
    check_model_config,
)
from rlcourse.algorithms.evaluation import build_eval_env_runner_group
from rlcourse.utils.checkpoint_contents import config_to_json
from rlcourse.utils.checkpoints import STATE_JSON, CheckpointError

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm import Algorithm

# The learner's state that goes to learner.pt (APPO's learner has a target network too).
TENSORS = ("module", "optimizer", "torch_rng", "target_module")
LEARNER_PT = "learner.pt"


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


def check_values(algo: "Algorithm", state: dict[str, Any], eval_group: Any,
                 check_own: Callable[[dict[str, Any]], None] | None) -> None:
    """The values of state.json: checkpoint_values.py's, each part's owner's (`check_state` of
    EpisodeStats, the connectors, the (evaluation) runners and Callbacks), and `check_own` (a
    subclass's part)."""
    try:
        check_counters(state)
        algo.episode_stats.check_state(state["algorithm"], "algorithm")
        if algo.env_to_module is not None:  # the merged statistics the runners are sent
            algo.env_to_module.check_state(state["algorithm"].get("env_to_module_state"),
                                           "algorithm.env_to_module_state")
        check_model_config(state["config"].get("model_config"),
                           config_to_json(algo.config).get("model_config"))
        algo.env_runner_group.check_state(state["env_runners"], "env_runners")
        if state.get("evaluation_env_runners") is not None and eval_group is not None:
            eval_group.check_state(state["evaluation_env_runners"], "evaluation_env_runners")
        if algo.callbacks:
            _check_callbacks(algo.callbacks, state.get("callbacks", {}))
        if check_own is not None:
            check_own(state)
    except CheckpointError as e:
        raise CheckpointError(f"{STATE_JSON}: {e}") from None


def _check_callbacks(callbacks: Any, state: Any) -> None:
    try:
        callbacks.check_state(state)
    except ValueError as e:  # CheckpointError too
        raise CheckpointError(f"callbacks {e}") from None


def restore_algorithm_state(algo: "Algorithm", state: dict[str, Any], tensors: dict[str, Any],
                            check_own: Callable[[dict[str, Any]], None] | None = None) -> None:
    """Check `algorithm_state`'s result against `algo` (and with `check_own`), then apply it."""
    evaluation = state.get("evaluation_env_runners")  # None: not evaluated yet when saved
    eval_group = algo.eval_env_runner_group
    if evaluation is not None and eval_group is None and algo.config.evaluation_interval:
        eval_group = build_eval_env_runner_group(algo)  # built on first use otherwise; needed now
    try:
        check_restorable(state, tensors, algo.config, algo.learner_group.get_state(),
                         algo.env_runner_group.foreach_env_runner(env_layers),
                         eval_group.foreach_env_runner(env_layers) if eval_group else None)
        algo.learner_group.check_state({**state["learner"], **tensors[LEARNER_PT]}, learner_field)
        check_values(algo, state, eval_group, check_own)
    except BaseException:
        if eval_group is not algo.eval_env_runner_group:
            eval_group.stop()  # a refused restore leaves the algorithm as it was
        raise
    algo.eval_env_runner_group = eval_group
    counters = state["algorithm"]
    algo.iteration = counters["iteration"]
    algo.num_env_steps_trained_lifetime = counters["num_env_steps_trained_lifetime"]
    algo.episode_stats.set_state(counters)
    algo.learner_group.set_state({**state["learner"], **tensors[LEARNER_PT]})
    algo.env_runner_group.set_state(state["env_runners"])
    if algo.callbacks:
        algo.callbacks.set_state(state.get("callbacks", {}))  # {}: saved before callbacks had state
    if evaluation is not None and eval_group is not None:
        eval_group.set_state(evaluation)
    algo.sync_env_runner_weights(weights_seq_no=counters["weights_seq_no"],  # None: none saved
                                 env_to_module_state=counters.get("env_to_module_state"))
