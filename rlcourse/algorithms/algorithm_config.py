"""AlgorithmConfig: every setting of a run, set with RLlib's fluent methods (config_setters.py) and
checked by `validate()`, as one chain: `PPOConfig().environment("CartPole-v1").build_algo()`."""

import copy
import math
from typing import TYPE_CHECKING, Any

from rlcourse.algorithms import config_setters, config_validation
from rlcourse.algorithms.config_setters import RENAMED_SETTERS, NotProvided, refuse, setter
from rlcourse.algorithms.registry import register_with_tune
from rlcourse.core.rl_module import multi_rl_module_spec, rl_module_spec
from rlcourse.core.rl_module.default_model_config import DEFAULT_MODEL_CONFIG
from rlcourse.core.rl_module.numpy_mlp import ActionHead, default_action_head
from rlcourse.core.rl_module.rl_module_spec import RLModuleSpec, settings_from_spec
from rlcourse.env import registry
from rlcourse.tune.search_space import check_search_spaces, contains_search_space
from rlcourse.utils.imports import class_path
from rlcourse.utils.validation import ConfigError, setter_of

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm import Algorithm
    from rlcourse.core.learner.learner import Learner
    from rlcourse.core.rl_module.multi_rl_module_spec import MultiRLModuleSpec
    from rlcourse.env.registry import EnvCreator


# Every shared setting's default, by the setter that sets it (each algorithm's config adds its own).
DEFAULTS = {
    "environment": dict(env=None, env_config={},
                        clip_rewards=None,  # None/False, True (sign), c or (low, high)
                        observation_space=None, action_space=None),  # used when env=None (outside Ray)
    "env_runners": dict(num_env_runners=0, num_envs_per_env_runner=1,
                        rollout_fragment_length="auto", num_cpus_per_env_runner=1,
                        num_gpus_per_env_runner=0, gym_env_vectorize_mode="SYNC", explore=True,
                        sample_timeout_s=60.0, max_requests_in_flight_per_env_runner=1,
                        custom_resources_per_env_runner={},
                        env_to_module_connector=None,  # fn(env[, spaces, device]) -> connectors
                        env_runner_cls=None),  # None: SingleAgentEnvRunner / MultiAgentEnvRunner
    "resources": dict(num_cpus_for_main_process=1, placement_strategy=None),
    "learners": dict(num_learners=0, num_cpus_per_learner=1, num_gpus_per_learner=0),
    "training": dict(gamma=0.99, lr=3e-4, train_batch_size_per_learner=4000,
                     minibatch_size=128,  # None: the whole batch in one step
                     num_epochs=10, grad_clip=None, learner_connector=None),  # fn(spaces) -> connector
    "evaluation": dict(evaluation_interval=None, evaluation_duration=10,
                       evaluation_duration_unit="episodes", evaluation_config={"explore": False},
                       evaluation_num_env_runners=0, evaluation_parallel_to_training=False,
                       in_evaluation=False),  # RLlib's flag on evaluation configs: stats frozen
    "fault_tolerance": dict(restart_failed_env_runners=True, max_num_env_runner_restarts=1000,
                            num_consecutive_env_runner_failures_tolerance=5,
                            ignore_env_runner_failures=False, restart_failed_sub_environments=False,
                            num_consecutive_sub_env_failures_tolerance=10,
                            env_runner_health_probe_timeout_s=30.0),
    "reporting": dict(metrics_num_episodes_for_smoothing=100), "debugging": dict(seed=None),
    "rl_module": dict(model_config=None, rl_module_class=None), "callbacks": dict(callbacks_class=None),
    "multi_agent": dict(policies=None,  # None: the single-agent setup
                        policy_mapping_fn=None, policies_to_train=None),
    "offline_data": dict(input_=None,  # Parquet paths or a ray.data.Dataset (RLlib: "sampler")
                         input_read_method_kwargs={}, iter_batches_kwargs={},
                         materialize_data=False, prelearner_class=None,
                         dataset_num_iters_per_learner=None, output=None,
                         output_write_episodes=False,  # RLlib: True (episodes packed, msgpack)
                         output_compress_columns=[],  # RLlib: ["obs", "new_obs"], pickled
                         output_max_rows_per_file=None, output_write_remaining_data=False),
}


class AlgorithmConfig:
    """Settings shared by all algorithms; subclasses add their own `training()` arguments and name
    what they build (`algo_class`, `get_default_learner_class()`, ...), as RLlib's configs do."""

    default_model_config: dict = DEFAULT_MODEL_CONFIG  # rl_module(model_config=) changes keys
    learning_rate_settings: tuple[str, ...] = ("lr",)  # one per optimizer parameter group

    def __init__(self) -> None:
        register_with_tune()  # where Tune is imported: tune.Tuner("PPO", param_space=config)
        for settings in DEFAULTS.values():
            self.__dict__.update(copy.deepcopy(settings))
        self.model_config = copy.deepcopy(self.default_model_config)  # not DEFAULTS' None

    # -- what it builds, looked up when used (RLlib's names), so runners never import a Learner --

    @property
    def algo_class(self) -> type["Algorithm"]:
        """The Algorithm `build_algo()` builds; each algorithm's config returns its own."""
        raise NotImplementedError(f"{type(self).__name__} builds no algorithm: use e.g. PPOConfig().")

    def get_default_learner_class(self) -> type["Learner"]:
        """The Learner class: imported where learners run (it imports torch)."""
        raise NotImplementedError(f"{type(self).__name__} names no Learner class.")

    def get_default_prelearner_class(self) -> type | None:
        return None  # online algorithms; offline ones (MARWIL, BC, CQL) name their OfflinePreLearner

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """The module learners build when `rl_module_class` is None: PPO's and IMPALA's."""
        return RLModuleSpec(module_class=rl_module_spec.default_actor_critic_class(self.model_config))

    # -- fluent setters (config_setters.py) ------------------------------------------------------

    @setter
    def environment(self, env: Any = NotProvided, *, env_config: dict = NotProvided,
                    clip_rewards: Any = NotProvided, observation_space: Any = NotProvided,
                    action_space: Any = NotProvided) -> "AlgorithmConfig":
        """A gymnasium id, a `register_env` name or an env class; `clip_rewards`: connectors/;
        the spaces, for envs that run outside Ray (env/external/), with no `env` to build."""

    @setter
    def env_runners(self, *, num_env_runners: int = NotProvided,
                    num_envs_per_env_runner: int = NotProvided,
                    rollout_fragment_length: int | str = NotProvided,
                    num_cpus_per_env_runner: float = NotProvided,
                    num_gpus_per_env_runner: float = NotProvided,
                    gym_env_vectorize_mode: str = NotProvided, explore: bool = NotProvided,
                    sample_timeout_s: float = NotProvided, env_runner_cls: type | None = NotProvided,
                    max_requests_in_flight_per_env_runner: int = NotProvided,
                    custom_resources_per_env_runner: dict[str, float] = NotProvided,
                    env_to_module_connector: Any = NotProvided) -> "AlgorithmConfig":
        """How many runner actors, their sub-envs and resources. `sample_timeout_s`: a runner actor
        slower to answer is ended; the runner in this process checks it only between env steps, so
        an env.step that never returns hangs it (sample on runner actors to end one);
        `env_to_module_connector`: `fn(env)` -> connectors; `env_runner_cls`: e.g. env/external/'s."""
        if gym_env_vectorize_mode is not NotProvided:  # gymnasium's VectorizeMode, or "sync"
            mode = getattr(gym_env_vectorize_mode, "value", gym_env_vectorize_mode)
            return {"gym_env_vectorize_mode": mode.upper() if isinstance(mode, str) else mode}

    @setter
    def resources(self, *, num_cpus_for_main_process: float = NotProvided,
                  placement_strategy: str | None = NotProvided) -> "AlgorithmConfig":
        """Runners' placement (None: Ray's; "PACK", "SPREAD", ...); the CPUs a Tune trial reserves."""

    @setter
    def learners(self, *, num_learners: int = NotProvided, num_cpus_per_learner: float = NotProvided,
                 num_gpus_per_learner: float = NotProvided) -> "AlgorithmConfig":
        """0: one Learner in this process; N > 0: N data-parallel Learner actors (on CUDA with
        `num_gpus_per_learner`, often no faster for small networks: benchmarks/gpu_learner.py)."""

    @setter
    def training(self, *, gamma: float = NotProvided, lr: float = NotProvided,
                 train_batch_size_per_learner: int = NotProvided, minibatch_size: int = NotProvided,
                 num_epochs: int = NotProvided, grad_clip: float | None = NotProvided,
                 learner_connector: Any = NotProvided) -> "AlgorithmConfig":
        """Settings of the update; algorithm configs add their own (PPO: `lambda_`, ...)."""

    @setter
    def rl_module(self, *, model_config: dict = NotProvided, rl_module_class: type | None = NotProvided,
                  rl_module_spec: Any = NotProvided) -> "AlgorithmConfig":
        """The default MLP's `model_config` (fcnet_hiddens, fcnet_activation) or your own class; or
        RLlib's spelling of both: `rl_module_spec=RLModuleSpec(module_class=..., model_config=...)`."""
        settings = {}
        if rl_module_spec is not NotProvided:
            settings = settings_from_spec(rl_module_spec, also_given=(
                model_config, rl_module_class) != (NotProvided, NotProvided))
            model_config = settings.get("model_config", NotProvided)
        return {**settings, **config_setters.merge("model_config", model_config,
                                                   self.default_model_config)}

    @setter
    def evaluation(self, *, evaluation_interval: int | None = NotProvided,
                   evaluation_duration: int = NotProvided, evaluation_duration_unit: str = NotProvided,
                   evaluation_config: dict = NotProvided, evaluation_num_env_runners: int = NotProvided,
                   evaluation_parallel_to_training: bool = NotProvided,
                   in_evaluation: bool = NotProvided) -> "AlgorithmConfig":
        """Evaluate every `evaluation_interval` iterations (None: on evaluate()), here or on runners
        of its own, with `evaluation_config` over the settings (greedy; keys given are added)."""
        return config_setters.merge("evaluation_config", evaluation_config, self.evaluation_config)

    @setter
    def fault_tolerance(self, *, restart_failed_env_runners: bool = NotProvided,
                        max_num_env_runner_restarts: int = NotProvided,
                        num_consecutive_env_runner_failures_tolerance: int = NotProvided,
                        ignore_env_runner_failures: bool = NotProvided,
                        restart_failed_sub_environments: bool = NotProvided,
                        num_consecutive_sub_env_failures_tolerance: int = NotProvided,
                        env_runner_health_probe_timeout_s: float = NotProvided) -> "AlgorithmConfig":
        """What a runner actor that dies or hangs (env/env_runner_health.py) and a failing sub-env
        (env/sub_env_restarts.py) do; 5 consecutive failures end a run (RLlib: 100)."""

    @setter
    def reporting(self, *, metrics_num_episodes_for_smoothing: int = NotProvided) -> "AlgorithmConfig":
        """How many recent episodes `episode_return_mean` averages over."""

    @setter
    def debugging(self, *, seed: int | None = NotProvided) -> "AlgorithmConfig":
        """Seed envs, action sampling, weight init and minibatch shuffling."""

    @setter
    def callbacks(self, callbacks_class: type | None = NotProvided) -> "AlgorithmConfig":
        """A `rlcourse.Callbacks` subclass whose hooks run during training."""

    @setter
    def multi_agent(self, *, policies: Any = NotProvided, policy_mapping_fn: Any = NotProvided,
                    policies_to_train: Any = NotProvided) -> "AlgorithmConfig":
        """Modules (RLlib's policies): `policies`, ids or {id: None or RLModuleSpec}; `policy_mapping_fn(
        agent_id, episode, **kwargs)` -> an id; `policies_to_train`: ids, fn(id, batch) or None (all)."""

    @setter
    def offline_data(self, *, input_: Any = NotProvided, input_read_method_kwargs: dict = NotProvided,
                     iter_batches_kwargs: dict = NotProvided, materialize_data: bool = NotProvided,
                     prelearner_class: type | None = NotProvided,
                     dataset_num_iters_per_learner: int | None = NotProvided,
                     output: str | None = NotProvided, output_write_episodes: bool = NotProvided,
                     output_compress_columns: list[str] = NotProvided,
                     output_max_rows_per_file: int | None = NotProvided,
                     output_write_remaining_data: bool = NotProvided) -> "AlgorithmConfig":
        """`output`: runners also write what they sample there as Parquet (offline/), one row per step,
        plain columns; `input_`: Parquet paths or a ray.data.Dataset an offline algorithm reads."""
        if output is not NotProvided:
            from rlcourse.offline.offline_env_runner import OfflineSingleAgentEnvRunner
            return {"env_runner_cls": OfflineSingleAgentEnvRunner if output else None}

    @property
    def is_multi_agent(self) -> bool:  # whether multi_agent(policies=...) was set
        return self.policies is not None

    def get_multi_rl_module_spec(self, env: Any = None) -> "MultiRLModuleSpec":
        """`policies` with the spaces of the agents of `env` (default: one built here) mapped to each."""
        return multi_rl_module_spec.multi_rl_module_spec_for(self, env)

    @setter
    def framework(self, framework: str = "torch") -> "AlgorithmConfig":
        """RLlib's choice of deep-learning framework: torch only here."""
        if framework != "torch":
            raise ConfigError("framework", framework, "rlcourse's Learners and RLModules are "
                              "PyTorch: use framework(\"torch\"), or leave the call out.", "framework")

    def __getattr__(self, name: str) -> Any:
        """Only for names that are not attributes: RLlib's renamed setters say where they went."""
        if name in RENAMED_SETTERS:
            raise AttributeError(f"config.{name}() is RLlib's old setter (before its new API "
                                 f"stack); use config.{RENAMED_SETTERS[name]} instead.")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- derived values, copies and building ---------------------------------------------------

    @property
    def total_train_batch_size(self) -> int:
        return self.train_batch_size_per_learner * max(1, self.num_learners)

    def get_rollout_fragment_length(self) -> int:
        """Steps per sub-env per `sample()`; "auto" splits the train batch over all sub-envs."""
        if self.rollout_fragment_length != "auto":
            return int(self.rollout_fragment_length)
        sub_envs = max(1, self.num_env_runners) * self.num_envs_per_env_runner
        return math.ceil(self.total_train_batch_size / sub_envs)

    def get_num_minibatches_per_epoch(self) -> int:
        """The same for every learner, so that data-parallel learners take the same steps."""
        return 1 if self.minibatch_size is None else math.ceil(
            self.train_batch_size_per_learner / self.minibatch_size)

    def get_model_config(self) -> dict:
        """`model_config` plus the settings its module reads (RLlib's _model_config_auto_includes)."""
        return dict(self.model_config)

    def get_action_head(self, action_space: Any, worker_index: int = 0) -> ActionHead:
        """What turns the network's outputs into actions on runners (numpy_mlp.py); DQN, SAC: theirs."""
        return default_action_head(action_space)

    def get_env_creator(self) -> "EnvCreator":
        return registry.get_env_creator(self.env)

    validate = config_validation.validate_config  # raise naming the first bad setting and the fix

    def copy(self) -> "AlgorithmConfig":
        """A deep copy of the settings (`copy.deepcopy(self)` would probe `__getattr__`)."""
        (twin := object.__new__(type(self))).__dict__ = copy.deepcopy(self.__dict__)
        return twin

    def to_dict(self) -> dict:
        """All settings, plus `config_class` so `from_dict` rebuilds the type (Ray Tune's
        `param_space=config` calls it, so its search spaces are checked here)."""
        if contains_search_space(vars(self)):
            check_search_spaces(self)
        return {"config_class": class_path(type(self)), **copy.deepcopy(vars(self))}

    def update_from_dict(self, settings: dict) -> "AlgorithmConfig":
        """Set each `name: value` through its setter, checked and normalized as fluent calls are."""
        for name, value in settings.items():
            if (method := setter_of(self, name)) is None:
                refuse(self, "update_from_dict", name, value)
            getattr(self, method)(**{name: value})
        return self

    @staticmethod
    def from_dict(d: dict) -> "AlgorithmConfig":
        """The config `to_dict()` gave: its `config_class` with its settings."""
        d = dict(d)
        config = config_setters.config_class_named(d.pop("config_class", None), AlgorithmConfig)()
        if unknown := set(d) - set(vars(config)):
            raise ValueError(f"from_dict: unknown settings {sorted(unknown)} for "
                             f"{type(config).__name__}.")
        config.__dict__.update(copy.deepcopy(d))
        return config

    def build_algo(self) -> "Algorithm":
        """Validate, then build the Algorithm (starting Ray if remote actors are asked for)."""
        self.validate()
        return self.algo_class(self.copy())

    build = build_algo  # RLlib's older name, still in many guides
