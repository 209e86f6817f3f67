"""SingleAgentEpisode: one episode, or one chunk of it, as NumPy arrays.

n steps hold n+1 observations: the last is where the chunk stops and where the next chunk (made by
`cut()`, with the same `id_`) starts, so a learner can bootstrap from it.
"""

import os

import numpy as np


class SingleAgentEpisode:
    """Observations, actions, rewards and model outputs (e.g. `action_logp`) of one episode chunk."""

    # The frames before a continuing chunk's first, which FrameStackingLearner stacks it with.
    lookback_observations: np.ndarray | None = None

    def __init__(self, observations: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
                 extra_model_outputs: dict[str, np.ndarray] | None = None,
                 is_terminated: bool = False, is_truncated: bool = False,
                 id_: str | None = None, t_started: int = 0):
        self.id_ = id_ or self.new_id()
        self.observations = np.asarray(observations)
        self.actions = np.asarray(actions)
        self.rewards = np.asarray(rewards, dtype=np.float32)
        self.extra_model_outputs = {k: np.asarray(v) for k, v in (extra_model_outputs or {}).items()}
        self.is_terminated = bool(is_terminated)
        self.is_truncated = bool(is_truncated)
        self.t_started = t_started
        self.custom_data: dict = {}  # what callbacks collect about the episode (episode_hooks.py)
        self.validate()

    @staticmethod
    def new_id() -> str:
        """A random 32-hex-digit id, like RLlib's uuid4().hex, at a tenth of uuid4's cost."""
        return os.urandom(16).hex()

    def validate(self) -> None:
        """Raise if the arrays do not line up as n+1 observations for n steps."""
        n = len(self.actions)
        if len(self.observations) != n + 1 or len(self.rewards) != n:
            raise ValueError(f"Episode {self.id_}: expected n+1 observations and n rewards for "
                             f"n={n} actions, got {len(self.observations)} and {len(self.rewards)}.")
        for key, values in self.extra_model_outputs.items():
            if len(values) != n:
                raise ValueError(f"Episode {self.id_}: extra_model_outputs[{key!r}] has "
                                 f"{len(values)} entries for {n} steps.")
        if self.is_terminated and self.is_truncated:
            raise ValueError(f"Episode {self.id_}: cannot be both terminated and truncated.")

    def __len__(self) -> int:
        return len(self.actions)

    def __repr__(self) -> str:
        state = "terminated" if self.is_terminated else "truncated" if self.is_truncated else "ongoing"
        return (f"SingleAgentEpisode(id_={self.id_[:8]}, t={self.t_started}..{self.t}, "
                f"return={self.get_return():.1f}, {state})")

    @property
    def t(self) -> int:
        """The env step this chunk ends at, counted from the episode's reset."""
        return self.t_started + len(self)

    @property
    def is_done(self) -> bool:
        return self.is_terminated or self.is_truncated

    def get_return(self) -> float:
        """Sum of this chunk's rewards (undiscounted)."""
        return float(self.rewards.sum())

    def cut(self) -> "SingleAgentEpisode":
        """Start the next chunk of this (not yet done) episode at its last observation."""
        if self.is_done:
            raise ValueError(f"Episode {self.id_} is done; start a new episode instead of cut().")
        empty = {k: v[:0] for k, v in self.extra_model_outputs.items()}
        chunk = SingleAgentEpisode(self.observations[-1:], self.actions[:0], self.rewards[:0], empty,
                                   id_=self.id_, t_started=self.t)
        chunk.custom_data = self.custom_data
        return chunk

    def concat_episode(self, other: "SingleAgentEpisode") -> "SingleAgentEpisode":
        """Join this chunk with the chunk that continues it (same id_, starting where this ends)."""
        if other.id_ != self.id_ or other.t_started != self.t or self.is_done:
            raise ValueError(f"Episode chunk {other!r} does not continue {self!r}.")
        if not np.array_equal(other.observations[0], self.observations[-1]):
            raise ValueError(f"Episode {self.id_}: the next chunk starts at another observation.")
        extra = {k: np.concatenate([v, other.extra_model_outputs[k]])
                 for k, v in self.extra_model_outputs.items()}
        joined = SingleAgentEpisode(
            np.concatenate([self.observations, other.observations[1:]]),
            np.concatenate([self.actions, other.actions]),
            np.concatenate([self.rewards, other.rewards]), extra,
            other.is_terminated, other.is_truncated, self.id_, self.t_started)
        joined.custom_data = {**self.custom_data, **other.custom_data}
        joined.lookback_observations = self.lookback_observations
        return joined
