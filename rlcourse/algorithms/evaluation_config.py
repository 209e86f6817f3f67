"""What evaluation runs (RLlib's get_evaluation_config_object): the config with `evaluation_config`'s
settings over it, checked at validate() as a config of its own, so a bad override names itself."""

from typing import TYPE_CHECKING

from rlcourse.utils.validation import ConfigError, fail

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig


def _with(config: "AlgorithmConfig", overrides: dict) -> "AlgorithmConfig":
    """A shallow copy of `config` with `overrides` over it and no overrides of its own."""
    twin = object.__new__(type(config))
    twin.__dict__ = {**vars(config), **overrides, "evaluation_config": {}}
    return twin


def evaluation_config_of(config: "AlgorithmConfig") -> "AlgorithmConfig":
    """The config evaluation runs, validated (its settings may have changed since build_algo); its
    runners normalize with the training connectors' statistics, frozen (`in_evaluation`)."""
    config.validate()
    eval_config = _with(config, config.evaluation_config).copy()
    eval_config.in_evaluation = True
    return eval_config


def check_evaluation(config: "AlgorithmConfig") -> None:
    """evaluation()'s settings: `evaluation_config` names settings that evaluation uses, and the
    config with them passes validate() too (an error of the config's own is raised as it is)."""
    overrides = config.evaluation_config
    if unknown := set(overrides) - set(vars(config)):
        fail(config, "evaluation_config", f"unknown settings {sorted(unknown)}; use setting names "
             "such as 'explore' or 'num_envs_per_env_runner'.")
    if unused := sorted({"env", "num_env_runners"} & set(overrides)):
        fail(config, "evaluation_config", f"evaluation_config{unused} would be ignored: evaluation "
             "runs the training env (the module fits its spaces), on evaluation_num_env_runners "
             "runners. Leave them out; override 'env_config' to vary the env.")
    if config.evaluation_parallel_to_training and config.evaluation_num_env_runners == 0:
        fail(config, "evaluation_parallel_to_training", "it needs runner actors of its own: set "
             "evaluation_num_env_runners >= 1, or evaluation_parallel_to_training=False.")
    if config.evaluation_parallel_to_training and config.evaluation_interval is None:
        fail(config, "evaluation_parallel_to_training", "it needs an evaluation_interval (e.g. 1) "
             "saying which iterations to evaluate in.")
    if not overrides:  # (as in the copies validated below: no recursion)
        return
    try:
        _with(config, overrides).validate()
    except ConfigError as e:
        _with(config, {}).validate()  # the config's own error, if it has one
        where = (f"evaluation_config[{e.setting!r}]" if e.setting in overrides
                 else f"with these overrides, {e.setting}")
        fail(config, "evaluation_config", f"{where}: {e.fix}")
