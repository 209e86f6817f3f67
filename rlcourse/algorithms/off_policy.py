"""The replay pieces DQN, SAC and Ape-X DQN share, as plain functions that each algorithm's own
`training_step` calls (RLlib's dqn.py holds the same)."""

from typing import Any

import numpy as np

from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.algorithms.config_validation import check_bool, check_int, check_number, is_int, is_number
from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.replay_buffers import EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer
from rlcourse.utils.replay_buffers.replay_buffer_state import check_buffer_state
from rlcourse.utils.state_values import check_counter, check_in_space
from rlcourse.utils.validation import fail

REPLAY_BUFFERS = ("EpisodeReplayBuffer", "PrioritizedEpisodeReplayBuffer")
REPLAY_BUFFER_KEYS = {"type", "capacity", "alpha", "beta"}


def check_replay_settings(config: AlgorithmConfig, tau_hint: str, extra_buffer_keys: tuple = ()
                          ) -> None:
    """The settings every replay-based algorithm shares; the buffer holds at least a train batch."""
    check_bool(config, "store_buffer_in_checkpoints", "True or False")
    check_int(config, "n_step", 1)
    check_number(config, "tau", 0.0, 1.0, low_open=True, hint=tau_hint)
    check_int(config, "target_network_update_freq", 0)
    check_int(config, "num_steps_sampled_before_learning_starts", 0)
    if config.training_intensity is not None:
        check_number(config, "training_intensity", 0.0, low_open=True,
                     hint="Or None for one update per training_step.")
    rb, keys = config.replay_buffer_config, REPLAY_BUFFER_KEYS | set(extra_buffer_keys)
    if not isinstance(rb, dict):
        fail(config, "replay_buffer_config", f"pass a dict with keys {sorted(keys)}.")
    if unknown := sorted(set(rb) - keys):
        fail(config, "replay_buffer_config", f"unknown keys {unknown}; its keys are {sorted(keys)} "
             "(rlcourse's buffers store env steps, so RLlib's 'storage_unit' is not one).")
    if rb.get("type") not in REPLAY_BUFFERS:
        fail(config, "replay_buffer_config", f"'type' must be one of {sorted(REPLAY_BUFFERS)}.")
    if not is_int(capacity := rb.get("capacity")):
        fail(config, "replay_buffer_config", "'capacity' (env steps) must be a whole number, "
             "e.g. 50000 (not 5e4).")
    if capacity < config.total_train_batch_size:
        fail(config, "replay_buffer_config", f"its capacity {capacity!r} (env steps) is smaller "
             f"than a train batch ({config.total_train_batch_size} rows): raise 'capacity' "
             "(e.g. 50000) or lower train_batch_size_per_learner.")
    if rb["type"] == "PrioritizedEpisodeReplayBuffer":
        if not (is_number(rb.get("alpha")) and rb["alpha"] >= 0):
            fail(config, "replay_buffer_config", "'alpha' must be a finite number >= 0 (0: uniform).")
        if not (is_number(rb.get("beta")) and 0 <= rb["beta"] <= 1):
            fail(config, "replay_buffer_config", "'beta' must be a number in [0, 1].")


def check_schedule(config: AlgorithmConfig, setting: str) -> None:
    """A schedule `scheduled_value` reads: [[timestep, value], ...], timesteps whole and increasing,
    values in [0, 1] (DQN's epsilon)."""
    fix = ("use [[timestep, value], ...] with timesteps that increase and values in [0, 1], "
           "e.g. [[0, 1.0], [10000, 0.05]].")
    pairs = getattr(config, setting)
    if not (isinstance(pairs, list | tuple) and pairs and all(
            isinstance(p, list | tuple) and len(p) == 2 and is_number(p[1]) and 0 <= p[1] <= 1
            for p in pairs)):
        fail(config, setting, fix)
    steps = [t for t, _ in pairs]
    if not all(is_int(t) and t >= 0 for t in steps):
        fail(config, setting, f"its timesteps {steps} must be whole numbers >= 0 (10000, not "
             "1e4): " + fix)
    if steps != sorted(set(steps)):
        fail(config, setting, f"its timesteps {steps} do not increase: " + fix)


# -- the loop's pieces --------------------------------------------------------------------------

def build_replay_buffer(config: AlgorithmConfig) -> EpisodeReplayBuffer:
    """The buffer `replay_buffer_config` describes, seeded by the config's seed."""
    rb = config.replay_buffer_config
    if rb["type"] == "PrioritizedEpisodeReplayBuffer":
        return PrioritizedEpisodeReplayBuffer(int(rb["capacity"]), rb["alpha"], rb["beta"],
                                              seed=config.seed)
    return EpisodeReplayBuffer(int(rb["capacity"]), seed=config.seed)


def learning_started(config: AlgorithmConfig, num_env_steps_sampled_lifetime: int,
                     num_env_steps_stored: int) -> bool:
    """Whether `num_steps_sampled_before_learning_starts` were sampled and a train batch stored."""
    return (num_env_steps_sampled_lifetime >= config.num_steps_sampled_before_learning_starts
            and num_env_steps_stored >= config.total_train_batch_size)


def num_updates_due(config: AlgorithmConfig, update_credit: float, num_env_steps_sampled: int
                    ) -> tuple[int, float]:
    """(updates owed for `num_env_steps_sampled` new env steps, the credit left over): env steps
    trained / sampled = `training_intensity` on average (None: one update per training_step)."""
    if config.training_intensity is None:
        return 1, update_credit
    update_credit += (config.training_intensity * num_env_steps_sampled
                      / config.total_train_batch_size)
    updates = int(update_credit)
    return updates, update_credit - updates


def update_from_replay(config: AlgorithmConfig, buffer: EpisodeReplayBuffer, learner_group: Any,
                       num_updates: int, num_env_steps_sampled_lifetime: int
                       ) -> list[dict[str, Any]]:
    """`num_updates` times: replay a train batch of n-step rows, update the learners on it and give
    its rows their new TD errors as priorities. Returns each update's results."""
    results = []
    for _ in range(num_updates):
        batch = buffer.sample(config.total_train_batch_size, n_step=config.n_step,
                              gamma=config.gamma)
        result = learner_group.update_from_batch(
            batch, num_env_steps_sampled_lifetime=num_env_steps_sampled_lifetime)
        buffer.update_priorities(batch["indices"], result.pop("td_error"))
        results.append(result)
    return results


def mean_learner_results(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The updates' statistics averaged, plus how many env steps (rows) and updates there were."""
    mean = {k: float(np.mean([r[k] for r in results])) for k in results[0]} if results else {}
    mean.update(num_env_steps_trained=sum(r["num_env_steps_trained"] for r in results),
                num_updates=len(results))
    return mean


def scheduled_value(schedule: list, timestep: int) -> float:
    """A piecewise-linear schedule in RLlib's form, [[timestep, value], ...], at `timestep` (the
    first value before it starts, the last after): DQN's epsilon."""
    steps, values = zip(*schedule, strict=True)
    return float(np.interp(timestep, steps, values))


def epsilon_greedy(greedy_actions: np.ndarray, epsilon: float, action_space: Any,
                   rng: np.random.Generator) -> np.ndarray:
    """`greedy_actions` of a Discrete space, each replaced with probability `epsilon` by a random
    one: DQN's and Ape-X's `compute_actions(explore=True)`."""
    explore_rows = rng.random(len(greedy_actions)) < epsilon
    random_actions = action_space.start + rng.integers(action_space.n, size=len(greedy_actions))
    return np.where(explore_rows, random_actions, greedy_actions)


# -- checkpoints: the buffer is saved only with store_buffer_in_checkpoints ----------------------

def replay_state(config: AlgorithmConfig, buffer: EpisodeReplayBuffer, update_credit: float
                 ) -> dict[str, Any]:
    """What DQN and SAC add to the Algorithm's state (under the key "dqn")."""
    return {"update_credit": update_credit,
            "replay_buffer": buffer.get_state() if config.store_buffer_in_checkpoints else None}


def set_replay_state(state: dict[str, Any], buffer: EpisodeReplayBuffer) -> float:
    """Fill `buffer` from `replay_state()`'s output (if it was saved); return the update credit."""
    if state["replay_buffer"] is not None:
        buffer.set_state(state["replay_buffer"])
    return state["update_credit"]


def check_replay_state(state: dict[str, Any], key: str, capacity: int, prioritized: bool,
                       spaces: tuple, shards: int | None = None) -> None:
    """Refuse, before anything is restored, `state[key]` unless its counters and its saved buffer
    (or `shards` of them: Ape-X) fit this algorithm's capacity and `spaces`."""
    saved, field = state.get(key), "replay_buffer" if shards is None else "replay_shards"
    if not isinstance(saved, dict) or not {"update_credit", field} <= set(saved):
        raise CheckpointError(f"{key} is missing or lacks update_credit / {field}.")
    check_counter(saved["update_credit"], f"{key}.update_credit", number=True)
    if "steps_since_sync" in saved:
        check_counter(saved["steps_since_sync"], f"{key}.steps_since_sync")
    buffers, where = saved[field], f"{key}.{field}"
    fix = "use the checkpoint's replay_buffer_config, or Algorithm.from_checkpoint(path)."
    if buffers is None:
        return
    if shards is None:
        buffers = [buffers]
    elif not isinstance(buffers, list) or len(buffers) != shards:
        count = len(buffers) if isinstance(buffers, list) else buffers
        raise CheckpointError(f"The checkpoint holds {count} replay shards, this algorithm "
                              f"{shards}: {fix}")
    for i, buffer in enumerate(buffers):
        here = where if shards is None else f"{where}[{i}]"
        if isinstance(buffer, dict) and buffer.get("capacity") != capacity:
            raise CheckpointError(f"{here}: the checkpoint's replay buffer holds "
                                  f"{buffer.get('capacity')} env steps, this algorithm's "
                                  f"{capacity}: {fix}")
        for j, episode in enumerate(check_buffer_state(buffer, capacity, prioritized, here)):
            check_in_space(episode["observations"], spaces[0], f"{here}.episodes[{j}].observations")
            check_in_space(episode["actions"], spaces[1], f"{here}.episodes[{j}].actions")
