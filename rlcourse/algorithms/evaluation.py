"""EvaluationMixin: an Algorithm's evaluation (`config.evaluation(...)`), mixed into Algorithm.

`train()` (algorithm.py) calls `_evaluate` every `evaluation_interval` iterations, in a thread beside
`training_step()` with `evaluation_parallel_to_training`; `evaluate()` runs it on demand. Evaluation
runs on its own EnvRunnerGroup, with `evaluation_config` over the training config (greedy by
default), other seeds, and the training runners' connector statistics, frozen. Its results go to
result["evaluation"]["env_runners"], with the same keys as training's.
"""

import time
from typing import Any

import numpy as np

from rlcourse.env.env_runner_group import EnvRunnerGroup
from rlcourse.utils.metrics.episode_stats import EpisodeStats, episode_metrics

EVALUATION_SEED_OFFSET = 1_000_000  # evaluation envs do not replay the training envs' episodes


class EvaluationMixin:
    """evaluate() and the evaluation EnvRunnerGroup, for Algorithm (it uses the Algorithm's config,
    callbacks and runner groups)."""

    def _build_eval_group(self) -> EnvRunnerGroup:
        eval_config = self.config.copy()
        eval_config.__dict__.update(self.config.evaluation_config)
        eval_config.in_evaluation = True  # its runners normalize with the training stats, frozen
        if eval_config.seed is not None:
            eval_config.seed += EVALUATION_SEED_OFFSET
        return EnvRunnerGroup(eval_config, self.env_creator,
                              num_env_runners=self.config.evaluation_num_env_runners,
                              on_recreated=lambda i: self._on_recreated(i, is_evaluation=True))

    def evaluate(self) -> dict[str, Any]:
        """Run `evaluation_duration` episodes (or timesteps) with `evaluation_config` (greedy)."""
        self._check_usable()
        return self._evaluate(self._runner_weights())

    def _evaluate(self, weights: dict[str, np.ndarray]) -> dict[str, Any]:
        if self.eval_env_runner_group is None:  # evaluation in this process, built when first used
            self.eval_env_runner_group = self._build_eval_group()
        self.callbacks.on_evaluate_start(algorithm=self)
        group = self.eval_env_runner_group
        self.sync_env_runner_weights(group, weights=weights,
                                     env_to_module_state=self.env_runner_group.env_to_module_state)
        duration = self.config.evaluation_duration
        start = time.perf_counter()
        if self.config.evaluation_duration_unit == "episodes":
            episodes, runner_metrics = group.sample(num_episodes=duration)
            episodes = episodes[:duration]  # runners may finish a few more between them
            metrics = [episode_metrics(episodes)]
            metrics += [{"episode_returns": [], "episode_lens": [], "num_env_steps_sampled": 0,
                         "custom_metrics": m.get("custom_metrics", {})} for m in runner_metrics]
        else:
            _, metrics = group.sample(num_timesteps=duration)
        stats = EpisodeStats(window=max(1, sum(len(m["episode_returns"]) for m in metrics)))
        result = {"env_runners": stats.add(metrics),
                  "num_healthy_env_runners": group.num_healthy_env_runners,
                  "evaluation_time_s": time.perf_counter() - start}
        self.callbacks.on_evaluate_end(algorithm=self, evaluation_metrics=result)
        return result
