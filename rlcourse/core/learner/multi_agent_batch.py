"""From MultiAgentEpisodes to what each module learns from: {module_id: [SingleAgentEpisode]}.

Torch-free: the LearnerGroup splits the episodes in the driver, then sends each learner its share.
"""

import math
from typing import Any

from rlcourse.env.multi_agent_episode import ModuleID, MultiAgentEpisode
from rlcourse.env.single_agent_episode import SingleAgentEpisode


def should_module_be_updated(config: Any, module_id: ModuleID,
                             episodes: list[MultiAgentEpisode] | None = None) -> bool:
    """Whether `config.policies_to_train` lets `module_id` learn (None: every module does)."""
    to_train = config.policies_to_train
    if to_train is None:
        return True
    if callable(to_train):
        return bool(to_train(module_id, episodes))
    return module_id in to_train


def episodes_by_module(config: Any, episodes: list[MultiAgentEpisode]
                       ) -> dict[ModuleID, list[SingleAgentEpisode]]:
    """Each trainable module's agent episodes (chunks with at least one step), in a fixed order;
    an agent's steps go to the module that acted for it in that episode."""
    by_module: dict[ModuleID, list[SingleAgentEpisode]] = {}
    for episode in episodes:
        for agent_id, agent_episode in episode.agent_episodes.items():
            if len(agent_episode):
                by_module.setdefault(episode.module_for(agent_id), []).append(agent_episode)
    # Sorted, so that data-parallel learners update the modules in the same order.
    return {mid: by_module[mid] for mid in sorted(by_module)
            if should_module_be_updated(config, mid, episodes)}


def num_minibatches(config: Any, num_steps: int, num_learners: int) -> int:
    """Minibatches per epoch for a module with `num_steps` agent steps in the batch: each learner's
    share cut into minibatches of about `minibatch_size` (RLlib sizes minibatches per module)."""
    if config.minibatch_size is None:
        return 1
    return max(1, math.ceil(num_steps / max(1, num_learners) / config.minibatch_size))
