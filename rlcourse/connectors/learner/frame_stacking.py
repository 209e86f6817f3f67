"""FrameStackingLearner: rebuilds the stacks the runners acted on from episodes of single frames
(FrameStackingEnvToModule's); set both with the same `num_frames`:

    config.env_runners(env_to_module_connector=lambda env: FrameStackingEnvToModule(num_frames=4))
          .training(learner_connector=lambda obs_space, act_space: FrameStackingLearner(num_frames=4))

`build_learner_connector` checks that form and that both sides stack as many frames.
"""

import inspect
from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.connectors.env_to_module.frame_stacking import check_num_frames, stack_frames
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.validation import ConfigError


class FrameStackingLearner:
    """Episodes of frames [T + 1, H, W, C] in, the same episodes with stacks [T + 1, H, W, C * k] out."""

    def __init__(self, num_frames: int = 1):
        self.num_frames = check_num_frames(num_frames, "FrameStackingLearner", "learner_connector",
                                           "training")

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


def build_learner_connector(config: Any, observation_space: gym.Space, action_space: gym.Space,
                            env_frames: int | None = None) -> Any:
    """`config.learner_connector(observation_space, action_space)` (None if unset), refusing another
    form and, given `env_frames` (the runners' FrameStackingEnvToModule num_frames, 1: none), a
    learner that stacks another number: the module would train on stacks it never acted on."""
    factory, connector = config.learner_connector, None
    if factory is not None:
        try:
            inspect.signature(factory).bind(observation_space, action_space)
        except TypeError:
            raise ConfigError("learner_connector", factory, "pass a function of the two spaces "
                              "that returns the connector, as in RLlib: lambda obs_space, act_space:"
                              " FrameStackingLearner(num_frames=4).", "training") from None
        except ValueError:  # no signature (a builtin): call it as it is
            pass
        connector = factory(observation_space, action_space)
    frames = connector.num_frames if isinstance(connector, FrameStackingLearner) else 1
    if env_frames is not None and frames != env_frames:
        fix = (f"use config.training(learner_connector=lambda obs_space, act_space: "
               f"FrameStackingLearner(num_frames={env_frames})), or change the runners' num_frames"
               if env_frames > 1 else f"stack on the runners too (FrameStackingEnvToModule("
               f"num_frames={frames}) in env_to_module_connector), or leave learner_connector unset")
        raise ConfigError("learner_connector", factory, f"the runners stack {env_frames} frame(s) "
                          f"(env_to_module_connector's FrameStackingEnvToModule; 1: none) and the "
                          f"learner {frames}, so the module would train on other stacks than it "
                          f"acts on: {fix}.", "training")
    return connector
