"""Algorithm: builds EnvRunners and Learners from a config and runs training iterations.

    setup():  env spaces -> Ray (if actors are asked for) -> EnvRunnerGroup + LearnerGroup
    train():  training_step() (sample -> update -> sync weights) -> metrics -> result dict

Subclasses (PPO, ...) implement `training_step`. The result dict uses RLlib's keys, e.g.
result["env_runners"]["episode_return_mean"] and result["learners"]["default_policy"]["vf_loss"].
"""

import time
from typing import Any

import numpy as np

from rlcourse.callbacks import Callbacks
from rlcourse.env_runner import EnvRunner
from rlcourse.env_runner_group import EnvRunnerGroup
from rlcourse.learner_group import LearnerGroup
from rlcourse.metrics import EpisodeStats, Timers
from rlcourse.numpy_mlp import space_info
from rlcourse.registry import probe_spaces
from rlcourse.resources import check_cpus, check_gpus, init_ray

DEFAULT_POLICY = "default_policy"


class Algorithm:
    """The training loop's owner. Build one with `config.build_algo()`; call `train()` repeatedly."""

    def __init__(self, config):
        self.config = config
        self.iteration = 0
        self.env_runner_group: EnvRunnerGroup | None = None
        self.learner_group: LearnerGroup | None = None
        self._eval_env_runner: EnvRunner | None = None
        self.callbacks = config.callbacks_class() if config.callbacks_class else Callbacks()
        self.episode_stats = EpisodeStats(config.metrics_num_episodes_for_smoothing)
        self.timers = Timers()
        self.num_env_steps_trained_lifetime = 0
        try:
            self.setup(config)
        except BaseException:
            self.stop()  # never leave half-built actors behind
            raise

    def setup(self, config) -> None:
        self.env_creator = config.get_env_creator()
        self.observation_space, self.action_space = probe_spaces(self.env_creator,
                                                                 config.env_config)
        if config.rl_module_class is None:
            space_info(self.observation_space, self.action_space)  # unsupported spaces fail here
        check_gpus(config)
        if config.num_env_runners > 0 or config.num_learners > 0:
            init_ray()
            check_cpus(config)
        self.env_runner_group = EnvRunnerGroup(config, self.env_creator)
        # While the runner actors start, build the learners here (importing torch takes seconds).
        self.learner_group = LearnerGroup(config, self.observation_space, self.action_space)
        self.env_runner_group.wait_until_ready()
        self.env_runner_group.sync_weights(self.learner_group.get_weights(inference_only=True))
        self.callbacks.on_algorithm_init(algorithm=self)

    # -- training ---------------------------------------------------------------------------

    def training_step(self) -> dict[str, Any]:
        """One iteration of the algorithm; returns the `env_runners` and `learners` results."""
        raise NotImplementedError

    def train(self) -> dict[str, Any]:
        """Run one training iteration and return its nested result dict."""
        start = time.perf_counter()
        result = self.training_step()
        self.iteration += 1
        interval = self.config.evaluation_interval
        if interval and self.iteration % interval == 0:
            result["evaluation"] = self.evaluate()
        elapsed = time.perf_counter() - start
        self.timers.last["training_iteration"] = elapsed
        result.update({
            "training_iteration": self.iteration,
            "num_env_steps_sampled_throughput": result["env_runners"]["num_env_steps_sampled"] / elapsed,
            "num_env_steps_trained_throughput":
                result["learners"][DEFAULT_POLICY]["num_env_steps_trained"] / elapsed,
            "num_env_steps_sampled_lifetime":
                result["env_runners"]["num_env_steps_sampled_lifetime"],
            "num_env_steps_trained_lifetime": self.num_env_steps_trained_lifetime,
            "timers": dict(self.timers.last),
        })
        self.callbacks.on_train_result(algorithm=self, result=result)
        return result

    def sample_and_update(self, num_timesteps: int) -> dict[str, Any]:
        """The synchronous step most on-policy algorithms share: sample, learn, sync weights."""
        with self.timers.time("env_runner_sampling_timer"):
            episodes, runner_metrics = self.env_runner_group.sample(num_timesteps=num_timesteps)
        env_runner_results = self.episode_stats.add(runner_metrics)
        with self.timers.time("learner_update_timer"):
            learner_results = self.learner_group.update(episodes)
        self.num_env_steps_trained_lifetime += learner_results["num_env_steps_trained"]
        with self.timers.time("synch_weights"):
            self.env_runner_group.sync_weights(
                self.learner_group.get_weights(inference_only=True))
        return {"env_runners": env_runner_results,
                "learners": {DEFAULT_POLICY: learner_results}}

    # -- evaluation and inference -----------------------------------------------------------

    def evaluate(self) -> dict[str, Any]:
        """Run `evaluation_duration` episodes (or timesteps) with `evaluation_config` (greedy)."""
        if self._eval_env_runner is None:
            eval_config = self.config.copy()
            eval_config.__dict__.update(self.config.evaluation_config)
            eval_config.num_env_runners = 0
            self._eval_env_runner = EnvRunner(eval_config, self.env_creator)
        runner = self._eval_env_runner
        runner.set_weights(self.learner_group.get_weights(inference_only=True))
        with self.timers.time("evaluation"):
            if self.config.evaluation_duration_unit == "episodes":
                episodes = runner.sample(num_episodes=self.config.evaluation_duration)
                metrics = {"episode_returns": [e.get_return() for e in episodes],
                           "episode_lens": [len(e) for e in episodes],
                           "num_env_steps_sampled": sum(len(e) for e in episodes)}
            else:
                runner.sample(num_timesteps=self.config.evaluation_duration)
                metrics = runner.get_metrics()
        runner.get_metrics()  # forget what this evaluation counted; the next one starts afresh
        stats = EpisodeStats(window=max(1, self.config.evaluation_duration))
        return {"env_runners": stats.add([metrics])}

    def get_module(self):
        """The trained torch RLModule (a copy when the learners are remote actors)."""
        if self.learner_group.is_local:
            return self.learner_group.local_learner.module
        from rlcourse.rl_module import build_module
        module = build_module(self.config, self.observation_space, self.action_space)
        module.set_state(self.learner_group.get_weights())
        return module

    def compute_actions(self, observations: np.ndarray, explore: bool = False) -> np.ndarray:
        """Actions of the trained policy for a batch of observations (greedy unless `explore`)."""
        import torch

        module = self.get_module()
        obs = torch.as_tensor(np.asarray(observations))
        with torch.no_grad():
            inputs = module.forward_inference({"obs": obs})["action_dist_inputs"]
            actions = (module.get_action_dist(inputs).sample() if explore
                       else module.greedy_actions(inputs))
        return actions.numpy()

    # -- life cycle -------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop runner and learner actors and close envs. Safe to call twice."""
        for part in (self.env_runner_group, self.learner_group, self._eval_env_runner):
            if part is not None:
                part.stop()
        self.env_runner_group = self.learner_group = self._eval_env_runner = None

    def __enter__(self) -> "Algorithm":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
