"""Sequences for a stateful module (RLlib's AddTimeDimToBatchAndZeroPad and
AddStatesFromEpisodesToBatch): each episode chunk is cut into sequences of `max_seq_len` steps (the
last one shorter), zero-padded to [S, max_seq_len, ...] with a mask that is False on the padding;
each sequence starts from the STATE_IN its runner stored for its first step, so a chunk cut between
two `sample()` calls continues from the state it ended with. Sequences never cross episodes."""

import numpy as np

from rlcourse.core import LOSS_MASK, STATE_IN


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
