"""Lesson 12's exercise: what the learner does before a stateful module's loss, cutting episode chunks
into zero-padded sequences of `max_seq_len` steps with a mask and each sequence's first state.

The learner writes

    my_add_time_dim(values, chunk_lengths, states_in, max_seq_len) -> (padded, mask, first_states)

`values` [N, ...] and `states_in` [N, ...] hold the chunks' steps one chunk after another
(`chunk_lengths` of them each); the answer is rlcourse's `add_time_dim`
(connectors/common/add_time_dim_to_batch_and_zero_pad.py): padded [S, max_seq_len, ...] with zeros
after each sequence's real steps, mask [S, max_seq_len] True on the real steps, first_states [S, ...]
the stored state of each sequence's first step. `check_add_time_dim` compares on five cases of its
own (chunks shorter than, equal to and longer than max_seq_len, a multiple of it, a chunk of one
step, chunks that a cut into equal parts would split differently, real values of 0, vector states)
and names the mistake when one of the typical ones matches.
Inputs are read-only. The stub is reported as not attempted; the lesson goes on with `add_time_dim`.

Review, what answer would still pass that should not? One that recognises the checker's five cases
and returns their arrays; one correct for 1-D values and states but not for images (the cases have
values [N, 2] and states [N, 2, 3] only); any padding value other than 0 is refused, although the
loss's mask would make it harmless.
"""

from collections.abc import Callable

import numpy as np

from rlcourse.connectors.common.add_time_dim_to_batch_and_zero_pad import add_time_dim
from rlcourse.core import LOSS_MASK, STATE_IN
from rlcourse.course.exercises.common import ExerciseError, call, exercise, passed

__all__ = ["check_add_time_dim", "reference_add_time_dim"]

Answer = tuple[np.ndarray, np.ndarray, np.ndarray]


def reference_add_time_dim(values: np.ndarray, chunk_lengths: list[int], states_in: np.ndarray,
                           max_seq_len: int) -> Answer:
    """rlcourse's learner connector on the flat steps."""
    out = add_time_dim({"values": values, STATE_IN: states_in}, list(chunk_lengths), max_seq_len,
                       ("values",))
    return out["values"], out[LOSS_MASK], out[STATE_IN]


def _cut(values: np.ndarray, lengths: list[int], states: np.ndarray, size: int, *,
         cross: bool = False, front: bool = False, extra: bool = False, drop: bool = False,
         first: str = "stored") -> Answer:
    """The cut with one typical mistake planted by a keyword."""
    lengths = [sum(lengths)] if cross else lengths
    rows, masks, firsts, start = [], [], [], 0
    for n in lengths:
        count = n // size + 1 if extra else n // size if drop else -(-n // size)
        for k in range(count):
            begin = start + k * size
            seq = values[begin:min(begin + size, start + n)]
            row = np.zeros((size, *values.shape[1:]), values.dtype)
            mask = np.zeros(size, bool)
            where = slice(size - len(seq), size) if front else slice(0, len(seq))
            row[where], mask[where] = seq, True
            rows.append(row)
            masks.append(mask)
            at = {"stored": begin, "chunk": start, "last": begin + len(seq) - 1}.get(first)
            firsts.append(np.zeros_like(states[0]) if at is None else states[min(at, len(states) - 1)])
        start += n
    return np.array(rows), np.array(masks), np.array(firsts)


def _mistakes(values: np.ndarray, lengths: list[int], states: np.ndarray, size: int
              ) -> list[tuple[Answer, str]]:
    padded, mask, first = reference_add_time_dim(values, lengths, states, size)
    return [
        (_cut(values, lengths, states, size, cross=True),
         "your sequences run across the end of a chunk into the next one: an LSTM would carry one "
         "episode's memory into another. Cut each chunk on its own (the last sequence of a chunk is "
         "shorter, and padded)."),
        (_cut(values, lengths, states, size, drop=True),
         "the steps after a chunk's last full sequence are missing: a chunk of n steps gives "
         "ceil(n / max_seq_len) sequences, the last one shorter and padded."),
        (_cut(values, lengths, states, size, extra=True),
         "a chunk whose length is a multiple of max_seq_len gets an extra, empty sequence: "
         "ceil(n / max_seq_len) sequences, not n // max_seq_len + 1."),
        (_cut(values, lengths, states, size, front=True),
         "your padding comes before the real steps: the LSTM would step through zeros first and "
         "start from the wrong state. Real steps first, zeros after."),
        ((padded, np.ones_like(mask), first),
         "your mask is True on the padding too: the loss would count the zeros as steps. It is "
         "True only where a real step is."),
        ((padded, padded.reshape(*mask.shape, -1).any(-1), first),
         "your mask marks the steps whose values are not 0: a real step can be all zeros. Build "
         "the mask from the sequence lengths."),
        (_cut(values, lengths, states, size, first="zeros"),
         "every sequence starts from zeros: only a new episode starts there. A sequence that "
         "continues an episode starts from states_in at its first step, the state the runner had."),
        (_cut(values, lengths, states, size, first="chunk"),
         "every sequence of a chunk starts from the chunk's first state: the second one starts "
         "where the first one ended, states_in at its own first step."),
        (_cut(values, lengths, states, size, first="last"),
         "first_states are taken at each sequence's last step: take states_in at its first step."),
    ]


def _same(got: Answer, want: Answer) -> bool:
    return all(np.shape(g) == np.shape(w) and np.allclose(np.asarray(g, float), w)
               for g, w in zip(got, want, strict=True))


def _cases() -> list[tuple[np.ndarray, list[int], np.ndarray, int]]:
    rng = np.random.default_rng(12)
    cases = []
    # The last: chunks of 7 and 10 cut into 3 + 3 + 1 and 3 + 3 + 3 + 1 steps, not evened out.
    for lengths, size in (([5, 3], 2), ([4, 1, 7], 4), ([6], 3), ([2, 9, 3], 5), ([7, 10], 3)):
        n = sum(lengths)
        values = rng.normal(size=(n, 2)).round(2).astype(np.float32)  # not whole: an int array fails
        values[1] = 0.0  # a real step that is all zeros
        states = rng.normal(size=(n, 2, 3)).astype(np.float32)
        cases.append((values, lengths, states, size))
    return cases


def _read_only(array: np.ndarray) -> np.ndarray:
    copy = array.copy()
    copy.setflags(write=False)
    return copy


@exercise("zero_padded_sequences", stub="my_add_time_dim", fallback="rlcourse's add_time_dim",
          reference=lambda fn: reference_add_time_dim)
def check_add_time_dim(my_add_time_dim: Callable[[np.ndarray, list[int], np.ndarray, int], Answer]
                       ) -> Callable[[np.ndarray, list[int], np.ndarray, int], Answer]:
    """Check `my_add_time_dim` against rlcourse's learner connector on five cases; raise
    ExerciseError with a hint if it differs. Returns `my_add_time_dim` when it is right."""
    for number, (values, lengths, states, size) in enumerate(_cases(), 1):
        got = call(my_add_time_dim, _read_only(values), tuple(lengths), _read_only(states), size,
                   where=f"case {number}")
        if not isinstance(got, tuple | list) or len(got) != 3:
            raise ExerciseError(f"my_add_time_dim returned {type(got).__name__}; return three "
                                "arrays: (padded, mask, first_states).")
        try:
            got = tuple(np.asarray(x) for x in got)
        except ValueError:
            raise ExerciseError("one of your arrays is ragged (sequences of different lengths): "
                                "pad each sequence with zeros to max_seq_len steps.") from None
        want = reference_add_time_dim(values, lengths, states, size)
        if _same(got, want) and got[1].dtype == bool:
            continue
        if _same(got, want):
            raise ExerciseError("your mask is right but not boolean: make it a bool array "
                                "(padded[mask] must select the real steps).")
        for wrong, hint in _mistakes(values, lengths, states, size):
            if _same(got, wrong):
                raise ExerciseError(f"Case {number}: {hint}")
        names = [name for name, g, w in zip(("padded", "mask", "first_states"), got, want,
                                            strict=True) if not _same((g,), (w,))]
        raise ExerciseError(
            f"Case {number} (chunk lengths {lengths}, max_seq_len={size}): {', '.join(names)} "
            f"differ; expected shapes {[w.shape for w in want]}, got {[g.shape for g in got]}. "
            "Hint: each chunk of n steps gives ceil(n / max_seq_len) sequences, real steps first "
            "and zeros after; the mask is True on real steps; first_states[i] = states_in at "
            "sequence i's first step.")
    passed("your sequences, masks and first states match rlcourse's learner connector on 5 cases "
           "(chunk ends, a one-step chunk, real zeros among the steps).")
    return my_add_time_dim
