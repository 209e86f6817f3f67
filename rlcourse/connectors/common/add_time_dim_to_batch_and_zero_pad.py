"""Sequences for a stateful module (RLlib's AddTimeDimToBatchAndZeroPad and
AddStatesFromEpisodesToBatch): each episode chunk cut into sequences of `max_seq_len` steps, zero-
padded to [S, max_seq_len, ...] with a mask False on the padding, each from the STATE_IN its runner
stored for its first step. Sequences never cross episodes."""

import numpy as np

from rlcourse.core import ALL_OBS_MASK, LOSS_MASK, STATE_IN, STATE_OUT


def sequence_lengths(chunk_lengths: list[int], max_seq_len: int) -> np.ndarray:
    """The lengths of the sequences the chunks are cut into, in order: [max_seq_len, ..., rest]."""
    if max_seq_len < 1:
        raise ValueError(f"max_seq_len must be at least 1, got {max_seq_len}.")
    return np.array([min(max_seq_len, n - start) for n in chunk_lengths
                     for start in range(0, n, max_seq_len)], dtype=np.int64)


def zero_pad(steps: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Flat per-step values [N, ...] (sequences one after another) as [S, max_seq_len, ...], zeros
    where `mask` is False. `padded[mask]` gives the flat values back."""
    padded = np.zeros((*mask.shape, *steps.shape[1:]), dtype=steps.dtype)
    padded[mask] = steps
    return padded


def add_time_dim(flat: dict[str, np.ndarray], chunk_lengths: list[int], max_seq_len: int,
                 columns: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The per-step `columns` of flattened chunks (`flatten_episodes`) as padded sequences, with
    LOSS_MASK [S, max_seq_len] and STATE_IN [S, ...]: the stored state of each one's first step."""
    seq_lens = sequence_lengths(chunk_lengths, max_seq_len)
    mask = np.arange(max_seq_len)[None] < seq_lens[:, None]
    starts = np.cumsum(seq_lens) - seq_lens
    return {**{key: zero_pad(flat[key], mask) for key in columns},
            STATE_IN: flat[STATE_IN][starts], LOSS_MASK: mask}


def add_time_dim_to_all_obs(flat: dict[str, np.ndarray], max_seq_len: int) -> dict[str, np.ndarray]:
    """Each chunk's n+1 observations (`all_obs`, the bootstrap one last, its state the chunk's last
    STATE_OUT) as padded sequences with ALL_OBS_MASK and STATE_IN: one forward pass gives every V
    and the bootstrap value (RLlib's AddOneTsToEpisodesAndTruncate)."""
    is_last = np.ones(len(flat["all_obs"]), dtype=bool)
    is_last[flat["obs_index"]] = False
    states = np.empty((len(is_last), *flat[STATE_IN].shape[1:]), flat[STATE_IN].dtype)
    states[~is_last], states[is_last] = flat[STATE_IN], flat[STATE_OUT][flat["chunk_ends"]]
    lengths = np.diff(np.flatnonzero(is_last), prepend=-1).tolist()  # n+1 per chunk
    seqs = add_time_dim({"all_obs": flat["all_obs"], STATE_IN: states}, lengths, max_seq_len,
                        ("all_obs",))
    return {"all_obs": seqs["all_obs"], STATE_IN: seqs[STATE_IN], ALL_OBS_MASK: seqs[LOSS_MASK]}
