"""Tuned examples: an algorithm's config, when to stop, and the mark a run must reach to pass.

A tuned example is a Python file (RLlib's new-stack style) that defines module-level `config` (an
AlgorithmConfig), `stop` and `pass_criteria`, or a YAML file in RLlib's older shape:

    cartpole-ppo:
      env: CartPole-v1
      run: PPO
      stop: {env_runners/episode_return_mean: 450, num_env_steps_sampled_lifetime: 200000}
      pass_criteria: {env_runners/episode_return_mean: 450}
      config: {num_env_runners: 2, lr: 0.001}

`env` and the config's `env_to_module_connector` may name a class as "module:Class" (e.g.
rlcourse.connectors.env_to_module:FlattenObservations, which is its own connector factory).
Keys are flattened result keys ("env_runners/episode_return_mean" reads
result["env_runners"]["episode_return_mean"]). Reaching ANY stop value stops a run; a run passes
when it reaches EVERY pass_criteria value. `load_tuned_example` checks all of it before any training,
so a typo fails in a second with the fix, not after an hour of training that never stops.
"""

import difflib
import importlib.util
import numbers
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.tune.search_space import check_search_spaces, contains_search_space
from rlcourse.utils.imports import import_attr
from rlcourse.utils.validation import ConfigError

ALGOS = {"ppo": "rlcourse.algorithms.ppo.ppo:PPOConfig",
         "impala": "rlcourse.algorithms.impala.impala:IMPALAConfig",
         "appo": "rlcourse.algorithms.appo.appo:APPOConfig",
         "dqn": "rlcourse.algorithms.dqn.dqn:DQNConfig",
         "sac": "rlcourse.algorithms.sac.sac:SACConfig"}

_EPISODE_STATS = ("episode_return_mean", "episode_return_min", "episode_return_max",
                  "episode_len_mean", "num_episodes", "num_episodes_lifetime",
                  "num_env_steps_sampled", "num_env_steps_sampled_lifetime",
                  "num_sub_env_restarts", "num_sub_env_restarts_lifetime")
# What Algorithm.train() returns for every algorithm (tests/test_tuned_examples.py compares these
# sets with real results, so a renamed or new key is caught there).
RESULT_KEYS = frozenset(
    [f"env_runners/{key}" for key in _EPISODE_STATS]
    + [f"env_runners/{key}" for key in ("num_healthy_env_runners", "num_env_runner_restarts",
                                        "num_env_runner_failures")]
    + ["training_iteration", "num_env_steps_sampled_lifetime", "num_env_steps_trained_lifetime",
       "num_env_steps_sampled_throughput", "num_env_steps_trained_throughput",
       "timers/training_iteration"]
    + [f"fault_tolerance/{key}" for key in ("num_healthy_workers", "num_remote_worker_restarts")]
    + ["learners/__all_modules__/num_env_steps_trained_lifetime"]
    + [f"learners/default_policy/{key}" for key in ("num_env_steps_trained",
                                                    "default_optimizer_learning_rate",
                                                    "gradients_default_optimizer_global_norm")])
_POLICY_GRADIENT_LOSSES = [f"learners/default_policy/{key}"
                           for key in ("entropy", "policy_loss", "vf_loss", "total_loss")]
_IMPALA_RESULT_KEYS = frozenset(_POLICY_GRADIENT_LOSSES + [
    "learner_queue/num_drops_lifetime", "learner_queue/size", "timers/sample_and_learn"]
    + [f"learners/default_policy/{key}" for key in (
        "mean_importance_ratio", "num_updates", "num_updates_lifetime", "policy_lag",
        "update_time_s")])
# What each algorithm adds, by the Algorithm class its config builds. (DQN's and SAC's learner keys
# appear once learning starts, after num_steps_sampled_before_learning_starts.)
ALGORITHM_RESULT_KEYS = {
    "PPO": frozenset(_POLICY_GRADIENT_LOSSES + [
        "learners/default_policy/mean_kl_loss", "learners/default_policy/vf_explained_var",
        "learners/default_policy/vf_loss_unclipped",
        "learners/__all_modules__/num_env_steps_trained", "timers/env_runner_sampling_timer",
        "timers/learner_update_timer", "timers/synch_weights"]),
    "IMPALA": _IMPALA_RESULT_KEYS,
    "APPO": _IMPALA_RESULT_KEYS | {"learners/default_policy/mean_kl_loss",
                                   "learners/default_policy/num_target_updates"},
    "DQN": frozenset([
        "env_runners/epsilon", "replay_buffer/num_env_steps_stored",
        "replay_buffer/num_episodes_stored", "timers/env_runner_sampling_timer",
        "timers/learner_update_timer", "timers/replay_buffer_add_data_timer", "timers/synch_weights"]
        + [f"learners/default_policy/{key}" for key in (
            "last_target_update_ts", "num_updates", "qf_loss", "qf_mean", "td_error_mean")]),
    "SAC": frozenset([
        "replay_buffer/num_env_steps_stored", "replay_buffer/num_episodes_stored",
        "timers/env_runner_sampling_timer", "timers/learner_update_timer",
        "timers/replay_buffer_add_data_timer", "timers/synch_weights"]
        + [f"learners/default_policy/{key}" for key in (
            "alpha_loss", "alpha_value", "last_target_update_ts", "log_alpha_value", "logps",
            "num_updates", "policy_loss", "qf_loss", "qf_mean", "target_entropy",
            "td_error_mean")]),
}
# Present when config.evaluation(evaluation_interval=...) evaluates during training.
EVALUATION_KEYS = frozenset([f"evaluation/env_runners/{key}" for key in _EPISODE_STATS]
                            + ["evaluation/num_healthy_env_runners",
                               "evaluation/evaluation_time_s"])
# What Ray Tune's Trainable.train() adds (ray/tune/trainable/trainable.py) that a stop dict can use;
# `rlcourse train --config` adds it too. (time_this_iter_s is one iteration, not a budget; the
# *_since_restore keys equal the totals outside resumed Tune trials; timesteps_total appears only
# when a result reports timesteps_this_iter, which rlcourse's do not.)
TUNE_RESULT_KEYS = frozenset(["time_total_s"])


class TunedExampleError(ValueError):
    """A tuned-example file (or a --set value) is malformed; the message names the file, the key
    and the fix."""


class _YAMLLoader(yaml.SafeLoader):
    """SafeLoader, but 1e-3 and 1E5 are floats (as in Python and YAML 1.2), not text."""


_YAMLLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+.0123456789"))


def read_yaml(text: str, where: str) -> Any:
    """`text` as YAML (with 1e-3 a float); a syntax error names `where` and the line."""
    try:
        return yaml.load(text, Loader=_YAMLLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise TunedExampleError(f"{where}{at}: not valid YAML ({getattr(e, 'problem', e)}); "
                                "fix its syntax.") from None


@dataclass
class TunedExample:
    """One tuned example, checked: its config validates and its keys are result keys."""

    name: str
    path: Path
    config: AlgorithmConfig
    stop: dict[str, float]
    pass_criteria: dict[str, float]

    @property
    def is_sweep(self) -> bool:
        """Whether its config holds Ray Tune search spaces: a sweep for `rlcourse tune`."""
        return contains_search_space(vars(self.config))


def result_value(result: dict[str, Any], key: str) -> Any:
    """The value of flattened `key` ("a/b/c") in a nested result dict; KeyError if absent."""
    value: Any = result
    for part in key.split("/"):
        value = value[part]
    return value


def result_keys(config: AlgorithmConfig) -> frozenset[str]:
    """Every flattened key the config's algorithm reports (under Tune or `rlcourse train`)."""
    algorithm = config.algo_class.__name__
    keys = RESULT_KEYS | ALGORITHM_RESULT_KEYS.get(algorithm, frozenset()) | TUNE_RESULT_KEYS
    if getattr(config, "use_kl_loss", False):  # PPO reports its KL coefficient only when it uses it
        keys |= {"learners/default_policy/curr_kl_coeff"}
    return keys | EVALUATION_KEYS if config.evaluation_interval else keys


def reached(result: dict[str, Any], marks: dict[str, float]) -> dict[str, bool]:
    """For each key, whether the result reached its mark (>=; NaN, before any episode, is not)."""
    return {key: bool(result_value(result, key) >= mark) for key, mark in marks.items()}


def load_tuned_example(path: str | Path) -> TunedExample:
    """Read a tuned example (.py or .yaml/.yml) and check it all before any training starts."""
    path = Path(path)
    if not path.is_file():
        raise TunedExampleError(f"{path}: no such file; pass the path of a .py or .yaml tuned "
                                "example, e.g. tuned_examples/ppo/cartpole_ppo.py.")
    if path.suffix == ".py":
        example = _load_python(path)
    elif path.suffix in (".yaml", ".yml"):
        example = _load_yaml(path)
    else:
        raise TunedExampleError(f"{path}: a tuned example is a .py or .yaml file.")
    try:  # a sweep's search spaces are checked value by value (rlcourse/tune/search_space.py)
        check_search_spaces(example.config) if example.is_sweep else example.config.validate()
    except ConfigError as e:
        raise TunedExampleError(f"{path}: {e}") from None
    for field in ("stop", "pass_criteria"):
        _check_marks(path, field, getattr(example, field), example.config)
    return example


def _load_python(path: Path) -> TunedExample:
    spec = importlib.util.spec_from_file_location(f"rlcourse_tuned_example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    names = vars(module)
    for field in ("config", "stop", "pass_criteria"):
        if field not in names:
            raise TunedExampleError(f"{path}: defines no `{field}`; a tuned example sets "
                                    "module-level config (an AlgorithmConfig), stop and "
                                    "pass_criteria (dicts of result key -> value).")
    if not isinstance(module.config, AlgorithmConfig):
        raise TunedExampleError(f"{path}: `config` is a {type(module.config).__name__}; set it to "
                                "an AlgorithmConfig, e.g. PPOConfig().environment('CartPole-v1').")
    return TunedExample(path.stem, path, module.config, module.stop, module.pass_criteria)


def _load_yaml(path: Path) -> TunedExample:
    document = read_yaml(path.read_text(), str(path))
    if not (isinstance(document, dict) and len(document) == 1):
        raise TunedExampleError(f"{path}: expected one top-level name holding env, run, stop, "
                                "pass_criteria and config (RLlib's tuned-example YAML shape).")
    (name, body), = document.items()
    if not isinstance(body, dict):
        raise TunedExampleError(f"{path}: {name!r} must hold a mapping with env, run, stop, "
                                "pass_criteria and config.")
    for field in ("env", "run", "stop", "pass_criteria"):
        if field not in body:
            raise TunedExampleError(f"{path}: {name!r} has no `{field}:`.")
    unknown = set(body) - {"env", "run", "stop", "pass_criteria", "config"}
    if unknown:
        raise TunedExampleError(f"{path}: unknown keys {sorted(unknown)} in {name!r}; it takes "
                                "env, run, stop, pass_criteria and config.")
    run = str(body["run"])
    if run.lower() not in ALGOS:
        raise TunedExampleError(f"{path}: `run: {run}` is no rlcourse algorithm; use one of "
                                f"{sorted(a.upper() for a in ALGOS)}.")
    config = import_attr(ALGOS[run.lower()])()
    env = body["env"]  # "module:Class" imports an env class, e.g. rlcourse.course.envs:GridWorld
    config.environment(_import(path, "env", env) if isinstance(env, str) and ":" in env else env)
    settings = dict(body.get("config") or {})
    factory = settings.get("env_to_module_connector")  # "module:Class", e.g. a connector class
    if isinstance(factory, str) and ":" in factory:
        settings["env_to_module_connector"] = _import(path, "env_to_module_connector", factory)
    try:  # each setting through its setter, which refuses unknown and old names with the fix
        config.update_from_dict(settings)
    except ConfigError as e:
        raise TunedExampleError(f"{path}: {e}") from None
    return TunedExample(str(name), path, config, body["stop"], body["pass_criteria"])


def _import(path: Path, field: str, name: str) -> Any:
    """import_attr("module:Class"), or the error naming the file, the field and the fix."""
    try:
        return import_attr(name)
    except (ImportError, AttributeError) as e:
        raise TunedExampleError(f"{path}: {field}: {name!r} cannot be imported ({e}); name a class "
                                "as 'module:Class', e.g. rlcourse.course.envs:GridWorld.") from None


def _check_marks(path: Path, field: str, marks: Any, config: AlgorithmConfig) -> None:
    """Every key of `stop` / `pass_criteria` must be a result key, and every value a number."""
    if not (isinstance(marks, dict) and marks):
        raise TunedExampleError(f"{path}: `{field}` must be a non-empty dict of result key -> "
                                "value, e.g. {'env_runners/episode_return_mean': 450}.")
    known = result_keys(config)
    for key, value in marks.items():
        if key not in known:
            close = difflib.get_close_matches(str(key), sorted(known), n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"use one of {sorted(known)}."
            raise TunedExampleError(f"{path}: {field} key {key!r} is not a result key that "
                                    f"{config.algo_class.__name__} reports; {hint}")
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            raise TunedExampleError(f"{path}: {field}[{key!r}] = {value!r}; use a number.")
