"""check_add_time_dim (lesson 12) accepts right zero-padded sequences, agrees with rlcourse's learner
connector, and names each typical mistake in its hint."""

import numpy as np
import pytest

from rlcourse.course.exercises import ExerciseError, check_add_time_dim
from rlcourse.course.exercises.common import solution_source


def solution():
    namespace = {}
    exec(solution_source("zero_padded_sequences"), namespace)
    return namespace["my_add_time_dim"]


def make_answer(*, across=False, count=lambda n, size: -(-n // size), pad_front=False,
                mask_padding=False, mask_from_values=False, first="stored"):
    """A loop over sequences; the keywords plant one typical mistake."""

    def my_add_time_dim(values, chunk_lengths, states_in, max_seq_len):
        chunks = [len(values)] if across else chunk_lengths
        padded, mask, firsts, chunk_start = [], [], [], 0
        for n in chunks:
            for k in range(count(n, max_seq_len)):
                start = chunk_start + k * max_seq_len
                steps = values[start:min(start + max_seq_len, chunk_start + n)]
                row = np.zeros((max_seq_len, *values.shape[1:]), values.dtype)
                real = np.zeros(max_seq_len, bool)
                where = slice(max_seq_len - len(steps), None) if pad_front else slice(len(steps))
                row[where], real[where] = steps, True
                padded.append(row)
                mask.append(np.ones(max_seq_len, bool) if mask_padding
                            else row.reshape(max_seq_len, -1).any(1) if mask_from_values else real)
                index = {"stored": start, "chunk": chunk_start, "last": start + len(steps) - 1}
                firsts.append(np.zeros_like(states_in[0]) if first == "zeros"
                              else states_in[index[first]])
            chunk_start += n
        return np.array(padded), np.array(mask), np.array(firsts)

    return my_add_time_dim


def unpadded(values, lengths, size):
    """Each chunk cut into sequences, the short ones left unpadded."""
    starts = np.cumsum([0, *lengths])
    return [values[a:min(a + size, end)] for start, end in zip(starts, starts[1:], strict=False)
            for a in range(start, end, size)]


def test_right_answers_pass_and_are_returned(capsys):
    loop = make_answer()
    assert check_add_time_dim(loop) is loop
    assert check_add_time_dim(solution()) is not None
    assert capsys.readouterr().out.count("Correct") == 2


def test_the_untouched_stub_is_not_attempted_and_the_reference_goes_on(capsys):
    def my_add_time_dim(values, chunk_lengths, states_in, max_seq_len):
        raise NotImplementedError("TODO")

    reference = check_add_time_dim(my_add_time_dim)
    assert "Not attempted" in capsys.readouterr().out
    padded, mask, first = reference(np.arange(5.0)[:, None], [3, 2], np.arange(5.0)[:, None], 2)
    assert mask.tolist() == [[True, True], [True, False], [True, True]]
    assert first[:, 0].tolist() == [0, 2, 3] and padded[1, 1, 0] == 0


def evened_out(values, chunk_lengths, states_in, max_seq_len):
    """Each chunk cut into ceil(n / max_seq_len) pieces of (nearly) equal length: 7 -> 3 + 2 + 2."""
    pieces, start = [], 0
    for n in chunk_lengths:
        pieces += np.array_split(np.arange(start, start + n), -(-n // max_seq_len))
        start += n
    padded = np.zeros((len(pieces), max_seq_len, *values.shape[1:]), values.dtype)
    mask = np.zeros((len(pieces), max_seq_len), bool)
    for i, piece in enumerate(pieces):
        padded[i, :len(piece)], mask[i, :len(piece)] = values[piece], True
    return padded, mask, states_in[[piece[0] for piece in pieces]]


@pytest.mark.parametrize(("answer", "hint"), [
    (make_answer(across=True), "across the end of a chunk"),
    (make_answer(count=lambda n, size: n // size), "after a chunk's last full sequence"),
    (make_answer(count=lambda n, size: n // size + 1), "extra, empty sequence"),
    (make_answer(pad_front=True), "padding comes before the real steps"),
    (make_answer(mask_padding=True), "True on the padding too"),
    (make_answer(mask_from_values=True), "steps whose values are not 0"),
    (make_answer(first="zeros"), "every sequence starts from zeros"),
    (make_answer(first="chunk"), "the chunk's first state"),
    (make_answer(first="last"), "last step"),
    (lambda values, lengths, states, size: (values, np.ones(len(values), bool), states),
     "differ; expected shapes"),
    (lambda values, lengths, states, size: [values[i:i + size] for i in range(0, len(values), size)],
     "return three arrays"),
    (lambda values, lengths, states, size: (unpadded(values, lengths, size), 0, 0), "ragged"),
    (evened_out, r"Case 5 \(chunk lengths \[7, 10\], max_seq_len=3\): padded, mask, first_states"),
    (lambda *args: (lambda p, m, f: (p.astype(int), m, f))(*solution()(*args)),
     "Case 1 .*: padded differ"),
])
def test_wrong_answers_are_rejected_with_a_hint(answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_add_time_dim(answer)


def test_a_float_mask_is_named():
    right = solution()
    with pytest.raises(ExerciseError, match="not boolean"):
        check_add_time_dim(lambda *args: (lambda p, m, f: (p, m.astype(float), f))(*right(*args)))


def test_an_answer_that_writes_into_its_inputs_is_named():
    def in_place(values, chunk_lengths, states_in, max_seq_len):
        values[:] = 0
        return solution()(values, chunk_lengths, states_in, max_seq_len)

    with pytest.raises(ExerciseError, match="in place"):
        check_add_time_dim(in_place)
