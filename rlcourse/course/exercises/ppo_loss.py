"""Lesson 02's second exercise: PPO's clipped surrogate loss, written by hand.

The learner writes `clipped_surrogate_loss(logp, old_logp, advantages, clip_param)` on torch tensors:

    ratio_t = pi_theta(a_t | s_t) / pi_old(a_t | s_t) = exp(logp_t - old_logp_t)
    loss    = -mean_t min(ratio_t * A_t, clip(ratio_t, 1 - eps, 1 + eps) * A_t)

`check_clipped_surrogate` compares its value *and its gradient* with the `policy_loss` that
`PPOLearner.compute_loss` (rlcourse/algorithms/ppo/ppo_learner.py) computes on the same batches,
built so that the clip is active in both directions (ratio above 1 + eps with A > 0, below 1 - eps
with A < 0) and inactive where the min keeps the unclipped term. Typical mistakes are named, also
by their gradient (a detached clipped term has the right value but loses its share of the gradient
where ratio * A and clip(ratio) * A are equal).

Review, what answer would still pass that should not? A loss that differs only where the ratio is
exactly 1 - eps or 1 + eps (no row sits there), or one that adds a term without value or gradient.
The advantages are larger on the positive side so that clipping at exp(+-eps) shows; it would pass
with rtol 1e-4 only if the two bounds cancelled, which they do not on these batches (tested).
"""

import math
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch

from rlcourse.course.exercises.common import ExerciseError, call, exercise, passed

__all__ = ["check_clipped_surrogate", "reference_clipped_surrogate_loss"]

LossFunction = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, float], torch.Tensor]
CLIP_PARAMS = (0.2, 0.3)  # the lesson's clip_param is 0.2: checked with another as well


def reference_clipped_surrogate_loss(logp: torch.Tensor, old_logp: torch.Tensor,
                                     advantages: torch.Tensor, clip_param: float) -> torch.Tensor:
    """rlcourse's answer: the policy part of PPOLearner.compute_loss."""
    ratio = torch.exp(logp - old_logp)
    clipped = torch.clamp(ratio, 1 - clip_param, 1 + clip_param)
    return -torch.min(ratio * advantages, clipped * advantages).mean()


# Plausible wrong answers, each with the hint that names it (tried in this order).
def _mistakes(clip: float) -> list[tuple[Callable, str]]:
    def surrogate(ratio, adv, combine=torch.min, clip_param=clip):
        return combine(ratio * adv, ratio.clamp(1 - clip_param, 1 + clip_param) * adv)

    return [
        (lambda lp, old, adv: surrogate(torch.exp(lp - old), adv).mean(),
         "you returned the objective, not the loss: the optimizer minimizes, so negate it "
         "(loss = -mean(min(...)))."),
        (lambda lp, old, adv: -(torch.exp(lp - old) * adv).mean(),
         "the ratio is never clipped: on steps where ratio * A would grow past (1 + eps) * A or "
         "(1 - eps) * A, use clip(ratio, 1 - eps, 1 + eps) * A instead (the min of the two)."),
        (lambda lp, old, adv: -(torch.exp(lp - old).clamp(1 - clip, 1 + clip) * adv).mean(),
         "you use only the clipped term. PPO takes min(ratio * A, clip(ratio) * A): where the "
         "unclipped term is smaller (a bad action made likelier, A < 0 and ratio > 1 + eps), it "
         "must count in full, or the update would not be pulled back."),
        (lambda lp, old, adv: -surrogate(torch.exp(lp - old), adv, torch.max).mean(),
         "you take the max of the two terms; PPO takes the min, a pessimistic bound."),
        (lambda lp, old, adv: -surrogate(lp - old, adv).mean(),
         "the probability ratio is pi / pi_old = exp(logp - old_logp); logp - old_logp is its "
         "log."),
        (lambda lp, old, adv: -surrogate(lp / old, adv).mean(),
         "logp and old_logp are log-probabilities: their ratio is exp(logp - old_logp), not "
         "logp / old_logp."),
        (lambda lp, old, adv: -torch.min((torch.exp(lp - old) * adv).mean(),
                                         (torch.exp(lp - old).clamp(1 - clip, 1 + clip) * adv).mean()),
         "you took the min of the two means; take the min step by step, then the mean: "
         "-mean(min(ratio * A, clip(ratio) * A))."),
        (lambda lp, old, adv: -(torch.min(torch.exp(lp - old),
                                          torch.exp(lp - old).clamp(1 - clip, 1 + clip)) * adv).mean(),
         "you took min(ratio, clip(ratio)) * A; the min must compare the products ratio * A and "
         "clip(ratio) * A, since a negative A flips which one is smaller."),
        (lambda lp, old, adv: -surrogate(torch.exp(lp - old), adv).sum(),
         "average over the batch (mean), do not sum: the loss must not grow with the batch size."),
        (lambda lp, old, adv: -torch.min(torch.exp(lp - old) * adv,
                                         torch.exp((lp - old).clamp(-clip, clip)) * adv).mean(),
         "you clipped the log-ratio logp - old_logp to [-eps, eps]: its exp runs from "
         f"{math.exp(-clip):.3f} to {math.exp(clip):.3f}, not from 1 - eps to 1 + eps. Clip the "
         "ratio itself: torch.clamp(ratio, 1 - clip_param, 1 + clip_param)."),
        (lambda lp, old, adv: -torch.min(torch.exp(lp - old) * adv,
                                         (lp - old).clamp(1 - clip, 1 + clip) * adv).mean(),
         "you clipped the log-ratio logp - old_logp, not the ratio: clip "
         "ratio = exp(logp - old_logp), torch.clamp(ratio, 1 - eps, 1 + eps)."),
        (lambda lp, old, adv: -torch.min(torch.exp(lp - old) * adv, (lp - old).clamp(
            math.log(1 - clip), math.log(1 + clip)) * adv).mean(),
         "you clipped the log-ratio logp - old_logp (to [log(1 - eps), log(1 + eps)]) and used it "
         "as the ratio: the clipped term is clip(exp(logp - old_logp), 1 - eps, 1 + eps) * A."),
        *[(lambda lp, old, adv, other=other: -surrogate(torch.exp(lp - old), adv,
                                                         clip_param=other).mean(),
           f"your loss is the one for clip_param={other}, but this call's clip_param is {clip}: "
           "use the clip_param argument, not a number or a global of the lesson.")
          for other in CLIP_PARAMS if other != clip],
    ]


def _batch(seed: int, clip: float, n: int = 48) -> dict[str, torch.Tensor]:
    """Observations, actions, old log-probs and advantages. Ratios pi/pi_old are spread from 0.5 to
    1.6, with advantages of both signs, so every branch of the clipped objective is used."""
    rng = np.random.default_rng(seed)
    log_ratio = np.log(np.tile([0.5, 0.65, 0.95, 1.05, 1.35, 1.6], n // 6))
    # Larger positive than negative advantages: the two clip bounds do not cancel out in the mean
    # (so that a clip at exp(+-eps) instead of 1 +- eps shows clearly).
    advantages = np.tile([1.0, -0.5], n // 2) * rng.uniform(0.2, 2.0, n)
    return {"obs": torch.as_tensor(rng.normal(size=(n, 4)), dtype=torch.float32),
            "actions": torch.as_tensor(rng.integers(0, 2, n)),
            "log_ratio": torch.as_tensor(rng.permutation(log_ratio), dtype=torch.float32),
            "advantages": torch.as_tensor(advantages, dtype=torch.float32),
            "value_targets": torch.zeros(n)}


def _learner(clip: float):
    from rlcourse import PPOConfig
    from rlcourse.algorithms.ppo.ppo_learner import PPOLearner

    config = PPOConfig().environment("CartPole-v1").training(clip_param=clip).debugging(seed=0)
    return PPOLearner(config, gym.spaces.Box(-1.0, 1.0, (4,), np.float32), gym.spaces.Discrete(2))


@exercise("clipped_surrogate", stub="clipped_surrogate_loss",
          fallback="rlcourse's reference_clipped_surrogate_loss (the Learner's)",
          reference=lambda loss_fn: reference_clipped_surrogate_loss)
def check_clipped_surrogate(loss_fn: LossFunction) -> LossFunction:
    """Check `loss_fn(logp, old_logp, advantages, clip_param) -> loss` (a scalar tensor) against the
    policy loss of PPOLearner.compute_loss, in value and in gradient. Returns `loss_fn` if right."""
    with torch.random.fork_rng():  # building a Learner seeds torch: leave the lesson's RNG alone
        for seed, clip in enumerate(CLIP_PARAMS):
            learner = _learner(clip)
            batch = _batch(seed, clip)
            module = learner.module
            with torch.no_grad():
                dist = module.get_action_dist(module.forward_train(batch)["action_dist_inputs"])
                current = dist.log_prob(batch["actions"])
            old_logp = current - batch["log_ratio"]  # so that pi / pi_old is the planned ratio
            _, stats = learner.compute_loss({**batch, "action_logp": old_logp})
            expected = float(stats["policy_loss"])
            logp = current.clone().requires_grad_(True)
            inputs = (old_logp.clone(), batch["advantages"].clone())
            where = f"clip_param={clip}"
            loss = call(loss_fn, logp, inputs[0], inputs[1], clip, where=where)
            if not (torch.equal(inputs[0], old_logp) and torch.equal(inputs[1], batch["advantages"])
                    and torch.equal(logp.detach(), current)):
                raise ExerciseError("Your loss changed one of its input tensors in place (e.g. "
                                    "advantages.clamp_() or logp -= old_logp): compute new tensors "
                                    "instead; the Learner still needs the batch.")
            _check_result(loss, logp, old_logp, batch["advantages"], clip, expected, where)
    passed("your clipped surrogate loss matches PPOLearner.compute_loss's policy_loss, value and "
           "gradient, with the clip active for A > 0 and for A < 0.")
    return loss_fn


def _check_result(loss, logp, old_logp, advantages, clip, expected, where) -> None:
    if not isinstance(loss, torch.Tensor):
        raise ExerciseError(f"Return a torch tensor (got {type(loss).__name__}): stay in torch "
                            "(torch.exp, torch.clamp, torch.min) so that the loss has a gradient.")
    if loss.numel() != 1:
        raise ExerciseError(f"Return one number, the mean over the batch (got shape "
                            f"{tuple(loss.shape)}): finish with .mean().")
    got = float(loss.detach())
    if not np.isclose(got, expected, rtol=1e-4, atol=1e-5):
        with torch.no_grad():
            hints = [hint for mistake, hint in _mistakes(clip)  # some mistakes give one value
                     if np.isclose(got, float(mistake(logp, old_logp, advantages)), rtol=1e-4,
                                   atol=1e-5)]
        if hints:
            raise ExerciseError(f"With {where}: your loss is {got:.5f}, the Learner's "
                                f"{expected:.5f}: {' Or: '.join(hints)}")
        raise ExerciseError(f"With {where}: your loss is {got:.5f}, the Learner's {expected:.5f}. "
                            "Compare with loss = -mean(min(ratio * A, clip(ratio, 1 - eps, 1 + eps) "
                            "* A)), ratio = exp(logp - old_logp).")
    if loss.grad_fn is None:
        raise ExerciseError("Your loss has no gradient (it is detached from logp): avoid .item(), "
                            ".detach(), .numpy() and float(...) inside it; the optimizer needs "
                            "d loss / d logp.")
    (grad,) = torch.autograd.grad(loss, logp)
    if not torch.allclose(grad, _gradient(reference_clipped_surrogate_loss, logp, old_logp,
                                          advantages, clip), rtol=1e-4, atol=1e-6):
        detached = _gradient(_detached_clip, logp, old_logp, advantages, clip)
        if torch.allclose(grad, detached, rtol=1e-4, atol=1e-6):
            raise ExerciseError(
                "Your loss has the right value but the wrong gradient: the clipped term is "
                "detached. Where the ratio lies inside [1 - eps, 1 + eps] both terms are equal, "
                "and torch.min shares the gradient between them: a detached clipped term loses "
                "its share. Clamp the ratio itself (torch.clamp(ratio, ...), no .detach()): the "
                "clamp alone makes the gradient 0 where it clips.")
        raise ExerciseError("Your loss has the right value but the wrong gradient: where the clip "
                            "is active the clipped term's gradient must be 0, and elsewhere it is "
                            "the ratio's (torch.clamp gives both); a hand-made clip (e.g. a "
                            "straight-through ratio + (clip - ratio).detach()) changes it.")


def _detached_clip(logp, old_logp, advantages, clip):
    ratio = torch.exp(logp - old_logp)
    clipped = torch.clamp(ratio.detach(), 1 - clip, 1 + clip)
    return -torch.min(ratio * advantages, clipped * advantages).mean()


def _gradient(loss_fn: Callable, logp, old_logp, advantages, clip) -> torch.Tensor:
    leaf = logp.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(loss_fn(leaf, old_logp, advantages, clip), leaf)
    return grad
