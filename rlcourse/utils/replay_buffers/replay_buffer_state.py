"""Whether a saved replay buffer's state (EpisodeReplayBuffer.get_state) is whole and consistent,
checked before a buffer takes any of it: a checkpoint's SHA-256s catch damage, not edits."""

from typing import Any

import numpy as np

from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.state_values import (
    check_array,
    check_counter,
    check_generator,
    decode,
    is_count,
)

EPISODE_KEYS = {"id_", "t_started", "observations", "actions", "rewards", "is_terminated",
                "is_truncated", "slots"}


def _fail(where: str, problem: str) -> None:
    raise CheckpointError(f"{where} {problem}")


def check_episode(saved: dict[str, Any], where: str, capacity: int) -> None:
    """One saved episode: its arrays' lengths agree (one observation more than actions) and its
    slots are in range, and it is not both terminated and truncated."""
    if not isinstance(saved, dict) or set(saved) != EPISODE_KEYS:
        _fail(where, f"must be a dict with keys {sorted(EPISODE_KEYS)}.")
    n = len(check_array(saved["rewards"], f"{where}.rewards", ndim=1))
    check_array(saved["actions"], f"{where}.actions", rows=n)
    check_array(saved["observations"], f"{where}.observations", rows=n + 1)  # and the last one
    slots = check_array(saved["slots"], f"{where}.slots", "iu", ndim=1, rows=n)
    if n == 0 or slots.min() < 0 or slots.max() >= capacity:
        _fail(f"{where}.slots", f"must be {n} (>= 1) slots in [0, {capacity}).")
    if not isinstance(saved["id_"], str) or not is_count(saved["t_started"]):
        _fail(where, "needs a str id_ and an int t_started >= 0.")
    if not all(isinstance(saved[k], bool) for k in ("is_terminated", "is_truncated")):
        _fail(where, "needs bool is_terminated and is_truncated.")
    if saved["is_terminated"] and saved["is_truncated"]:  # SingleAgentEpisode would refuse it
        _fail(where, "is both terminated and truncated; an episode ends one way: set at most one.")


def check_buffer_state(state: Any, capacity: int, prioritized: bool,
                       where: str = "replay_buffer") -> list[dict[str, Any]]:
    """Raise CheckpointError unless `state` is a whole, consistent buffer of `capacity` slots;
    return its decoded episodes."""
    keys = {"capacity", "episodes", "free", "rng", "num_steps_added_lifetime",
            "num_episodes_evicted_lifetime", *(("priorities", "max_priority") if prioritized else ())}
    if not isinstance(state, dict) or set(state) != keys:
        _fail(where, f"must be a dict with keys {sorted(keys)}.")
    if state["capacity"] != capacity:
        _fail(f"{where}.capacity", f"is {state['capacity']!r}, this buffer's {capacity}.")
    for key in ("num_steps_added_lifetime", "num_episodes_evicted_lifetime"):
        check_counter(state[key], f"{where}.{key}")
    if not isinstance(state["episodes"], list) or not isinstance(state["free"], list):
        _fail(where, "needs lists 'episodes' and 'free'.")
    episodes = [decode(e, f"{where}.episodes[{i}]") for i, e in enumerate(state["episodes"])]
    for i, saved in enumerate(episodes):
        check_episode(saved, f"{where}.episodes[{i}]", capacity)
    if len({e["id_"] for e in episodes}) != len(episodes):
        _fail(f"{where}.episodes", "has two episodes with the same id_.")
    free = state["free"]
    if not all(is_count(s) for s in free):
        _fail(f"{where}.free", "must be ints >= 0.")
    stored = np.concatenate([np.zeros(0, np.int64)] + [e["slots"] for e in episodes])
    used = np.concatenate([stored, np.asarray(free, dtype=np.int64)])
    if len(used) != capacity or len(np.unique(used)) != capacity:
        _fail(where, f"uses its slots more than once or leaves some out: the episodes' slots and "
                     f"'free' must together be each of 0..{capacity - 1} once.")
    check_generator(state["rng"], f"{where}.rng")
    if prioritized:
        priorities = check_array(decode(state["priorities"], f"{where}.priorities"),
                                 f"{where}.priorities", "f", ndim=1)
        if len(priorities) != capacity or (priorities < 0).any():
            _fail(f"{where}.priorities", f"must be {capacity} numbers >= 0 (one per slot).")
        if priorities[free].any() or not (priorities[stored] > 0).all():
            _fail(f"{where}.priorities", "must be > 0 on stored steps and 0 on free slots.")
        top = state["max_priority"]
        if not (isinstance(top, int | float) and not isinstance(top, bool) and 0 < top < np.inf):
            _fail(f"{where}.max_priority", f"is {top!r}; expected a finite number > 0.")
    return episodes
