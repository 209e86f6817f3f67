"""Lesson 13's exercise: the weighted importance-sampling estimate of a policy's return, judged from
episodes that another policy recorded.

The learner writes

    my_wis(rewards, behavior_logp, target_logp, gamma) -> float

with one array per recorded episode in each list: its rewards, log pi_b(a_t|s_t) as recorded
(`action_logp`) and log pi_e(a_t|s_t) of the same actions under the policy being judged. The answer
is `rlcourse.offline.estimators.weighted_importance_sampling`'s per-decision estimate: p_t the
cumulative ratio, kept at its last value after an episode ends (reward 0 there), w_t its mean over
all episodes, and the mean over episodes of sum_t gamma^t (p_t / w_t) r_t. `check_wis` compares
the answer with it on three sets of episodes of its own (different lengths, gammas, and rewards of
1 per step as CartPole's) and names the mistake when one of the typical ones matches. Inputs are
read-only. The stub is reported as not attempted; the lesson goes on with `reference_wis`.

Review, what answer would still pass that should not? One that recognises the checker's three
cases and returns their numbers; an answer exact on these cases but overflowing on episodes far
longer than theirs (exp of a large cumulative log-ratio) passes too, as rlcourse's own scales p_t
per step to avoid that.
"""

from collections.abc import Callable

import numpy as np

from rlcourse.course.exercises.common import ExerciseError, call, exercise, passed
from rlcourse.offline.estimators import weighted_importance_sampling

__all__ = ["check_wis", "reference_wis"]

Arrays = list[np.ndarray]
LESSON_GAMMA = 0.99  # the lesson's: no case uses it


def reference_wis(rewards: Arrays, behavior_logp: Arrays, target_logp: Arrays,
                  gamma: float) -> float:
    """rlcourse's estimator on the episodes, given as rows in RLlib's columns."""
    rows = {"eps_id": np.repeat(np.arange(len(rewards)), [len(r) for r in rewards]),
            "rewards": np.concatenate(rewards), "action_logp": np.concatenate(behavior_logp)}
    return weighted_importance_sampling(rows, np.concatenate(target_logp), gamma)["v_target"]


def _padded(rewards: Arrays, log_ratios: Arrays, cumulative: bool = True
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[episode, step] rewards, (cumulative) ratios (after the end: the last) and alive mask."""
    horizon = max(map(len, rewards))
    r, p, alive = (np.zeros((len(rewards), horizon)) for _ in range(3))
    for i, (rew, ratio) in enumerate(zip(rewards, log_ratios, strict=True)):
        n = len(rew)
        r[i, :n], alive[i, :n] = rew, 1
        p[i, :n] = np.exp(np.cumsum(ratio) if cumulative else ratio)
        p[i, n:] = p[i, n - 1]
    return r, p, alive


def _mistakes(rewards: Arrays, behavior_logp: Arrays, target_logp: Arrays, gamma: float
              ) -> list[tuple[float, str]]:
    """What each typical mistake computes, and the hint that names it."""
    log_ratios = [t - b for t, b in zip(target_logp, behavior_logp, strict=True)]
    r, p, alive = _padded(rewards, log_ratios)
    discounts = gamma ** np.arange(r.shape[1])

    def estimate(weights: np.ndarray, discount: np.ndarray = discounts) -> float:
        return float(np.mean((weights * r) @ discount))

    whole = np.array([np.exp(np.sum(x)) for x in log_ratios])[:, None] * np.ones_like(r)
    survivors = np.where(alive > 0, p, 0).sum(0) / alive.sum(0)
    _, p_target_only, _ = _padded(rewards, target_logp)
    _, p_inverted, _ = _padded(rewards, [-x for x in log_ratios])
    _, p_step, _ = _padded(rewards, log_ratios, cumulative=False)
    p_one = np.where(alive > 0, p, 1.0)  # padded with 1 after an episode's end
    return [
        (estimate(p), "you weight by p_t but do not normalize: that is ordinary (per-decision) "
         "importance sampling, unbiased but with a variance that grows with the episode. Divide "
         "p_t by w_t, its mean over all episodes at step t."),
        (estimate(p_target_only / p_target_only.mean(0)),
         "your ratios use only pi_e's probabilities: exp(target_logp). The weight of a recorded "
         "action is pi_e(a|s) / pi_b(a|s), exp(target_logp - behavior_logp): an action the "
         "behaviour policy took often must count less."),
        (estimate(p_inverted / p_inverted.mean(0)),
         "your ratio is upside down: pi_b / pi_e. It is pi_e(a|s) / pi_b(a|s), "
         "exp(target_logp - behavior_logp)."),
        (estimate(p_step / p_step.mean(0)),
         "each step is weighted by its own ratio only. r_t depends on every action before it: "
         "p_t is the product of the ratios of steps 0..t (np.cumsum of the log-ratios, then exp)."),
        (estimate(whole / whole.mean(0)),
         "you weight every step of an episode by the whole episode's ratio: trajectory-wise "
         "weighted IS, a valid estimator but not this one. Per decision, r_t is weighted by p_t, "
         "the product of the ratios up to step t only."),
        (estimate(p / p.mean(0), np.ones_like(discounts)),
         "you do not discount, or you put gamma ** t into p_t before dividing by w_t, where it "
         "cancels: the estimate is sum_t gamma ** t * (p_t / w_t) * r_t."),
        (estimate(p / p.mean(0), gamma * discounts),
         "your discounts start at gamma: the first reward counts fully, gamma ** 0 = 1."),
        (estimate(p / p.mean(0), LESSON_GAMMA ** np.arange(r.shape[1])),
         f"these are the numbers for gamma={LESSON_GAMMA} (the lesson's); use the gamma argument."),
        (float(np.sum(discounts * np.where(alive > 0, p * r, 0).sum(0)
                      / np.maximum(np.where(alive > 0, p, 0).sum(0), 1e-300))),
         "an episode that ended drops out of w_t (its p_t counts as 0, or w_t averages only the "
         "episodes still running). Then with a reward of 1 per step every policy is estimated at "
         "the behaviour's return: how long pi_e's episodes last is lost. An ended episode keeps "
         "its last p_t (and earns 0): w_t is the mean over all episodes."),
        (estimate(np.where(alive > 0, p, 0) / np.maximum(survivors, 1e-300)),
         "you average p_t over the episodes that reach step t only (as RLlib does): on an env "
         "paying 1 per step every policy then gets the behaviour's return. An ended episode keeps "
         "its last p_t (and earns 0): w_t is the mean over all episodes."),
        (estimate(p_one / p_one.mean(0)), "after an episode ends you pad p_t with 1. An ended "
         "episode keeps its last p_t (the product of all its ratios), so that w_t still weighs "
         "how likely the whole episode was under pi_e."),
        (estimate(np.ones_like(r)), "that is the recorded (behaviour policy's) mean return, with "
         "no importance weights: weight each r_t by p_t / w_t."),
    ]


def _cases() -> list[tuple[Arrays, Arrays, Arrays, float]]:
    """Three sets of episodes: a few short ones, many of random lengths, and CartPole-like ones
    (reward 1 per step) whose lengths depend on the actions."""
    rng = np.random.default_rng(13)
    cases = []
    for lengths, gamma, unit in (([3, 1, 2], 0.9, False), (rng.integers(1, 20, 40), 0.97, False),
                                 (rng.integers(1, 30, 60), 0.95, True)):
        rewards = [np.ones(n) if unit else rng.normal(1.0, 1.0, n) for n in lengths]
        behavior = [np.log(rng.uniform(0.2, 0.8, n)) for n in lengths]
        target = [np.log(rng.uniform(0.2, 0.8, n)) for n in lengths]
        cases.append((rewards, behavior, target, gamma))
    return cases


def _read_only(arrays: Arrays) -> Arrays:
    copies = [a.copy() for a in arrays]
    for a in copies:
        a.setflags(write=False)
    return copies


@exercise("weighted_importance_sampling", stub="my_wis", fallback="rlcourse's reference_wis",
          reference=lambda my_wis: reference_wis)
def check_wis(my_wis: Callable[[Arrays, Arrays, Arrays, float], float]
              ) -> Callable[[Arrays, Arrays, Arrays, float], float]:
    """Check `my_wis` against rlcourse's weighted importance sampling on three sets of episodes;
    raise ExerciseError with a hint if it differs. Returns `my_wis` when it is right."""
    cases, answers = _cases(), []
    for number, (rewards, behavior, target, gamma) in enumerate(cases, 1):
        got = call(my_wis, _read_only(rewards), _read_only(behavior), _read_only(target), gamma,
                   where=f"case {number}")
        try:
            answers.append(float(got))
        except (TypeError, ValueError):
            raise ExerciseError(f"my_wis returned {got!r} in case {number}; return one number, "
                                "the estimated return.") from None
    if len(set(answers)) == 1:
        raise ExerciseError("my_wis gave the same number for three different sets of episodes: "
                            "compute it from the arguments, do not type it in.")
    for number, (got, case) in enumerate(zip(answers, cases, strict=True), 1):
        expected = reference_wis(*case)
        if np.isclose(got, expected, rtol=1e-6, atol=1e-9):
            continue
        for wrong, hint in _mistakes(*case):
            if np.isclose(got, wrong, rtol=1e-6, atol=1e-9):
                raise ExerciseError(f"Case {number}: {hint}")
        raise ExerciseError(
            f"Case {number} ({len(case[0])} episodes, gamma={case[3]}): my_wis gave {got:.4f}, "
            f"expected {expected:.4f}. Hint: p_t = exp(cumsum(target_logp - behavior_logp)), kept "
            "at its last value after the episode ends; w_t = the mean of p_t over all episodes; "
            "the estimate is the mean over episodes of sum_t gamma**t * p_t / w_t * r_t.")
    passed("your estimates match rlcourse's weighted importance sampling on 3 sets of episodes "
           "(rewards of 1 per step among them, where how long episodes last is what counts).")
    return my_wis
