"""AlgorithmConfig.validate(): a bad shared setting fails at build time naming the setting and the fix
(tables of ranges, then a function per setter); algorithms add theirs (PPOConfig.validate)."""

import copy
import math
import numbers
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from rlcourse.algorithms.evaluation_config import check_evaluation
from rlcourse.callbacks.callbacks import Callbacks, callbacks_problem, overrides_episode_hooks
from rlcourse.core.rl_module.default_model_config import check_model_config
from rlcourse.core.rl_module.multi_rl_module_spec import check_multi_agent_settings
from rlcourse.env.registry import env_name, probe_spaces
from rlcourse.utils.validation import fail

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig

PLACEMENT_STRATEGIES = (None, "PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")
INF = float("inf")


# -- the checks an algorithm's own validate() uses too (PPOConfig.validate, ...) -----------------

def is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def env_spaces(config: "AlgorithmConfig") -> tuple[gym.Space, gym.Space]:
    """(observation space, action space): probed from the env, or the config's own for envs that
    run outside Ray (env None: external simulators, rlcourse/env/external/)."""
    if config.env is None:
        return config.observation_space, config.action_space
    return probe_spaces(config.get_env_creator(), config.env_config, env_name(config.env))


def is_number(value: Any) -> bool:
    """A finite real number, not a bool: inf and NaN break training."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def check_int(config: "AlgorithmConfig", setting: str, minimum: int) -> None:
    value = getattr(config, setting)
    if not is_int(value) or value < minimum:
        fail(config, setting, f"use a whole number >= {minimum}.")


def check_bool(config: "AlgorithmConfig", setting: str, meaning: str) -> None:
    if not isinstance(getattr(config, setting), bool):
        fail(config, setting, f"use {meaning}.")


def check_number(config: "AlgorithmConfig", setting: str, low: float, high: float = INF,
                 low_open: bool = False, hint: str = "") -> None:
    value = getattr(config, setting)
    if not (is_number(value) and (value > low if low_open else value >= low) and value <= high):
        bracket = "(" if low_open else "["
        span = f"{'>' if low_open else '>='} {low}" if high == INF else f"in {bracket}{low}, {high}]"
        fail(config, setting, f"use a finite number {span}. {hint}".rstrip())


# -- the settings every algorithm shares ---------------------------------------------------------

# setting: the smallest whole number it takes
WHOLE_NUMBERS = {
    "num_env_runners": 0, "num_envs_per_env_runner": 1, "rollout_fragment_length": 1,
    "max_requests_in_flight_per_env_runner": 1, "num_learners": 0,
    "train_batch_size_per_learner": 1, "minibatch_size": 1, "num_epochs": 1,
    "evaluation_interval": 1, "evaluation_duration": 1, "evaluation_num_env_runners": 0,
    "max_num_env_runner_restarts": 0, "num_consecutive_env_runner_failures_tolerance": 1,
    "num_consecutive_sub_env_failures_tolerance": 1, "metrics_num_episodes_for_smoothing": 1,
    "output_max_rows_per_file": 1}
# setting: (low, high, whether low itself is refused, hint)
NUMBERS = {
    "num_cpus_per_env_runner": (0, INF, False, "Fractions such as 0.5 let several runners share "
                                "one core."),
    "num_gpus_per_env_runner": (0, INF, False, ""),
    "sample_timeout_s": (0.0, INF, True, "Seconds a runner may take for one sample request."),
    "num_cpus_for_main_process": (0, INF, False, ""),
    "num_cpus_per_learner": (0, INF, False, ""), "num_gpus_per_learner": (0, INF, False, ""),
    "gamma": (0.0, 1.0, False, ""), "grad_clip": (0.0, INF, True, "Or None for no clipping."),
    "env_runner_health_probe_timeout_s": (0.0, INF, True, "Seconds a restarted runner has to "
                                          "answer its health probe.")}
# settings that may also be left unset (this value), which skips their check
UNSET = {"rollout_fragment_length": "auto", "minibatch_size": None, "evaluation_interval": None,
         "output_max_rows_per_file": None, "grad_clip": None}
# setting: what it takes
BOOLS = {"explore": "True (sample actions) or False (greedy actions)",
         "evaluation_parallel_to_training": "True (evaluate on the evaluation runners while "
                                            "training) or False",
         "restart_failed_env_runners": "True or False", "ignore_env_runner_failures": "True or False",
         "restart_failed_sub_environments": "True or False"}
# setting: (its allowed values, or the type it must have; the fix)
CHOICES = {
    "gym_env_vectorize_mode": (("SYNC", "ASYNC"), "use 'SYNC' (sub-envs step in the runner's "
                               "process) or 'ASYNC' (one subprocess per sub-env)."),
    "placement_strategy": (PLACEMENT_STRATEGIES, f"use one of {PLACEMENT_STRATEGIES}."),
    "evaluation_duration_unit": (("episodes", "timesteps"), "use 'episodes' or 'timesteps'."),
    "evaluation_config": (dict, "pass a dict of settings, e.g. {'explore': False}."),
    "model_config": (dict, "pass a dict, e.g. {'fcnet_hiddens': [64, 64]}."),
    "env_config": (dict, "pass a dict of keyword arguments for the env creator.")}


def validate_config(config: "AlgorithmConfig") -> None:
    """Check the settings every algorithm shares: the tables above, then the checks that relate
    settings, one function per setter."""

    def is_set(setting: str) -> bool:
        value, unset = getattr(config, setting), UNSET.get(setting)
        # Compared by type first: an array is "set" and fails its check by name.
        return setting not in UNSET or not (type(value) is type(unset) and value == unset)

    for setting, minimum in WHOLE_NUMBERS.items():
        if is_set(setting):
            check_int(config, setting, minimum)
    for setting, (low, high, low_open, hint) in NUMBERS.items():
        if is_set(setting):
            check_number(config, setting, low, high, low_open, hint)
    for setting in config.learning_rate_settings:
        check_number(config, setting, 0.0, low_open=True, hint="e.g. 3e-4.")
    for setting, meaning in BOOLS.items():
        check_bool(config, setting, meaning)
    for setting, (allowed, fix) in CHOICES.items():
        value = getattr(config, setting)
        if not (isinstance(value, allowed) if isinstance(allowed, type) else value in allowed):
            fail(config, setting, fix)
    if config.seed is not None and not (is_int(config.seed) and 0 <= config.seed < 2**32):
        fail(config, "seed", "use a whole number in [0, 2**32 - 1] (numpy's legacy seeds; runners "
             "add offsets to it), or None for an unseeded run.")
    for check in (_check_environment, _check_env_runners, _check_callbacks, _check_learners,
                  _check_rl_module, _check_evaluation, _check_multi_agent, _check_offline_data):
        check(config)


def _check_evaluation(config: "AlgorithmConfig") -> None:
    """evaluation()'s settings (evaluation_config.py), once they differ from AlgorithmConfig's."""
    if config.evaluation_config != {"explore": False} or config.evaluation_parallel_to_training:
        check_evaluation(config)


def _check_environment(config: "AlgorithmConfig") -> None:
    for name in ("observation_space", "action_space"):
        if getattr(config, name) is not None and not isinstance(getattr(config, name), gym.Space):
            fail(config, name, "pass a gymnasium space, e.g. gymnasium.spaces.Discrete(2).")
    external = config.env_runner_cls is not None and None not in (config.observation_space,
                                                                  config.action_space)
    if config.env is None and not external:
        fail(config, "env", "set an environment, e.g. config.environment('CartPole-v1') (or, for "
             "envs outside Ray, its observation_space and action_space and an env_runner_cls).")
    if config.env is None and (config.evaluation_interval or config.evaluation_num_env_runners):
        fail(config, "evaluation_interval", "evaluation builds the env, and this config has none "
             "(its envs run outside Ray): leave evaluation unset, or set environment(env=...).")
    try:
        if config.env is not None:
            config.get_env_creator()
    except ValueError as e:
        fail(config, "env", str(e))
    for key, value in config.env_config.items():
        try:
            copy.deepcopy(value)  # as build_algo() does; runner actors get a pickled copy
        except Exception as e:
            fail(config, "env_config", f"its {key!r} value cannot be copied ({type(e).__name__}: "
                 f"{e}), and every EnvRunner gets a copy. Pass what the env needs to make it (a "
                 f"path, a number) and create the {type(value).__name__} in the env's __init__.")
    if config.clip_rewards is not None:  # (None: not configured, nothing to check)
        from rlcourse.connectors.clip_rewards import check_clip_rewards
        if problem := check_clip_rewards(config.clip_rewards):
            fail(config, "clip_rewards", problem)


def _check_env_runners(config: "AlgorithmConfig") -> None:
    from rlcourse.env.env_runner import EnvRunner

    for setting, base, fix in (
            ("env_runner_cls", EnvRunner, "pass an EnvRunner subclass, e.g. rlcourse.env.external."
             "env_runner_server_for_external_inference.EnvRunnerServerForExternalInference."),
            ("callbacks_class", Callbacks, "pass a subclass of rlcourse.Callbacks.")):
        value = getattr(config, setting)
        if value is not None and not (isinstance(value, type) and issubclass(value, base)):
            fail(config, setting, fix)
    if missing := getattr(config.env_runner_cls, "__abstractmethods__", None):
        fail(config, "env_runner_cls", f"{config.env_runner_cls.__name__} leaves EnvRunner's "
             f"{', '.join(sorted(missing))} unwritten (see rlcourse/env/env_runner.py): write them.")
    if config.env_runner_cls is not None:
        config.env_runner_cls.validate_config(config)
    custom = config.custom_resources_per_env_runner
    if not (isinstance(custom, dict) and all(isinstance(k, str) and is_number(v) and v >= 0
                                             for k, v in custom.items())):
        fail(config, "custom_resources_per_env_runner", "pass a dict of resource name -> amount, "
             "e.g. {'worker-node': 0.5}.")
    if config.placement_strategy and not (config.num_cpus_per_env_runner > 0
                                          or any(custom.values())):
        fail(config, "placement_strategy", "a placement group needs each runner to reserve "
             "something: set num_cpus_per_env_runner > 0 (e.g. 0.5).")
    if config.env_to_module_connector is not None and not callable(config.env_to_module_connector):
        fail(config, "env_to_module_connector", "pass a function of the env that returns the "
             "connectors, as in RLlib: lambda env: MeanStdFilter().")
    if config.learner_connector is not None and not callable(config.learner_connector):
        fail(config, "learner_connector", "pass a function of the spaces that returns the connector, "
             "as in RLlib: lambda obs_space, act_space: FrameStackingLearner(num_frames=4).")


def _check_callbacks(config: "AlgorithmConfig") -> None:
    if config.callbacks_class is not None and (problem := callbacks_problem(config.callbacks_class)):
        fail(config, "callbacks_class", problem)


def _check_learners(config: "AlgorithmConfig") -> None:
    if config.minibatch_size is not None and (config.minibatch_size
                                              > config.train_batch_size_per_learner):
        fail(config, "minibatch_size", f"it is larger than train_batch_size_per_learner="
             f"{config.train_batch_size_per_learner}; use a minibatch_size <= the batch.")


def check_episode_chunks(config: "AlgorithmConfig", fragment: int | None = None) -> None:
    """For algorithms whose learners get whole episode chunks (PPO, IMPALA: learner_group.py's
    shard_episodes): fewer chunks per iteration than num_learners leave a learner with nothing.
    Each episode limit (a gymnasium id's max_episode_steps) ends a chunk, and so does each sample."""
    n, total = config.num_learners, config.total_train_batch_size
    if n <= 1:
        return
    spec = gym.registry.get(config.env) if isinstance(config.env, str) else None
    limit = spec.max_episode_steps if spec else None  # (None: a class, or rlcourse's registry)
    if fragment is None:  # PPO: each sub-env samples its share of the batch at once
        sub_envs = max(1, config.num_env_runners) * config.num_envs_per_env_runner
        per_sub_env = -(-total // sub_envs)
        chunks = sub_envs * (-(-per_sub_env // limit) if limit else 1)
        steps = f"{per_sub_env} steps in each of {sub_envs} sub-env(s)"
        fix = (f"more sub-envs (num_env_runners x num_envs_per_env_runner >= {n}, e.g. config."
               f"env_runners(num_envs_per_env_runner={n}))"
               + (", a larger train_batch_size_per_learner" if limit else ""))
    else:  # IMPALA: requests of `fragment` steps per sub-env fill the batch
        chunks = max(config.num_envs_per_env_runner, -(-total // min(fragment, limit or fragment)))
        steps = f"{total} steps sampled {fragment} per sub-env and request"
        fix = (f"a rollout_fragment_length <= {total // n} (config.env_runners("
               "rollout_fragment_length=...))")
    if chunks < n:
        episodes = f"episodes of up to {limit} steps" if limit else "episodes that outlast the batch"
        fail(config, "num_learners", f"the {n} learners each get whole episode chunks, and {steps} "
             f"may give only {chunks} per iteration ({episodes}), leaving a learner with no steps. "
             f"Use {fix} or fewer learners.")


def _check_offline_data(config: "AlgorithmConfig") -> None:
    if config.output_write_episodes is not False:
        fail(config, "output_write_episodes", "rlcourse records one row per step in RLlib's "
             "columns (RLlib's output_write_episodes=False); packed episodes are not supported.")
    if config.output_compress_columns not in ([], ()):
        fail(config, "output_compress_columns", "rlcourse writes plain columns only: a compressed "
             "column would be a pickle, and reading a pickle can run any code. Leave it [].")
    if config.output is not None and config.is_multi_agent:
        fail(config, "output", "recording is single-agent for now (as in RLlib): leave output "
             "None for a multi_agent(...) config.")


def _check_rl_module(config: "AlgorithmConfig") -> None:
    if config.rl_module_class is None:
        check_model_config(config)  # the default modules' settings (a class of one's own reads any)
        return
    from rlcourse.core.rl_module.rl_module import RLModule  # torch: only for a class of one's own
    if not (isinstance(config.rl_module_class, type)
            and issubclass(config.rl_module_class, RLModule)):
        fail(config, "rl_module_class", "pass a subclass of rlcourse.RLModule.")


def _check_multi_agent(config: "AlgorithmConfig") -> None:
    if not config.is_multi_agent:
        if config.policy_mapping_fn is not None or config.policies_to_train is not None:
            fail(config, "policies", "set policies too, e.g. policies={'main', 'opponent'}: "
                 "policy_mapping_fn and policies_to_train name its module ids.")
        return
    if not config.algo_class.supports_multi_agent:
        fail(config, "policies", f"{config.algo_class.__name__} trains one module in rlcourse; "
             "multi-agent training is built for PPO: PPOConfig().multi_agent(policies=..., "
             "policy_mapping_fn=...).")
    check_multi_agent_settings(config, fail)
    for setting in ("env_to_module_connector", "clip_rewards", "restart_failed_sub_environments"):
        if getattr(config, setting) not in (None, False):
            fail(config, setting, "rlcourse's MultiAgentEnvRunner has no connectors, reward "
                 f"clipping or sub-env restarts: leave {setting} unset for a multi-agent config."
                 + (" For Discrete or Dict observations, give the agents Box ones (one-hot in the "
                    "env) or pass rl_module_class." if setting == "env_to_module_connector" else ""))
    if config.callbacks_class is not None and overrides_episode_hooks(config.callbacks_class):
        fail(config, "callbacks_class", "rlcourse's MultiAgentEnvRunner calls no episode hooks "
             "(on_episode_start/step/end): for a multi-agent config, use on_sample_end.")
