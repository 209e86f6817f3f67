"""FrameStackingLearner: rebuilds the stacks the runners acted on from episodes of single frames
(FrameStackingEnvToModule's); set both with the same `num_frames`:

    config.env_runners(env_to_module_connector=lambda env: FrameStackingEnvToModule(num_frames=4))
          .training(learner_connector=lambda obs_space, act_space: FrameStackingLearner(num_frames=4))
"""

import numpy as np

from rlcourse.connectors.env_to_module.frame_stacking import stack_frames
from rlcourse.env.single_agent_episode import SingleAgentEpisode


class FrameStackingLearner:
    """Episodes of frames [T + 1, H, W, C] in, the same episodes with stacks [T + 1, H, W, C * k] out."""

    def __init__(self, num_frames: int = 1):
        self.num_frames = num_frames

    def __call__(self, episodes: list[SingleAgentEpisode]) -> list[SingleAgentEpisode]:
        return [self.stack(episode) for episode in episodes]

    def stack(self, episode: SingleAgentEpisode) -> SingleAgentEpisode:
        """One chunk with stacked observations, after zeros or the frames the runner kept for it."""
        frames, k = episode.observations, self.num_frames
        before = episode.lookback_observations
        if episode.t_started == 0:
            before = np.zeros((k - 1, *frames.shape[1:]), frames.dtype)
        elif before is None or len(before) != k - 1:
            raise ValueError(f"Episode {episode.id_} continues at t={episode.t_started} with "
                             f"{0 if before is None else len(before)} frames before its chunk; "
                             f"FrameStackingLearner(num_frames={k}) needs {k - 1}: sample with "
                             f"FrameStackingEnvToModule(num_frames={k}), the same num_frames.")
        stacked = SingleAgentEpisode(
            stack_frames(np.concatenate([before, frames]), k), episode.actions, episode.rewards,
            episode.extra_model_outputs, episode.is_terminated, episode.is_truncated, episode.id_,
            episode.t_started)
        stacked.custom_data = episode.custom_data
        return stacked
