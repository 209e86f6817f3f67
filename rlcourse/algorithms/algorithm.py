"""Algorithm: builds EnvRunners and Learners from a config and runs training iterations.

    setup():  env spaces -> Ray (if actors are asked for) -> EnvRunnerGroup + LearnerGroup
    train():  training_step() -> evaluation (if due) -> counters and timers -> result dict

Each algorithm writes its loop in `training_step` (PPO: sample, update, sync weights, in
`ppo/ppo.py`; IMPALA: requests in flight and a learner thread). The result dict uses RLlib's keys, e.g.
result["env_runners"]["episode_return_mean"] and result["learners"]["default_policy"]["vf_loss"].
Two mixins hold the rest of the Algorithm's methods: EvaluationMixin (evaluation.py: `evaluate()`
and the evaluation runners) and Checkpointable (checkpointable.py: `get_state` / `set_state`,
`save_to_path` / `restore_from_path` / `from_checkpoint`; the files: utils/checkpoints.py).
After `stop()`, or once Ray was shut down under an algorithm with actors, every use raises
AlgorithmStopped saying so (instead of an AttributeError, or Ray quietly starting anew).
"""

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import ray

from rlcourse.algorithms.checkpointable import Checkpointable
from rlcourse.algorithms.evaluation import EvaluationMixin
from rlcourse.callbacks.callbacks import Callbacks
from rlcourse.connectors.env_to_module.env_to_module_pipeline import build_env_to_module_pipeline
from rlcourse.core.learner.learner_group import LearnerGroup
from rlcourse.core.learner.multi_agent_batch import ALL_MODULES
from rlcourse.core.rl_module.default_model_config import space_info, to_env_actions
from rlcourse.env.env_runner_group import EnvRunnerGroup
from rlcourse.env.registry import check_same_spaces, env_name, probe_spaces
from rlcourse.utils.metrics.episode_stats import EpisodeStats, Timers
from rlcourse.utils.resources import (
    check_cpus,
    check_custom_resources,
    check_gpus,
    current_placement_group,
    init_ray,
)

DEFAULT_POLICY = "default_policy"


class AlgorithmStopped(RuntimeError):
    """This Algorithm cannot be used any more: stop() was called, or Ray was shut down under it."""


def _current_ray_session() -> str:
    """This driver's job and node in the connected Ray: both change when Ray is started anew (a new
    local Ray reuses job ids; a new connection to a cluster gets a new job)."""
    context = ray.get_runtime_context()
    return f"{context.get_job_id()}@{context.get_node_id()}"


class Algorithm(Checkpointable, EvaluationMixin):
    """The training loop's owner. Build one with `config.build_algo()`; call `train()` repeatedly."""

    supports_multi_agent = False  # whether its training_step handles config.multi_agent(...)

    def __init__(self, config):
        self.config = config
        self.iteration = 0
        self.env_runner_group: EnvRunnerGroup | None = None
        self.eval_env_runner_group: EnvRunnerGroup | None = None
        self.learner_group: LearnerGroup | None = None
        self.callbacks = config.callbacks_class() if config.callbacks_class else Callbacks()
        self.episode_stats = EpisodeStats(config.metrics_num_episodes_for_smoothing)
        self.timers = Timers()
        self.num_env_steps_trained_lifetime = 0
        self._stopped = False
        self._ray_session: str | None = None  # the Ray session the actors live in (None: no actors)
        try:
            self.setup(config)
        except BaseException:
            self.stop()  # never leave half-built actors behind
            raise

    @classmethod
    def get_default_config(cls):
        """A config with this algorithm's defaults (RLlib's name); each algorithm returns its own."""
        raise NotImplementedError

    @classmethod
    def as_trainable(cls):
        """This algorithm as a Ray Tune Trainable: `tune.Tuner(PPO.as_trainable(), param_space=...)`
        (RLlib: `tune.Tuner(PPO, ...)`; why not here: rlcourse/tune/trainable.py). Starts the
        course's Ray if none runs; Tune would start one with its defaults (dashboard and all)."""
        from rlcourse.tune.trainable import trainable_for  # imports Tune: only where Tune runs

        init_ray()
        return trainable_for(cls)

    def setup(self, config) -> None:
        self.env_creator = config.get_env_creator()
        # Multi-agent: one module per policy id, each with the spaces of its agents (checked here).
        self.module_spec = config.get_multi_rl_module_spec() if config.is_multi_agent else None
        if self.module_spec is None:
            env_observation_space, self.action_space = probe_spaces(
                self.env_creator, config.env_config, env_name(config.env))
            # The connectors' output space is the module's; this copy never updates statistics:
            # it merges the runners' (EnvRunnerGroup) and serves compute_actions.
            self.env_to_module, self.observation_space = None, env_observation_space
            if config.env_to_module_connector is not None:
                self.env_to_module = build_env_to_module_pipeline(config, env_observation_space,
                                                                  self.action_space)
                self.env_to_module.update_stats = False
                self.observation_space = self.env_to_module.observation_space
        else:  # each module's spaces are in self.module_spec.spaces()
            self.observation_space = self.action_space = self.env_to_module = None
        for obs_space, act_space in self._module_spaces().values():
            if config.rl_module_class is None:
                space_info(obs_space, act_space)  # unsupported spaces fail here
        if config.num_env_runners > 0 or config.num_learners > 0 or config.evaluation_num_env_runners:
            init_ray()  # before the checks: they compare the requests with the cluster's resources
            self._ray_session = _current_ray_session()
            if current_placement_group() is None:  # a Tune trial's group reserved them already
                check_cpus(config)
                check_custom_resources(config)
        check_gpus(config)
        self.env_runner_group = EnvRunnerGroup(config, self.env_creator,
                                               on_recreated=self._on_recreated,
                                               env_to_module=self.env_to_module)
        if config.evaluation_num_env_runners > 0:
            self.eval_env_runner_group = self._build_eval_group()
        # While the runner actors start, build the learners here (importing torch takes seconds).
        self.learner_group = LearnerGroup(config, self.observation_space, self.action_space,
                                          module_spec=self.module_spec)
        self.env_runner_group.wait_until_ready()
        if self.eval_env_runner_group is not None:
            self.eval_env_runner_group.wait_until_ready()
        for group in (self.env_runner_group, self.eval_env_runner_group):
            if group is not None and group.num_remote_env_runners:  # env_config per worker_index
                runner_spaces = group.foreach_env_runner(lambda runner: runner.get_spaces())
                for module_id, spaces in self._module_spaces().items():
                    check_same_spaces(env_name(config.env), spaces, [
                        s[module_id] if self.module_spec else s for s in runner_spaces])
        self.env_runner_group.sync_weights(self.learner_group.get_weights(inference_only=True))
        self.callbacks.on_algorithm_init(algorithm=self)

    def _module_spaces(self) -> dict[str, tuple]:
        """{module_id: (observation_space, action_space)}; one module for a single-agent algorithm."""
        if self.module_spec is None:
            return {DEFAULT_POLICY: (self.observation_space, self.action_space)}
        return self.module_spec.spaces()

    def _check_usable(self) -> None:
        """Raise AlgorithmStopped if stop() was called or this algorithm's Ray is gone. Checked
        before anything reaches Ray, whose API would otherwise start a new, full-size Ray to send
        requests to actors that died with the old one."""
        if self._stopped:
            raise AlgorithmStopped("This Algorithm was stopped; build a new one with "
                                   "config.build_algo(), or continue from a checkpoint with "
                                   "Algorithm.from_checkpoint(path).")
        if self._ray_session is not None and not self._same_ray():
            raise AlgorithmStopped(
                "Ray was shut down under this Algorithm (ray.shutdown() or a new ray.init()), and "
                "its runner and learner actors with it. Call algo.stop(), then build a new one "
                "with config.build_algo() (it starts Ray again), or continue from a checkpoint "
                "with Algorithm.from_checkpoint(path). Save checkpoints before shutting Ray down.")

    def _same_ray(self) -> bool:
        """Whether the Ray that this algorithm's actors live in is still the one connected."""
        return ray.is_initialized() and _current_ray_session() == self._ray_session

    def _on_recreated(self, indices: list[int], is_evaluation: bool = False) -> None:
        self.callbacks.on_env_runners_recreated(algorithm=self, env_runner_indices=indices,
                                                is_evaluation=is_evaluation)

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
            weights = self._runner_weights()
            with ThreadPoolExecutor(max_workers=1) as pool:
                evaluation = pool.submit(self._evaluate, weights)
                result = self.training_step()
                result["evaluation"] = evaluation.result()
        else:
            result = self.training_step()
            if evaluate_now:
                result["evaluation"] = self.evaluate()
        self.iteration += 1
        elapsed = time.perf_counter() - start
        self.timers.last["training_iteration"] = elapsed
        group = self.env_runner_group
        result["env_runners"].update(num_healthy_env_runners=group.num_healthy_env_runners,
                                     num_env_runner_restarts=group.num_env_runner_restarts,
                                     num_env_runner_failures=group.num_env_runner_failures)
        result["fault_tolerance"] = {"num_healthy_workers": group.num_healthy_env_runners,
                                     "num_remote_worker_restarts": group.num_env_runner_restarts}
        result.setdefault("learners", {}).setdefault(ALL_MODULES, {})[
            "num_env_steps_trained_lifetime"] = self.num_env_steps_trained_lifetime
        result.update({
            "training_iteration": self.iteration,
            "num_env_steps_sampled_throughput": result["env_runners"]["num_env_steps_sampled"] / elapsed,
            "num_env_steps_trained_throughput":
                (self.num_env_steps_trained_lifetime - trained_before) / elapsed,
            "num_env_steps_sampled_lifetime":
                result["env_runners"]["num_env_steps_sampled_lifetime"],
            "num_env_steps_trained_lifetime": self.num_env_steps_trained_lifetime,
            "timers": dict(self.timers.last),
        })
        self.callbacks.on_train_result(algorithm=self, result=result)
        return result

    # -- weights and inference --------------------------------------------------------------

    def _runner_weights(self) -> dict[str, np.ndarray]:
        """The learner's current weights in the form runners use (no value network)."""
        return self.learner_group.get_weights(inference_only=True)

    def get_module(self, module_id: str | None = None):
        """The trained torch RLModule (multi-agent: the MultiRLModule, or its `module_id` module):
        the Learner's own when it runs in this process, else a copy."""
        self._check_usable()
        if self.learner_group.is_local:
            module = self.learner_group.local_learner.module
        else:
            module = self._copy_of_module()
        if module_id is None:
            return module
        if self.module_spec is None or module_id not in module:
            raise KeyError(f"get_module({module_id!r}): this algorithm's modules are "
                           f"{sorted(self._module_spaces())}.")
        return module[module_id]

    def set_module_weights(self, weights: dict[str, Any]) -> None:
        """Load weights into the learners' modules and send the runners the new weights. Multi-agent:
        {module_id: weights}, the modules left out keep theirs (self-play copies "main" into a
        frozen snapshot so); single-agent: the module's weights."""
        self._check_usable()
        self.learner_group.set_weights(weights)
        self.env_runner_group.sync_weights(self._runner_weights())

    def _copy_of_module(self):
        if self.module_spec is not None:
            from rlcourse.core.rl_module.multi_rl_module import build_multi_rl_module
            module = build_multi_rl_module(self.config, self.module_spec)
        else:
            from rlcourse.core.rl_module.rl_module import build_module
            module = build_module(self.config, self.observation_space, self.action_space)
        module.set_state(self.learner_group.get_weights())
        return module

    def compute_actions(self, observations: np.ndarray, explore: bool = False,
                        module_id: str | None = None) -> np.ndarray:
        """Actions of the trained policy for a batch of observations (greedy unless `explore`);
        multi-agent: of module `module_id`."""
        import torch

        if (module_id is None) != (self.module_spec is None):
            raise ValueError("compute_actions(): name the policy with module_id=... for a "
                             "multi-agent algorithm (one of " f"{sorted(self._module_spaces())}), "
                             "and only then.")
        module = self.get_module(module_id)
        action_space = self._module_spaces()[module_id or DEFAULT_POLICY][1]
        if self.env_to_module is not None:  # as the runners see them, with the merged statistics
            self.env_to_module.set_state(self.env_runner_group.env_to_module_state)
            observations = self.env_to_module(observations)
        obs = torch.as_tensor(np.asarray(observations))
        with torch.no_grad():
            inputs = module.forward_inference({"obs": obs})["action_dist_inputs"]
            actions = (module.get_action_dist(inputs).sample() if explore
                       else module.greedy_actions(inputs))
        return to_env_actions(actions.numpy(), action_space)

    # -- life cycle -------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop runner and learner actors and close envs. Safe to call twice, and after Ray was shut
        down (the actors ended with it; no new Ray is started to stop them)."""
        actors_alive = self._ray_session is None or self._same_ray()
        for part in (self.env_runner_group, self.eval_env_runner_group, self.learner_group):
            if part is not None:
                part.stop(kill_actors=actors_alive)
        self.env_runner_group = self.eval_env_runner_group = self.learner_group = None
        self._stopped = True

    def __enter__(self) -> "Algorithm":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
