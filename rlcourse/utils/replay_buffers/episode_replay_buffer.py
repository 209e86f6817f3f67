from typing import Any

import numpy as np

from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.replay_buffers.replay_buffer_state import check_buffer_state
from rlcourse.utils.serialization import from_plain, to_plain


class EpisodeReplayBuffer:
    """Whole episodes (RLlib's new stack), sampled uniformly as n-step transitions. A chunk a runner
    cut is appended to its stored episode (same `id_`), so n-step returns run across the cut.
    Capacity counts env steps; when full, the oldest episodes go, whole. Each stored step has a slot
    (0..capacity-1), returned as a row's `indices` (prioritized replay keeps one priority per slot).
    """

    PRIORITIZED = False  # whether get_state holds priorities

    def __init__(self, capacity: int = 50_000, seed: int | None = None):
        self.capacity = capacity
        self.rng = np.random.default_rng(seed)
        self.num_steps_added_lifetime = self.num_episodes_evicted_lifetime = 0
        self._clear()

    def _clear(self) -> None:
        self.episodes: dict[str, SingleAgentEpisode] = {}  # by id_, oldest first
        self._slots: dict[str, np.ndarray] = {}  # the slot of each stored step, per episode
        self._slot_episode = np.full(self.capacity, None, dtype=object)  # slot -> episode id_
        self._slot_t = np.full(self.capacity, -1, dtype=np.int64)  # slot -> its step (-1: free)
        self._free = list(range(self.capacity - 1, -1, -1))  # a stack: taken from the end

    def __len__(self) -> int:
        """Env steps stored."""
        return self.capacity - len(self._free)

    def get_num_episodes(self) -> int:
        return len(self.episodes)

    def add(self, episodes: list[SingleAgentEpisode]) -> None:
        """Store episode chunks in the order they were sampled, evicting the oldest episodes.
        A chunk that cannot be stored raises ValueError before it changes the buffer (the chunks
        before it in `episodes` stay added)."""
        for chunk in episodes:
            if len(chunk) == 0:
                continue
            if len(chunk) > self.capacity:
                raise ValueError(f"An episode chunk of {len(chunk)} steps does not fit a replay "
                                 f"buffer of capacity {self.capacity}: raise its capacity.")
            # Model outputs are not needed for replay: drop them (less memory, simpler joins).
            chunk = SingleAgentEpisode(chunk.observations, chunk.actions, chunk.rewards, None,
                                       chunk.is_terminated, chunk.is_truncated, chunk.id_,
                                       chunk.t_started)
            joined = self._joined(chunk)  # may raise: so before evicting or taking slots
            while len(self._free) < len(chunk):
                self._evict_oldest()
            slots = np.array([self._free.pop() for _ in range(len(chunk))], dtype=np.int64)
            if chunk.id_ in self.episodes:  # the episode goes on: new steps follow stored ones
                self._place(joined, np.append(self._slots[chunk.id_], slots))
            else:  # a new episode, or one whose stored steps were just evicted
                self._place(chunk, slots)
            self._on_slots_added(slots)
            self.num_steps_added_lifetime += len(chunk)

    def _joined(self, chunk: SingleAgentEpisode) -> SingleAgentEpisode | None:
        """The stored episode with `chunk` appended (None if none is stored); ValueError if the
        chunk does not continue it."""
        stored = self.episodes.get(chunk.id_)
        if stored is None:
            return None
        try:
            return stored.concat_episode(chunk)
        except ValueError as e:
            hint = ("Add each chunk once, in the order it was sampled; an episode that ended takes "
                    "no more chunks (a new episode needs a new id_).")
            raise ValueError(f"{e} {hint}") from None

    def _place(self, episode: SingleAgentEpisode, slots: np.ndarray) -> None:
        """Store `episode` with its steps in `slots` (one per step, in order)."""
        self.episodes[episode.id_] = episode
        self._slots[episode.id_] = slots
        self._slot_episode[slots] = episode.id_
        self._slot_t[slots] = np.arange(len(episode))

    def _evict_oldest(self) -> None:
        id_ = next(iter(self.episodes))
        del self.episodes[id_]
        slots = self._slots.pop(id_)
        self._slot_episode[slots] = None
        self._slot_t[slots] = -1
        self._free.extend(slots[::-1].tolist())
        self._on_slots_freed(slots)
        self.num_episodes_evicted_lifetime += 1

    def _on_slots_added(self, slots: np.ndarray) -> None:
        """Hook for the prioritized buffer (new steps get priorities)."""

    def _on_slots_freed(self, slots: np.ndarray) -> None:
        """Hook for the prioritized buffer (evicted steps lose theirs)."""

    def sample(self, num_items: int, n_step: int = 1, gamma: float = 0.99) -> dict[str, np.ndarray]:
        """`num_items` n-step transitions drawn uniformly (with replacement): obs, actions, rewards
        (discounted n-step sums), new_obs, terminateds, n_step, weights (all 1) and indices."""
        self._check_sample(num_items, n_step)
        slots = self.rng.choice(np.flatnonzero(self._slot_t >= 0), size=num_items)
        return {**self._n_step_transitions(slots, n_step, gamma),
                "weights": np.ones(num_items, dtype=np.float32), "indices": slots}

    def _check_sample(self, num_items: int, n_step: int) -> None:
        if not isinstance(num_items, int | np.integer) or num_items < 1:
            raise ValueError(f"sample(num_items={num_items!r}): num_items is how many rows to "
                             "draw; give an int >= 1.")
        if len(self) == 0:
            raise ValueError("The replay buffer is empty: add episodes before sampling.")
        if not isinstance(n_step, int | np.integer) or n_step < 1:
            raise ValueError(f"sample(n_step={n_step!r}): n_step is how many rewards a row sums; "
                             "give an int >= 1 (1: one-step TD targets).")

    def _n_step_transitions(self, slots: np.ndarray, n_step: int, gamma: float
                            ) -> dict[str, np.ndarray]:
        """A row from step t of an episode with T steps stored sums n = min(n_step, T - t) rewards;
        it bootstraps from the observation after them unless it reaches a termination."""
        discounts = gamma ** np.arange(n_step)
        obs, actions, rewards, new_obs, terminateds, steps = [], [], [], [], [], []
        for slot in slots:
            episode = self.episodes[self._slot_episode[slot]]
            t = int(self._slot_t[slot])
            n = min(n_step, len(episode) - t)  # shorter at the episode's (stored) end
            obs.append(episode.observations[t])
            actions.append(episode.actions[t])
            rewards.append(episode.rewards[t:t + n] @ discounts[:n])
            new_obs.append(episode.observations[t + n])
            terminateds.append(episode.is_terminated and t + n == len(episode))
            steps.append(n)
        return {"obs": np.stack(obs), "actions": np.stack(actions),
                "rewards": np.array(rewards, dtype=np.float32), "new_obs": np.stack(new_obs),
                "terminateds": np.array(terminateds), "n_step": np.array(steps, dtype=np.int64)}

    def update_priorities(self, indices: np.ndarray, td_errors: np.ndarray) -> None:
        """Uniform replay has no priorities; the prioritized buffer overrides this."""

    def get_state(self) -> dict[str, Any]:
        """Plain data (serialization.to_plain): episodes, slots and RNG, to continue exactly."""
        return {"capacity": self.capacity,
                "episodes": [to_plain({"id_": e.id_, "t_started": e.t_started,
                                       "observations": e.observations, "actions": e.actions,
                                       "rewards": e.rewards, "is_terminated": e.is_terminated,
                                       "is_truncated": e.is_truncated, "slots": self._slots[e.id_]})
                             for e in self.episodes.values()],
                "free": self._free, "rng": to_plain(self.rng),
                "num_steps_added_lifetime": self.num_steps_added_lifetime,
                "num_episodes_evicted_lifetime": self.num_episodes_evicted_lifetime}

    def set_state(self, state: dict[str, Any]) -> None:
        """Continue from `get_state()` of a buffer with the same capacity; a state that is not whole
        and consistent (replay_buffer_state.py) raises CheckpointError and changes nothing."""
        saved = check_buffer_state(state, self.capacity, self.PRIORITIZED)
        # Build everything first: after _clear() nothing may fail, or the buffer would be lost.
        episodes = [(SingleAgentEpisode(e["observations"], e["actions"], e["rewards"], None,
                                        e["is_terminated"], e["is_truncated"], e["id_"],
                                        e["t_started"]), e["slots"]) for e in saved]
        rng = from_plain(state["rng"])
        self._clear()
        for episode, slots in episodes:
            self._place(episode, slots)
        self._free = list(state["free"])
        self.rng = rng
        self.num_steps_added_lifetime = state["num_steps_added_lifetime"]
        self.num_episodes_evicted_lifetime = state["num_episodes_evicted_lifetime"]
