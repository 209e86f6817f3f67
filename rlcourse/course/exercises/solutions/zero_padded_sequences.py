import numpy as np


def my_add_time_dim(values, chunk_lengths, states_in, max_seq_len):
    """Each chunk cut on its own into sequences of max_seq_len steps, zeros after the real steps."""
    starts, lengths = [], []  # each sequence's first step (in the flat arrays) and length
    chunk_start = 0
    for n in chunk_lengths:
        for offset in range(0, n, max_seq_len):  # ceil(n / max_seq_len) sequences
            starts.append(chunk_start + offset)
            lengths.append(min(max_seq_len, n - offset))
        chunk_start += n
    padded = np.zeros((len(starts), max_seq_len, *values.shape[1:]), values.dtype)
    mask = np.zeros((len(starts), max_seq_len), bool)
    for i, (start, length) in enumerate(zip(starts, lengths, strict=True)):
        padded[i, :length] = values[start:start + length]
        mask[i, :length] = True
    return padded, mask, states_in[starts]  # each sequence starts from its first step's state
