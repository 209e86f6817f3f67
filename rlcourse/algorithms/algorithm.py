"""Algorithm: builds EnvRunners and Learners from a config; each algorithm writes its loop in
`training_step`, and `train()` adds evaluation, counters and timers under RLlib's result keys."""

import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import ray

from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.algorithms.algorithm_state import algorithm_state, restore_algorithm_state
from rlcourse.algorithms.checkpointable import Checkpointable, State
from rlcourse.algorithms.config_validation import env_spaces
from rlcourse.algorithms.evaluation import build_eval_env_runner_group, run_evaluation
from rlcourse.algorithms.trained_module import compute_actions, trained_module
from rlcourse.callbacks.callbacks import Callbacks
from rlcourse.connectors.env_to_module.env_to_module_pipeline import build_env_to_module_pipeline
from rlcourse.core import ALL_MODULES, DEFAULT_MODULE_ID
from rlcourse.core.learner.learner_group import LearnerGroup
from rlcourse.core.rl_module.default_model_config import space_info
from rlcourse.env.env_runner_group import EnvRunnerGroup
from rlcourse.env.registry import check_same_spaces, env_name, is_registered
from rlcourse.utils import resources
from rlcourse.utils.checkpoint_contents import config_from_json
from rlcourse.utils.metrics.metrics_logger import EpisodeStats, Timers

if TYPE_CHECKING:
    from rlcourse.offline.offline_data import OfflineData

# RLlib's old Algorithm methods (before its new API stack): using one raises with what to call.
RENAMED_METHODS = {"save": "save_to_path(path)", "get_policy": "get_module()",
                   "restore": "restore_from_path(path), or Algorithm.from_checkpoint(path)",
                   "compute_single_action": "compute_actions(obs[None])[0]"}


class AlgorithmStopped(RuntimeError):
    """This Algorithm cannot be used any more: stop() was called, or Ray was shut down under it."""


class Algorithm(Checkpointable):
    """The training loop's owner. Build one with `config.build_algo()`; call `train()` repeatedly."""

    supports_multi_agent = False  # whether its training_step handles config.multi_agent(...)
    supports_lstm = False  # whether its learner trains stateful modules (model_config use_lstm)

    def __init__(self, config: AlgorithmConfig):
        self.config = config
        self.iteration = 0
        self.env_runner_group: EnvRunnerGroup | None = None
        self.eval_env_runner_group: EnvRunnerGroup | None = None
        self.learner_group: LearnerGroup | None = None
        # None without config.callbacks(): no hook runs, and none is looked up on the hot path.
        self.callbacks: Callbacks | None = config.callbacks_class() if config.callbacks_class else None
        self.episode_stats = EpisodeStats(config.metrics_num_episodes_for_smoothing)
        self.timers = Timers()
        self.num_env_steps_trained_lifetime = 0
        self._stopped = False
        self._ray_session: str | None = None  # the Ray session the actors live in (None: no actors)
        self.offline_data: OfflineData | None = None  # what an offline algorithm reads (setup)
        try:
            self.setup(config)
            if self.callbacks:  # after the subclass's setup too (IMPALA's thread, DQN's buffer)
                self.callbacks.on_algorithm_init(algorithm=self)
        except BaseException:
            self.stop()  # never leave half-built actors behind
            raise

    @classmethod
    def get_default_config(cls) -> AlgorithmConfig:
        """A config with this algorithm's defaults (RLlib's name); each algorithm returns its own."""
        raise NotImplementedError

    @classmethod
    def as_trainable(cls):
        """This algorithm as a Ray Tune Trainable (why not RLlib's `Tuner(PPO)`: tune/trainable.py)."""
        from rlcourse.tune.trainable import trainable_for  # imports Tune: only where Tune runs

        resources.init_ray()
        return trainable_for(cls)

    def setup(self, config: AlgorithmConfig) -> None:
        self.env_creator = config.get_env_creator() if config.env is not None else None
        # Multi-agent: one module per policy id, each with the spaces of its agents (checked here).
        self.module_spec = config.get_multi_rl_module_spec() if config.is_multi_agent else None
        self.observation_space = self.action_space = self.env_to_module = None
        if self.module_spec is None:
            self.observation_space, self.action_space = env_spaces(config)
            if config.env_to_module_connector is not None:
                # Its output space is the module's. This copy never updates statistics: it merges
                # the runners' (EnvRunnerGroup) and serves compute_actions.
                self.env_to_module = build_env_to_module_pipeline(config, self.observation_space,
                                                                  self.action_space)
                self.env_to_module.update_stats = False
                self.observation_space = self.env_to_module.observation_space
        if config.rl_module_class is None:
            for spaces in self._module_spaces().values():
                space_info(*spaces)  # unsupported spaces fail here
        if config.input_ is not None and config.get_default_prelearner_class() is not None:
            # An offline algorithm's data (RLlib's is_offline), checked before any actor starts.
            from rlcourse.offline.offline_data import OfflineData  # Ray Data: only where it runs
            self.offline_data = OfflineData(config, self.observation_space, self.action_space)
        if config.num_env_runners > 0 or config.num_learners > 0 or config.evaluation_num_env_runners:
            resources.init_ray()  # before the checks: they compare requests with the cluster
            self._ray_session = resources.current_ray_session()
            if resources.current_placement_group() is None:  # a Tune trial's group reserved them already
                resources.check_cpus(config)
                resources.check_custom_resources(config)
        if config.num_gpus_per_learner or config.num_gpus_per_env_runner:
            resources.check_gpus(config)  # a GPU asked for where there is none fails now
        self.env_runner_group = EnvRunnerGroup(
            config, self.env_creator, env_to_module=self.env_to_module,
            on_recreated=lambda indices: self.callbacks and self.callbacks.on_env_runners_recreated(
                algorithm=self, env_runner_indices=indices, is_evaluation=False))
        if config.evaluation_num_env_runners > 0:
            self.eval_env_runner_group = build_eval_env_runner_group(self)
        # While the runner actors start, build the learners here (importing torch takes seconds).
        self.learner_group = LearnerGroup(config, self.observation_space, self.action_space,
                                          module_spec=self.module_spec)
        for group in filter(None, (self.env_runner_group, self.eval_env_runner_group)):
            group.wait_until_ready()
            if group.num_remote_env_runners:  # env_config may differ per worker_index
                runner_spaces = group.foreach_env_runner(lambda runner: runner.get_spaces())
                for module_id, spaces in self._module_spaces().items():
                    check_same_spaces(env_name(config.env), spaces, [
                        s[module_id] if self.module_spec else s for s in runner_spaces])
        # Read directly: no learner thread runs yet (IMPALA's _runner_weights takes its lock).
        self.sync_env_runner_weights(weights=self.learner_group.get_weights(inference_only=True))

    def _module_spaces(self) -> dict[str, tuple]:
        """{module_id: (observation_space, action_space)}; one module for a single-agent algorithm."""
        if self.module_spec is None:
            return {DEFAULT_MODULE_ID: (self.observation_space, self.action_space)}
        return self.module_spec.spaces()

    def _check_usable(self) -> None:
        """Raise AlgorithmStopped after stop() or once this algorithm's Ray is gone (not start anew)."""
        rebuild = ("build a new one with config.build_algo(), or continue from a checkpoint with "
                   "Algorithm.from_checkpoint(path).")
        if self._stopped:
            raise AlgorithmStopped(f"This Algorithm was stopped; {rebuild}")
        if not self._same_ray():
            raise AlgorithmStopped("Ray was shut down under this Algorithm (ray.shutdown() or a new "
                                   "ray.init()), and its actors with it. Call algo.stop(), then "
                                   f"{rebuild}")

    def _same_ray(self) -> bool:
        """Whether the Ray that this algorithm's actors live in (if any) is still connected."""
        return self._ray_session is None or (ray.is_initialized()
                                             and resources.current_ray_session() == self._ray_session)

    # -- training ---------------------------------------------------------------------------

    def training_step(self) -> dict[str, Any]:
        """One iteration of the algorithm; returns the `env_runners` and `learners` results."""
        raise NotImplementedError

    def train(self) -> dict[str, Any]:
        """Run one training iteration and return its nested result dict."""
        self._check_usable()
        start = time.perf_counter()
        trained_before = self.num_env_steps_trained_lifetime
        interval = self.config.evaluation_interval
        evaluate_now = bool(interval) and (self.iteration + 1) % interval == 0
        if evaluate_now and self.config.evaluation_parallel_to_training:
            # Evaluate the weights this iteration starts with, on the evaluation runners, while
            # training_step() runs here (both mostly wait on Ray, so threads suffice).
            with ThreadPoolExecutor(max_workers=1) as pool:
                evaluation = pool.submit(run_evaluation, self, self._runner_weights())
                result = self.training_step()
                result["evaluation"] = evaluation.result()
        else:
            result = self.training_step()
            if evaluate_now:
                result["evaluation"] = self.evaluate()
        self.iteration += 1
        elapsed = self.timers.last["training_iteration"] = time.perf_counter() - start
        group, runners = self.env_runner_group, result["env_runners"]
        healthy, restarts = group.num_healthy_env_runners, group.num_env_runner_restarts
        runners.update(num_healthy_env_runners=healthy, num_env_runner_restarts=restarts,
                       num_env_runner_failures=group.num_env_runner_failures)
        trained = self.num_env_steps_trained_lifetime
        result.setdefault("learners", {}).setdefault(ALL_MODULES, {})[
            "num_env_steps_trained_lifetime"] = trained
        result.update(
            fault_tolerance={"num_healthy_workers": healthy, "num_remote_worker_restarts": restarts},
            training_iteration=self.iteration,
            num_env_steps_sampled_throughput=runners["num_env_steps_sampled"] / elapsed,
            num_env_steps_trained_throughput=(trained - trained_before) / elapsed,
            num_env_steps_sampled_lifetime=runners["num_env_steps_sampled_lifetime"],
            num_env_steps_trained_lifetime=trained, timers=dict(self.timers.last))
        if self.callbacks:
            self.callbacks.on_train_result(algorithm=self, result=result)
        return result

    def evaluate(self) -> dict[str, Any]:
        """Run `evaluation_duration` episodes (or timesteps) with `evaluation_config` (greedy)."""
        self._check_usable()
        return run_evaluation(self, self._runner_weights())

    # -- weights and inference --------------------------------------------------------------

    def _runner_weights(self) -> dict[str, np.ndarray]:
        """The learner's current weights in the form runners use (no value network)."""
        return self.learner_group.get_weights(inference_only=True)

    def runner_epsilon(self) -> float | None:
        """The epsilon that epsilon-greedy runners explore with now (DQN's schedule's), or None."""
        return None

    def sync_env_runner_weights(self, group: EnvRunnerGroup | None = None, *,
                                weights: dict[str, Any] | None = None,
                                weights_seq_no: int | None = None,
                                env_to_module_state: list | None = None) -> None:
        """The one way weights reach runners: `weights` (default: the learners') and runner_epsilon()."""
        group = self.env_runner_group if group is None else group
        group.sync_weights(self._runner_weights() if weights is None else weights, weights_seq_no,
                           env_to_module_state, epsilon=self.runner_epsilon())

    def get_module(self, module_id: str | None = None) -> Any:
        """The trained torch RLModule `module_id` (None: the one module, or the MultiRLModule)."""
        self._check_usable()
        return trained_module(self, module_id)

    def set_module_weights(self, weights: dict[str, Any]) -> None:
        """Load weights (multi-agent: {module_id: weights}) into the learners and the runners."""
        self._check_usable()
        self.learner_group.set_weights(weights)
        self.sync_env_runner_weights()

    def compute_actions(self, observations: np.ndarray, explore: bool = False,
                        module_id: str | None = None) -> np.ndarray:
        """Actions of the trained module `module_id` for a batch of observations (greedy by default)."""
        return compute_actions(self, observations, explore, module_id)

    # -- checkpoints (save_to_path, restore_from_path, from_checkpoint: checkpointable.py) ----

    def get_state(self) -> State:
        """(JSON-compatible state, tensors) as algorithm_state.py says; DQN and Ape-X add theirs."""
        self._check_usable()
        return algorithm_state(self)

    def set_state(self, state: dict[str, Any], tensors: dict[str, Any]) -> None:
        """Restore what `get_state` returned; a state that does not fit raises and changes nothing."""
        self._check_usable()
        restore_algorithm_state(self, state, tensors, self._check_own_state)

    def _check_own_state(self, state: dict[str, Any]) -> None:
        """Refuse what a subclass adds to the state (DQN's replay buffer) before anything is restored."""

    @classmethod
    def _build_from_state(cls, state: dict[str, Any], source: str,
                          allowed: Iterable[Any]) -> "Algorithm":
        """The checkpoint's algorithm (whichever class `cls` is), built from its saved config."""
        return config_from_json(state["config"], source, allowed,
                                is_registered=is_registered).build_algo()

    def on_checkpoint_loaded(self) -> None:
        if self.callbacks:
            self.callbacks.on_checkpoint_loaded(algorithm=self)

    # -- life cycle -------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop runner and learner actors and close envs; safe to call twice, or after Ray is gone."""
        actors_alive = self._same_ray()
        if self.offline_data is not None:
            self.offline_data.stop()
        for part in (self.env_runner_group, self.eval_env_runner_group, self.learner_group):
            if part is not None:
                part.stop(kill_actors=actors_alive)
        self.env_runner_group = self.eval_env_runner_group = self.learner_group = None
        self._stopped = True

    def __getattr__(self, name: str) -> Any:
        """Only for names that are not attributes: RLlib's old method names say what to call."""
        if name in RENAMED_METHODS:
            raise AttributeError(f"algo.{name}() is RLlib's old method (before its new API stack); "
                                 f"use algo.{RENAMED_METHODS[name]} instead.")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __enter__(self) -> "Algorithm":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
