"""An Algorithm's evaluation (`config.evaluation(...)`): its own runners, with `evaluation_config`
over the training config (greedy), other seeds and the training connectors' statistics, frozen."""

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from rlcourse.algorithms.evaluation_config import evaluation_config_of
from rlcourse.env.env_runner_group import EnvRunnerGroup
from rlcourse.env.multi_agent_episode import MultiAgentEpisode
from rlcourse.utils.metrics.metrics_logger import EpisodeStats

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm import Algorithm

EVALUATION_SEED_OFFSET = 1_000_000  # evaluation envs do not replay the training envs' episodes


def build_eval_env_runner_group(algo: "Algorithm") -> EnvRunnerGroup:
    """The evaluation runners: the config with its `evaluation_config` on top, other seeds."""
    eval_config = evaluation_config_of(algo.config)
    if eval_config.seed is not None:
        eval_config.seed += EVALUATION_SEED_OFFSET
    return EnvRunnerGroup(eval_config, algo.env_creator,
                          num_env_runners=algo.config.evaluation_num_env_runners,
                          on_recreated=lambda indices: algo.callbacks and (
                              algo.callbacks.on_env_runners_recreated(
                                  algorithm=algo, env_runner_indices=indices, is_evaluation=True)))


def run_evaluation(algo: "Algorithm", weights: dict[str, np.ndarray]) -> dict[str, Any]:
    """Evaluate `weights` for `evaluation_duration` episodes (or timesteps); return its results.
    The episodes counted are the first to end, as in RLlib: with several sub-envs per runner, a
    short one is likelier to count (CartPole's evaluation then leans low)."""
    if algo.eval_env_runner_group is None:  # evaluation in this process, built when first used
        algo.eval_env_runner_group = build_eval_env_runner_group(algo)
    if algo.callbacks:
        algo.callbacks.on_evaluate_start(algorithm=algo)
    group, duration = algo.eval_env_runner_group, algo.config.evaluation_duration
    algo.sync_env_runner_weights(group, weights=weights,
                                 env_to_module_state=algo.env_runner_group.env_to_module_state)
    start = time.perf_counter()
    if algo.config.evaluation_duration_unit == "episodes":
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
    if algo.callbacks:
        algo.callbacks.on_evaluate_end(algorithm=algo, evaluation_metrics=result)
    return result


def episode_metrics(episodes: list) -> dict:
    """What a runner reports, for exactly these whole `episodes` (what evaluation counts); for
    MultiAgentEpisodes also each agent's and each module's returns."""
    metrics = {"episode_returns": [e.get_return() for e in episodes],
               "episode_lens": [len(e) for e in episodes],
               "num_env_steps_sampled": sum(len(e) for e in episodes), "custom_metrics": {}}
    if episodes and isinstance(episodes[0], MultiAgentEpisode):
        agents, modules = {}, {}
        for episode in episodes:
            for agent_id, ret in episode.get_agent_returns().items():
                agents.setdefault(agent_id, []).append(ret)
                modules.setdefault(episode.module_for(agent_id), []).append(ret)
        metrics.update(agent_episode_returns=agents, module_episode_returns=modules)
    return metrics
