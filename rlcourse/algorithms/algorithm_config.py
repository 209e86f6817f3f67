"""AlgorithmConfig: every setting of a run, set with fluent methods named as in RLlib.

Each setter returns `self`, so a config reads as one chain:

    config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=2)
    algo = config.build_algo()

`validate()` checks every setting and raises an error that names the setting and the fix; the
Algorithm checks resources against the Ray cluster when it is built.
"""

import copy
import math
from typing import Any

from rlcourse.core.rl_module.default_model_config import DEFAULT_MODEL_CONFIG
from rlcourse.core.rl_module.numpy_mlp import ActionHead, default_action_head
from rlcourse.core.rl_module.rl_module_spec import settings_from_spec
from rlcourse.tune.search_space import check_search_spaces, contains_search_space
from rlcourse.utils.deprecation import RENAMED_SETTERS, checked_settings, refuse
from rlcourse.utils.imports import class_path, import_attr
from rlcourse.utils.validation import ConfigError, setter_of


class _NotProvided:
    """Marks a setter argument the caller left out (None can be a real value, e.g. seed=None)."""

    def __repr__(self) -> str:
        return "NotProvided"


NotProvided: Any = _NotProvided()



class AlgorithmConfig:
    """Settings shared by all algorithms; subclasses add their own `training()` arguments."""

    algo_class: str = ""  # "module:Class" of the Algorithm this config builds
    learner_class: str = ""  # "module:Class" of its Learner (imported only where learners run)
    # The module built when rl_module_class is None: torch on learners, its NumPy form on runners.
    default_rl_module_class = "rlcourse.core.rl_module.rl_module:DefaultActorCriticModule"
    # The default module's settings; rl_module(model_config=...) changes only the keys it names.
    default_model_config: dict = DEFAULT_MODEL_CONFIG

    def __init__(self) -> None:
        # environment()
        self.env: Any = None
        self.env_config: dict = {}
        self.clip_rewards: Any = None  # None/False, True (sign), c or (low, high): clip_rewards.py
        # env_runners()
        self.num_env_runners = 0
        self.num_envs_per_env_runner = 1
        self.rollout_fragment_length: int | str = "auto"
        self.num_cpus_per_env_runner: float = 1
        self.num_gpus_per_env_runner: float = 0
        self.gym_env_vectorize_mode = "SYNC"
        self.explore = True
        self.sample_timeout_s: float = 60.0
        self.max_requests_in_flight_per_env_runner = 1
        self.custom_resources_per_env_runner: dict[str, float] = {}
        self.env_to_module_connector: Any = None  # fn(env[, spaces, device]) -> connector(s)
        self.in_evaluation = False  # RLlib's flag on evaluation configs: connector stats frozen
        # resources()
        self.num_cpus_for_main_process: float = 1
        self.placement_strategy: str | None = None
        # learners()
        self.num_learners = 0
        self.num_cpus_per_learner: float = 1
        self.num_gpus_per_learner: float = 0
        # training()
        self.gamma = 0.99
        self.lr = 3e-4
        self.train_batch_size_per_learner = 4000
        self.minibatch_size: int | None = 128  # None: the whole batch in one step
        self.num_epochs = 10
        self.grad_clip: float | None = None
        # rl_module()
        self.model_config: dict = copy.deepcopy(self.default_model_config)
        self.rl_module_class: type | None = None
        # evaluation()
        self.evaluation_interval: int | None = None
        self.evaluation_duration = 10
        self.evaluation_duration_unit = "episodes"
        self.evaluation_config: dict = {"explore": False}
        self.evaluation_num_env_runners = 0
        self.evaluation_parallel_to_training = False
        # fault_tolerance()
        self.restart_failed_env_runners = True
        self.max_num_env_runner_restarts = 1000
        self.num_consecutive_env_runner_failures_tolerance = 5
        self.ignore_env_runner_failures = False
        self.restart_failed_sub_environments = False
        self.num_consecutive_sub_env_failures_tolerance = 10
        self.env_runner_health_probe_timeout_s: float = 30.0
        # reporting(), debugging(), callbacks()
        self.metrics_num_episodes_for_smoothing = 100
        self.seed: int | None = None
        self.callbacks_class: type | None = None
        # multi_agent(): None keeps the single-agent setup
        self.policies: Any = None
        self.policy_mapping_fn: Any = None
        self.policies_to_train: Any = None

    # -- fluent setters ---------------------------------------------------------------------

    def _set(self, **settings: Any) -> "AlgorithmConfig":
        for name, value in settings.items():
            if value is not NotProvided:
                setattr(self, name, value)
        return self

    @checked_settings
    def environment(self, env: Any = NotProvided, *, env_config: dict = NotProvided,
                    clip_rewards: Any = NotProvided) -> "AlgorithmConfig":
        """Which env to train on: a gymnasium id, a `register_env` name, or an env class.
        `clip_rewards`: clip the rewards the Learner trains on (rlcourse/connectors/clip_rewards.py)."""
        return self._set(env=env, env_config=env_config, clip_rewards=clip_rewards)

    @checked_settings
    def env_runners(self, *, num_env_runners: int = NotProvided,
                    num_envs_per_env_runner: int = NotProvided,
                    rollout_fragment_length: int | str = NotProvided,
                    num_cpus_per_env_runner: float = NotProvided,
                    num_gpus_per_env_runner: float = NotProvided,
                    gym_env_vectorize_mode: str = NotProvided,
                    explore: bool = NotProvided,
                    sample_timeout_s: float = NotProvided,
                    max_requests_in_flight_per_env_runner: int = NotProvided,
                    custom_resources_per_env_runner: dict[str, float] = NotProvided,
                    env_to_module_connector: Any = NotProvided
                    ) -> "AlgorithmConfig":
        """How many runner actors, how many sub-envs each, and what each actor reserves.

        `sample_timeout_s`: a runner actor that does not answer a sample request within this time
        is treated as failed (see fault_tolerance()), so a hung env cannot hang training. A runner
        in this process (num_env_runners=0, or evaluation with evaluation_num_env_runners=0) raises
        a SampleTimeoutError instead; it checks the clock between env steps, so one env.step that
        never returns is bounded only on runner actors (see env/env_runner.py).
        `max_requests_in_flight_per_env_runner`: how many `sample()` requests an asynchronous
        algorithm (IMPALA) keeps running on each runner actor, so a runner never idles while its
        last batch travels.
        `custom_resources_per_env_runner`: Ray custom resources each runner needs, e.g.
        {"worker-node": 0.5} to place runners only on nodes started with that resource.
        `env_to_module_connector`: a function, as in RLlib, `fn(env)` or `fn(env, spaces, device)`
        returning the connectors runners apply to observations, e.g.
        `lambda env: [FlattenObservations(), MeanStdFilter()]` (rlcourse/connectors/env_to_module/;
        to save checkpoints, pass a module-level function instead of a lambda).
        """
        if gym_env_vectorize_mode is not NotProvided:  # gymnasium's VectorizeMode, or "sync"
            mode = getattr(gym_env_vectorize_mode, "value", gym_env_vectorize_mode)
            gym_env_vectorize_mode = mode.upper() if isinstance(mode, str) else mode
        return self._set(num_env_runners=num_env_runners,
                         num_envs_per_env_runner=num_envs_per_env_runner,
                         rollout_fragment_length=rollout_fragment_length,
                         num_cpus_per_env_runner=num_cpus_per_env_runner,
                         num_gpus_per_env_runner=num_gpus_per_env_runner,
                         gym_env_vectorize_mode=gym_env_vectorize_mode, explore=explore,
                         sample_timeout_s=sample_timeout_s,
                         max_requests_in_flight_per_env_runner=max_requests_in_flight_per_env_runner,
                         custom_resources_per_env_runner=custom_resources_per_env_runner,
                         env_to_module_connector=env_to_module_connector)

    @checked_settings
    def resources(self, *, num_cpus_for_main_process: float = NotProvided,
                  placement_strategy: str | None = NotProvided) -> "AlgorithmConfig":
        """How runner actors are placed on a cluster's nodes: None (Ray's default scheduling), or a
        placement group of one bundle per runner with strategy "PACK" (few nodes), "SPREAD" (many
        nodes), "STRICT_PACK" (one node) or "STRICT_SPREAD" (a node each).

        `num_cpus_for_main_process`: what the process running the Algorithm reserves when it is an
        actor itself (a Ray Tune trial reserves it beside its runners and learners)."""
        return self._set(num_cpus_for_main_process=num_cpus_for_main_process,
                         placement_strategy=placement_strategy)

    @checked_settings
    def learners(self, *, num_learners: int = NotProvided, num_cpus_per_learner: float = NotProvided,
                 num_gpus_per_learner: float = NotProvided) -> "AlgorithmConfig":
        """0 learners: one Learner in this process; N > 0: N data-parallel Learner actors.

        `num_gpus_per_learner`: each Learner reserves this many GPUs and keeps its module,
        optimizer state and batches on its CUDA device (0.5: two learners share one GPU); it fails
        at build time where there is none. The course's small networks are often as fast on the
        CPU: measure with benchmarks/gpu_learner.py."""
        return self._set(num_learners=num_learners, num_cpus_per_learner=num_cpus_per_learner,
                         num_gpus_per_learner=num_gpus_per_learner)

    @checked_settings
    def training(self, *, gamma: float = NotProvided, lr: float = NotProvided,
                 train_batch_size_per_learner: int = NotProvided,
                 minibatch_size: int = NotProvided, num_epochs: int = NotProvided,
                 grad_clip: float | None = NotProvided) -> "AlgorithmConfig":
        """Settings of the update; algorithm configs add their own (PPO: `lambda_`, ...)."""
        return self._set(gamma=gamma, lr=lr,
                         train_batch_size_per_learner=train_batch_size_per_learner,
                         minibatch_size=minibatch_size, num_epochs=num_epochs, grad_clip=grad_clip)

    @checked_settings
    def rl_module(self, *, model_config: dict = NotProvided,
                  rl_module_class: type | None = NotProvided,
                  rl_module_spec: Any = NotProvided) -> "AlgorithmConfig":
        """The default MLP's `model_config` (fcnet_hiddens, fcnet_activation) or your own class; or
        RLlib's spelling of both: `rl_module_spec=RLModuleSpec(module_class=..., model_config=...)`."""
        if rl_module_spec is not NotProvided:
            if model_config is not NotProvided or rl_module_class is not NotProvided:
                raise ConfigError("rl_module_spec", rl_module_spec, "pass either an RLModuleSpec or "
                                  "model_config / rl_module_class, not both.", "rl_module")
            return self.rl_module(**settings_from_spec(rl_module_spec))
        if model_config is not NotProvided:
            model_config = copy.deepcopy({**self.default_model_config, **model_config})
        return self._set(model_config=model_config, rl_module_class=rl_module_class)

    @checked_settings
    def evaluation(self, *, evaluation_interval: int | None = NotProvided,
                   evaluation_duration: int = NotProvided,
                   evaluation_duration_unit: str = NotProvided,
                   evaluation_config: dict = NotProvided,
                   evaluation_num_env_runners: int = NotProvided,
                   evaluation_parallel_to_training: bool = NotProvided,
                   in_evaluation: bool = NotProvided) -> "AlgorithmConfig":
        """Evaluate every `evaluation_interval` iterations (None: only when you call evaluate()).

        `evaluation_config` overrides settings for evaluation (by default greedy actions);
        `evaluation_num_env_runners=0` evaluates in this process, N > 0 on N runner actors of their
        own, which with `evaluation_parallel_to_training` sample while training runs.
        `in_evaluation` (RLlib's flag) marks the evaluation runners' own config: the Algorithm sets
        it, and their connectors then use the training statistics without updating them.
        """
        return self._set(in_evaluation=in_evaluation, evaluation_interval=evaluation_interval,
                         evaluation_duration=evaluation_duration,
                         evaluation_duration_unit=evaluation_duration_unit,
                         evaluation_config=evaluation_config,
                         evaluation_num_env_runners=evaluation_num_env_runners,
                         evaluation_parallel_to_training=evaluation_parallel_to_training)

    @checked_settings
    def fault_tolerance(self, *, restart_failed_env_runners: bool = NotProvided,
                        max_num_env_runner_restarts: int = NotProvided,
                        num_consecutive_env_runner_failures_tolerance: int = NotProvided,
                        ignore_env_runner_failures: bool = NotProvided,
                        restart_failed_sub_environments: bool = NotProvided,
                        num_consecutive_sub_env_failures_tolerance: int = NotProvided,
                        env_runner_health_probe_timeout_s: float = NotProvided
                        ) -> "AlgorithmConfig":
        """What happens when a runner actor dies or hangs, or a sub-env fails (RLlib's names).

        `restart_failed_env_runners`: Ray restarts a dead runner actor (up to
        `max_num_env_runner_restarts` times in all); it answers a health probe within
        `env_runner_health_probe_timeout_s` and samples again with the current weights. A runner
        that does not answer a sample request within `sample_timeout_s` is ended and restarted too.
        `num_consecutive_env_runner_failures_tolerance` (default 5; RLlib's is 100): a runner that
        fails this many requests in a row, with no good one in between, ends the run with an
        EnvRunnerFailure, so an env that always hangs stops training after about
        5 x (sample_timeout_s + a restart), 5 to 6 minutes with the defaults, not hours.
        `ignore_env_runner_failures`: go on with the healthy runners instead of raising.
        `restart_failed_sub_environments`: rebuild a sub-env that raises or returns a NaN or infinite
        observation or reward, and drop its broken episode; after
        `num_consecutive_sub_env_failures_tolerance` (default 10) failures in a row with no good step
        in between, a SubEnvFailure ends the run (an env that always fails would otherwise be
        rebuilt forever while training waits for data).
        """
        return self._set(
            restart_failed_env_runners=restart_failed_env_runners,
            max_num_env_runner_restarts=max_num_env_runner_restarts,
            num_consecutive_env_runner_failures_tolerance=(
                num_consecutive_env_runner_failures_tolerance),
            ignore_env_runner_failures=ignore_env_runner_failures,
            restart_failed_sub_environments=restart_failed_sub_environments,
            num_consecutive_sub_env_failures_tolerance=num_consecutive_sub_env_failures_tolerance,
            env_runner_health_probe_timeout_s=env_runner_health_probe_timeout_s)

    @checked_settings
    def reporting(self, *, metrics_num_episodes_for_smoothing: int = NotProvided
                  ) -> "AlgorithmConfig":
        """How many recent episodes `episode_return_mean` averages over."""
        return self._set(metrics_num_episodes_for_smoothing=metrics_num_episodes_for_smoothing)

    @checked_settings
    def debugging(self, *, seed: int | None = NotProvided) -> "AlgorithmConfig":
        """Seed envs, action sampling, weight init and minibatch shuffling."""
        return self._set(seed=seed)

    @checked_settings
    def callbacks(self, callbacks_class: type | None = NotProvided) -> "AlgorithmConfig":
        """A `rlcourse.Callbacks` subclass whose hooks run during training."""
        return self._set(callbacks_class=callbacks_class)

    @checked_settings
    def multi_agent(self, *, policies: Any = NotProvided, policy_mapping_fn: Any = NotProvided,
                    policies_to_train: Any = NotProvided) -> "AlgorithmConfig":
        """Several modules (RLlib calls them policies) for the agents of a MultiAgentEnv.

        `policies`: module ids (a set), or {id: None or RLModuleSpec(observation_space=...,
        action_space=...)}. `policy_mapping_fn(agent_id, episode, **kwargs)` returns the module id
        of an agent, once per agent and episode. `policies_to_train`: ids, or
        `fn(module_id, batch) -> bool`; None trains all. `validate()` checks the settings; the
        env's agents are checked against them by `get_multi_rl_module_spec()` (env_runner_group
        builds, Algorithm setup).
        """
        return self._set(policies=policies, policy_mapping_fn=policy_mapping_fn,
                         policies_to_train=policies_to_train)

    @property
    def is_multi_agent(self) -> bool:
        """Whether multi_agent(policies=...) was set."""
        return self.policies is not None

    def get_multi_rl_module_spec(self, env: Any = None) -> Any:
        """The MultiRLModuleSpec of `policies`, each module's spaces from the agents mapped to it in
        `env` (default: one env built here from `environment()`); raises naming agent and policy."""
        from rlcourse.core.rl_module.multi_rl_module_spec import multi_rl_module_spec_for
        return multi_rl_module_spec_for(self, env)

    @checked_settings
    def framework(self, framework: str = "torch") -> "AlgorithmConfig":
        """RLlib's choice of deep-learning framework; rlcourse's Learners are torch only."""
        if framework != "torch":
            raise ConfigError("framework", framework, "rlcourse's Learners and RLModules are "
                              "PyTorch: use framework(\"torch\"), or leave the call out.", "framework")
        return self

    def __getattr__(self, name: str) -> Any:
        """Only for names that are not attributes: RLlib's renamed setters say where they went."""
        if name in RENAMED_SETTERS:
            raise AttributeError(f"config.{name}() is RLlib's old setter (before its new API "
                                 f"stack); use config.{RENAMED_SETTERS[name]} instead.")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- derived values ---------------------------------------------------------------------

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
        if self.minibatch_size is None:
            return 1
        return math.ceil(self.train_batch_size_per_learner / self.minibatch_size)

    def get_model_config(self) -> dict:
        """`model_config` plus the algorithm settings its module reads (RLlib's
        `_model_config_auto_includes`; DQN's module reads `dueling`)."""
        return dict(self.model_config)

    def get_action_head(self, action_space: Any, worker_index: int = 0) -> ActionHead:
        """How runners turn the network's outputs into actions (core/rl_module/numpy_mlp.py):
        a categorical or diagonal Gaussian here; DQN's and SAC's configs return theirs."""
        return default_action_head(action_space)

    def get_env_creator(self):
        from rlcourse.env.registry import get_env_creator
        return get_env_creator(self.env)

    # -- checks -----------------------------------------------------------------------------

    def validate(self) -> None:
        """Raise ValueError naming the first bad setting and how to fix it."""
        from rlcourse.utils.validation import validate_config
        validate_config(self)

    # -- copies, dicts, building ------------------------------------------------------------

    def copy(self) -> "AlgorithmConfig":
        return copy.deepcopy(self)

    def to_dict(self) -> dict:
        """All settings as a plain dict, plus `config_class` so `from_dict` rebuilds the type.
        Ray Tune calls it for `param_space=config`, so Tune search spaces are checked here first."""
        if contains_search_space(vars(self)):
            check_search_spaces(self)
        return {"config_class": class_path(type(self)), **copy.deepcopy(vars(self))}

    def update_from_dict(self, settings: dict) -> "AlgorithmConfig":
        """Set each `name: value` through its setter (RLlib's `update_from_dict`), so a plain dict of
        settings (a Tune trial's) is checked and normalized as the fluent calls would be."""
        for name, value in settings.items():
            setter = setter_of(self, name)
            if setter is None:
                refuse(self, "update_from_dict", name, value)
            getattr(self, setter)(**{name: value})
        return self

    @staticmethod
    def from_dict(d: dict) -> "AlgorithmConfig":
        d = dict(d)
        config = import_attr(d.pop("config_class", class_path(AlgorithmConfig)))()
        unknown = set(d) - set(vars(config))
        if unknown:
            raise ValueError(f"from_dict: unknown settings {sorted(unknown)} for "
                             f"{type(config).__name__}.")
        config.__dict__.update(copy.deepcopy(d))
        return config

    def build_algo(self):
        """Validate, then build the Algorithm (starting Ray if remote actors are asked for)."""
        algo_class = import_attr(self.algo_class)
        if self.is_multi_agent and not algo_class.supports_multi_agent:
            raise ConfigError(
                "policies", self.policies, f"{algo_class.__name__} trains one module in rlcourse; "
                "multi-agent training is built for PPO: PPOConfig().multi_agent(policies=..., "
                "policy_mapping_fn=...).", "multi_agent")
        self.validate()
        return algo_class(self.copy())

    def build(self):
        """RLlib's older name for `build_algo()`, still in many guides: the same."""
        return self.build_algo()
