"""Lesson 02's exercise: Generalized Advantage Estimation for one episode chunk, written by hand.

The learner writes `gae(episode, values, gamma, lambda_)`; `check_gae` compares it with the
Learner's own `rlcourse.utils.postprocessing.compute_gae` on chunks that end in each possible way, and
names the case (and the likely mistake) when they differ. Inputs are passed read-only, so an
answer that changes them in place is refused. The stub is reported as not attempted and the lesson
goes on with `reference_gae_fn`.

Review, what answer would still pass that should not? None known beyond hard-coding the checker's
chunks. No chunk uses the lesson's gamma=0.99 with lambda_=0.95, so reading config.gamma fails (and
is named). A chunk both terminated and truncated cannot exist (SingleAgentEpisode refuses it; the
runner records a termination on the time limit's step as terminated), so it is not a case here.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rlcourse.course.exercises.common import ExerciseError, call, exercise, passed
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.postprocessing import compute_gae

__all__ = ["check_gae"]

LESSON = (0.99, 0.95)  # the lesson's config.gamma and config.lambda_
GaeFunction = Callable[[SingleAgentEpisode, np.ndarray, float, float], np.ndarray]


@dataclass(frozen=True)
class Case:
    """One chunk to test on: `values` are V(s_0) ... V(s_n), one per observation."""

    name: str
    rewards: np.ndarray
    values: np.ndarray
    terminated: bool = False
    truncated: bool = False
    gamma: float = 0.9
    lambda_: float = 0.8

    def episode(self) -> SingleAgentEpisode:
        """The chunk as a SingleAgentEpisode whose arrays are read-only (as Ray returns them)."""
        n = len(self.rewards)
        episode = SingleAgentEpisode(np.arange(n + 1, dtype=np.float32)[:, None],
                                     np.zeros(n, dtype=np.int64), self.rewards.copy(),
                                     {"action_logp": np.zeros(n, dtype=np.float32)},
                                     is_terminated=self.terminated, is_truncated=self.truncated)
        for array in (episode.observations, episode.actions, episode.rewards):
            array.setflags(write=False)
        return episode


def _random_case(name: str, n: int, seed: int, **kwargs) -> Case:
    rng = np.random.default_rng(seed)
    return Case(name, rng.normal(size=n).astype(np.float32), rng.normal(size=n + 1), **kwargs)


CASES = [
    Case("a terminated chunk", np.array([1.0, 2.0, 3.0], np.float32),
         np.array([0.5, 1.0, 1.5, 99.0]), terminated=True),
    Case("a truncated chunk (a time limit ended it)", np.array([1.0, 2.0, 3.0], np.float32),
         np.array([0.5, 1.0, 1.5, 2.0]), truncated=True),
    Case("an ongoing chunk (the episode goes on in the next chunk)",
         np.array([1.0, 2.0, 3.0], np.float32), np.array([0.5, 1.0, 1.5, -1.0])),
    Case("a one-step terminated chunk", np.array([1.0], np.float32), np.array([0.3, 5.0]),
         terminated=True),
    _random_case("a truncated chunk with lambda_=0 (one-step TD errors)", 6, 0, truncated=True,
                 gamma=0.99, lambda_=0.0),
    _random_case("an ongoing chunk with gamma=1, lambda_=1 (returns minus values)", 5, 1,
                 gamma=1.0, lambda_=1.0),
    _random_case("a 50-step terminated chunk (gamma=0.99, lambda_=0.95)", 50, 2, terminated=True,
                 gamma=0.99, lambda_=0.95),
    _random_case("a 50-step truncated chunk (gamma=0.99, lambda_=0.95)", 50, 3, truncated=True,
                 gamma=0.99, lambda_=0.95),
]


def reference_gae(case: Case, terminated: bool | None = None, gamma: float | None = None,
                  carry: float | None = None, lambda_: float | None = None) -> np.ndarray:
    """The Learner's advantages for `case`; the keyword arguments model typical mistakes."""
    n = len(case.rewards)
    gamma = case.gamma if gamma is None else gamma
    lambda_ = case.lambda_ if lambda_ is None else lambda_
    terminated = case.terminated if terminated is None else terminated
    terminateds = np.zeros(n, dtype=bool)
    terminateds[-1] = terminated
    chunk_ends = np.zeros(n, dtype=bool)
    chunk_ends[-1] = True
    if carry is None:
        advantages, _ = compute_gae(case.rewards.astype(np.float64), case.values[:-1],
                                    case.values[1:], terminateds, chunk_ends, gamma, lambda_)
        return advantages
    # compute_gae discounts by gamma * lambda_; a mistaken discount needs the loop written out.
    deltas = case.rewards + gamma * case.values[1:] * ~terminateds - case.values[:-1]
    advantages, last = np.zeros(n), 0.0
    for t in reversed(range(n)):
        advantages[t] = last = deltas[t] + carry * last
    return advantages


def reference_gae_fn(episode: SingleAgentEpisode, values: np.ndarray, gamma: float,
                     lambda_: float) -> np.ndarray:
    """rlcourse's answer to the exercise: the Learner's compute_gae on one chunk."""
    n = len(episode)
    values = np.asarray(values, dtype=np.float64)
    ends = np.arange(n) == n - 1
    advantages, _ = compute_gae(np.asarray(episode.rewards, np.float64), values[:-1], values[1:],
                                ends & episode.is_terminated, ends, gamma, lambda_)
    return advantages


def _close(got: np.ndarray, expected: np.ndarray) -> bool:
    return got.shape == expected.shape and np.allclose(got, expected, rtol=1e-4, atol=1e-4)


def _show(values: np.ndarray, tail: int = 6) -> str:
    """A short printout: long arrays show only their last entries, where chunk endings matter."""
    shown = np.round(np.asarray(values, dtype=np.float64), 4).tolist()
    if len(shown) <= 2 * tail:
        return str(shown)
    return f"(last {tail} of {len(shown)}) {shown[-tail:]}"


def _diagnose(case: Case, got: np.ndarray) -> str:
    """What the learner's answer for `case` most likely got wrong."""
    if case.terminated and _close(got, reference_gae(case, terminated=False)):
        return ("you bootstrapped after a termination. The episode ended: there is no future, so "
                "V(s_n) of the final observation must not be added (use 0 after `is_terminated`).")
    lesson = reference_gae(case, gamma=LESSON[0], lambda_=LESSON[1])
    if (case.gamma, case.lambda_) != LESSON and _close(got, lesson):
        return (f"your advantages are those for the lesson's gamma={LESSON[0]} and "
                f"lambda_={LESSON[1]}, but this chunk's are gamma={case.gamma}, "
                f"lambda_={case.lambda_}: use the arguments, not config.gamma or numbers.")
    if case.truncated and _close(got, reference_gae(case, terminated=True)):
        return ("you did not bootstrap after a truncation. A time limit cut the episode, but the "
                "agent could have gone on: add gamma * V(s_n) of the final observation to the last "
                "delta. Only `is_terminated` means 'no future' (done = terminated or truncated is "
                "the classic bug).")
    if not case.terminated and not case.truncated and _close(got, reference_gae(case, terminated=True)):
        return ("you did not bootstrap an ongoing chunk. The episode goes on in the next chunk: "
                "the last delta needs gamma * V(s_n) of the chunk's last observation.")
    if len(got) > 1 and _close(got[::-1], reference_gae(case)):
        return ("your advantages are in reverse order: a backwards loop that appends A_{n-1} first "
                "must reverse the list at the end (or write advantages[t] = ...).")
    if _close(got, reference_gae(case) + case.values[:-1]):
        return ("you returned value targets (advantages + values). Return the advantages only.")
    if case.lambda_ != 1.0 and _close(got, reference_gae(case, carry=case.gamma)):
        return "the recursion must discount by gamma * lambda_, not gamma alone."
    if case.gamma != 1.0 and _close(got, reference_gae(case, carry=case.lambda_)):
        return "the recursion must discount by gamma * lambda_, not lambda_ alone."
    return ("compare with delta_t = r_t + gamma * V(s_{t+1}) * (1 - terminated_t) - V(s_t) and "
            "A_t = delta_t + gamma * lambda_ * A_{t+1}, computed backwards from the last step "
            "(where A_{n} = 0).")


@exercise("gae", stub="my_gae", fallback="rlcourse's GAE (reference_gae_fn, built on compute_gae)",
          reference=lambda gae_fn: reference_gae_fn)
def check_gae(gae_fn: GaeFunction) -> GaeFunction:
    """Check `gae_fn(episode, values, gamma, lambda_) -> advantages` against the Learner's GAE.

    `values` holds V of the chunk's n+1 observations; the answer is n advantages, one per action.
    Returns `gae_fn` when it is right (and rlcourse's answer while it is still the stub).
    """
    for case in CASES:
        episode = case.episode()
        expected = reference_gae(case)
        values = case.values.copy()
        values.setflags(write=False)
        result = call(gae_fn, episode, values, case.gamma, case.lambda_, where=f"on {case.name}")
        if result is None:
            raise ExerciseError("Your function returned None: `return` the advantages array.")
        got = np.asarray(result, dtype=np.float64).reshape(-1)
        if len(got) != len(episode):
            raise ExerciseError(
                f"On {case.name} ({len(episode)} steps) you returned {len(got)} values. Return one "
                "advantage per action: n values for a chunk with n+1 observations.")
        if not _close(got, expected):
            first = int(np.flatnonzero(~np.isclose(got, expected, rtol=1e-4, atol=1e-4))[0])
            raise ExerciseError(
                f"Wrong advantages on {case.name}: {_diagnose(case, got)}\n"
                f"  first wrong step: t={first} of n={len(got)}\n"
                f"  rewards  {_show(case.rewards)}\n"
                f"  values   {_show(case.values)}\n"
                f"  expected {_show(expected)}\n"
                f"  got      {_show(got)}")
        if not np.array_equal(episode.rewards, case.rewards):
            raise ExerciseError("Your function changed episode.rewards in place; leave the "
                                "episode as it is (the Learner still needs it).")
    passed(f"your GAE matches rlcourse.utils.postprocessing.compute_gae on {len(CASES)} chunks "
           "(terminated, truncated and ongoing), and leaves its inputs unchanged.")
    return gae_fn
