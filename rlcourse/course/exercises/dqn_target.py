"""Lesson 09's exercise: the n-step double-DQN target for a replay batch.

The learner writes

    my_dqn_target(batch, q_online, q_target, gamma) -> y        (torch tensors, one y per row)

    y = R + gamma^n * (1 - terminated) * Q_target(s', argmax_a Q_online(s', a))

where `batch` is a replay batch as `EpisodeReplayBuffer.sample` makes it (obs, actions, rewards,
new_obs, terminateds, n_step) plus `truncateds`, and `q_online` / `q_target` give the Q-values of
every action. `check_dqn_target` calls it on batches of its own (random rows with terminations,
truncations and rows shorter than n at an episode's end) and compares it with the target inside
rlcourse's `DQNLearner.compute_loss`. A wrong answer is matched against the typical mistakes, each
with its own hint (the lesson's gamma of 0.9 among them: the second batch uses 0.99). The stub is
reported as not attempted; the lesson goes on with `reference`.

Review, what answer would still pass that should not? A row both terminated and truncated cannot
come from the replay buffer (an episode is never both), so an answer that lets a truncation win over
a termination passes; y computed with gradients and then detached passes (it is a constant either
way).
"""

from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch

from rlcourse.course.exercises.common import ExerciseError, call, exercise, passed

__all__ = ["check_dqn_target", "reference_dqn_target", "learner_target"]

Batch = dict[str, torch.Tensor]
QFunction = Callable[[torch.Tensor], torch.Tensor]
N_STEP, NUM_ACTIONS, OBS_DIM = 3, 3, 4
LESSON_GAMMA = 0.9  # the lesson's global gamma: the second batch is checked with another


def reference_dqn_target(batch: Batch, q_online: QFunction, q_target: QFunction,
                         gamma: float) -> torch.Tensor:
    """The answer: the online network picks a* in s', the target network values it; no bootstrap
    after a termination (a truncation still bootstraps); gamma to the power of each row's n."""
    with torch.no_grad():
        best = q_online(batch["new_obs"]).argmax(dim=1)
        next_value = q_target(batch["new_obs"]).gather(1, best[:, None]).squeeze(1)
        not_done = 1.0 - batch["terminateds"].float()
        return batch["rewards"] + gamma ** batch["n_step"].float() * not_done * next_value


def learner_target(learner, batch: Batch) -> torch.Tensor:
    """The target y inside `DQNLearner.compute_loss` for `batch`: it returns td_error = Q(s, a) - y,
    so y = Q(s, a) - td_error."""
    rows = {**batch, "weights": torch.ones(len(batch["rewards"]))}
    _, metrics = learner.compute_loss(rows)
    with torch.no_grad():
        q_taken = learner.module.compute_q_values(batch["obs"]).gather(
            1, batch["actions"].long()[:, None]).squeeze(1)
    return q_taken - metrics["td_error"]


def _learner(seed: int, gamma: float):
    """A DQNLearner whose target network differs from its online one (as between target updates)."""
    from rlcourse.algorithms.dqn import DQNConfig
    from rlcourse.algorithms.dqn.dqn_learner import DQNLearner

    config = (DQNConfig().training(gamma=gamma, double_q=True, n_step=N_STEP)
              .rl_module(model_config={"fcnet_hiddens": [16]}))
    with torch.random.fork_rng():  # seeded networks, and the notebook's own RNG left as it was
        torch.manual_seed(seed)
        learner = DQNLearner(config, gym.spaces.Box(-2, 2, (OBS_DIM,), np.float32),
                             gym.spaces.Discrete(NUM_ACTIONS))
        with torch.no_grad():
            for parameter in learner.module.target_q.parameters():
                parameter.add_(torch.randn_like(parameter))
    return learner


def _batch(rng: np.random.Generator, rows: int) -> Batch:
    """Replay rows: most with n = N_STEP steps, some cut short by a termination or a truncation
    (fewer steps), some short because they reach the newest stored step of an ongoing episode."""
    kind = rng.permutation(np.resize(["full", "terminated", "truncated", "newest"], rows))
    n_step = np.where(kind == "full", N_STEP, rng.integers(1, N_STEP, rows))
    return {"obs": torch.tensor(rng.normal(size=(rows, OBS_DIM)), dtype=torch.float32),
            "actions": torch.tensor(rng.integers(0, NUM_ACTIONS, rows)),
            "rewards": torch.tensor(rng.uniform(-1.0, 3.0, rows), dtype=torch.float32),
            "new_obs": torch.tensor(rng.normal(size=(rows, OBS_DIM)), dtype=torch.float32),
            "terminateds": torch.tensor(kind == "terminated"),
            "truncateds": torch.tensor(kind == "truncated"),
            "n_step": torch.tensor(n_step, dtype=torch.int64)}


def _mistakes(batch: Batch, q_online: QFunction, q_target: QFunction, gamma: float
              ) -> list[tuple[torch.Tensor, str]]:
    """What each typical mistake computes on `batch`, and the hint that names it."""
    with torch.no_grad():
        online, target = q_online(batch["new_obs"]), q_target(batch["new_obs"])
    chosen = target.gather(1, online.argmax(dim=1)[:, None]).squeeze(1)
    r, n = batch["rewards"], batch["n_step"].float()
    not_terminated = 1.0 - batch["terminateds"].float()
    not_done = 1.0 - (batch["terminateds"] | batch["truncateds"]).float()

    def y(next_value, mask=not_terminated, discount=gamma ** n):
        return r + discount * mask * next_value

    return [
        (y(chosen, mask=torch.ones_like(r)),
         "you bootstrap after a termination. A terminated row has no future: its target is R alone, "
         "so multiply the bootstrap by (1 - terminateds)."),
        (y(chosen, mask=not_done),
         "you stop bootstrapping at truncations too. A time limit ends the episode but not the task: "
         "s' is a real state with a future, so a truncated row still bootstraps; only terminateds "
         "count."),
        (y(online.max(dim=1).values),
         "you use the online network to pick a* and to value it: max_a Q_online(s', a). That is the "
         "overestimation double Q avoids: pick with the online network, value with q_target."),
        (y(target.max(dim=1).values),
         "you use the target network to pick a* and to value it: max_a Q_target(s', a) is plain DQN's "
         "target. Double DQN picks a* = argmax_a Q_online(s', a), then takes Q_target(s', a*)."),
        (y(online.gather(1, target.argmax(dim=1)[:, None]).squeeze(1)),
         "the roles are swapped: the online network picks a* (argmax of q_online), the target "
         "network values it (q_target at a*)."),
        (y(target.gather(1, batch["actions"][:, None]).squeeze(1)),
         "you value the stored action a_t, which was taken in s, not in s'. The bootstrap action is "
         "a* = argmax_a Q_online(s', a)."),
        (y(chosen, discount=gamma),
         "you discount by gamma; the row's R already sums n rewards, so s' is n steps ahead: "
         "gamma ** n_step."),
        (y(chosen, discount=gamma ** N_STEP),
         "you discount every row by gamma ** 3; rows that reach an episode's end, or its newest "
         "stored step, summed fewer steps: use each row's own batch['n_step']."),
        *([(y(chosen, discount=LESSON_GAMMA ** n),
            f"your targets are those for gamma={LESSON_GAMMA} (the lesson's), but this batch's "
            f"gamma is {gamma}: use the gamma argument.")] if gamma != LESSON_GAMMA else []),
    ]


def _differs(got: torch.Tensor, expected: torch.Tensor) -> bool:
    return not torch.allclose(got.detach().double(), expected.double(), rtol=1e-4, atol=1e-4)


def _cases() -> list[tuple[Batch, object, float]]:
    rng = np.random.default_rng(9)
    return [(_batch(rng, 32), _learner(seed, gamma), gamma) for seed, gamma in ((0, 0.9), (1, 0.99))]


def _stub_aware(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """`fn`, except that torch's own NotImplementedError (an operation a dtype lacks, e.g. `|` on
    floats) is a wrong answer, not the stub's "not attempted"."""

    def run(*args):
        try:
            return fn(*args)
        except NotImplementedError as e:
            if any(words in str(e) for words in ("not implemented for", "Could not run")):
                raise RuntimeError(f"torch: {e}") from e
            raise

    run.__name__ = getattr(fn, "__name__", "my_dqn_target")
    return run


def _answer(my_dqn_target: Callable[..., torch.Tensor], case: int, batch: Batch, learner,
            gamma: float) -> torch.Tensor:
    """Call the learner's function on a copy of `batch`; check that it left the batch alone and
    returned one number per row."""
    given = {key: value.clone() for key, value in batch.items()}
    passed_in = dict(given)
    got = call(_stub_aware(my_dqn_target), given, learner.module.compute_q_values,
               learner.module.compute_target_q_values, gamma, where=f"batch {case}")
    if set(given) != set(batch) or any(given[k] is not passed_in[k]
                                       or not torch.equal(given[k], batch[k]) for k in batch):
        raise ExerciseError("my_dqn_target changed its batch in place (a tensor's values, or the "
                            "dict's keys). Leave the inputs as they are: the learner still needs "
                            "them for the loss. Compute into new tensors (`y = r + ...`, not "
                            "`r += ...`).")
    if not isinstance(got, torch.Tensor):
        raise ExerciseError(f"my_dqn_target returned a {type(got).__name__}; return a torch "
                            "tensor of shape [B], one target per row.")
    rows = len(batch["rewards"])
    if got.shape != (rows,):
        raise ExerciseError(f"my_dqn_target returned shape {tuple(got.shape)} for a batch of {rows} "
                            f"rows; expected ({rows},). A [B, 1] column (from gather) needs "
                            ".squeeze(1); [B, num_actions] means no action was picked.")
    return got


@exercise("dqn_target", stub="my_dqn_target", fallback="rlcourse's reference_dqn_target",
          reference=lambda my_dqn_target: reference_dqn_target)
def check_dqn_target(my_dqn_target: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """Check `my_dqn_target` against DQNLearner.compute_loss's double-Q target on batches of its own;
    raise ExerciseError with a hint if it differs. Returns `my_dqn_target` when it is right."""
    cases = _cases()
    answers = [_answer(my_dqn_target, case, *args) for case, args in enumerate(cases, 1)]
    if not _differs(answers[0], answers[1]):
        raise ExerciseError("my_dqn_target gave the same numbers for two different batches: compute "
                            "them from the batch and the networks, do not type them in.")
    for case, (got, (batch, learner, gamma)) in enumerate(zip(answers, cases, strict=True), 1):
        expected = learner_target(learner, batch)
        if _differs(got, expected):
            for wrong, hint in _mistakes(batch, learner.module.compute_q_values,
                                         learner.module.compute_target_q_values, gamma):
                if not _differs(got, wrong):
                    raise ExerciseError(f"Batch {case}: {hint}")
            worst = int(torch.argmax((got.detach() - expected).abs()))
            raise ExerciseError(
                f"Batch {case}, row {worst}: y = {float(got[worst]):.4f}, expected "
                f"{float(expected[worst]):.4f} (R = {float(batch['rewards'][worst]):.3f}, n = "
                f"{int(batch['n_step'][worst])}, terminated = {bool(batch['terminateds'][worst])}). "
                "Hint: y = R + gamma**n * (1 - terminated) * Q_target(s', argmax_a Q_online(s', a)).")
        if got.requires_grad:
            raise ExerciseError("Your y carries a gradient: it was computed through the online "
                                "network's values. The target is a constant that the loss moves Q "
                                "towards: compute it under `with torch.no_grad():` (or .detach() it).")
    passed("your targets match DQNLearner.compute_loss's double-Q targets on 2 batches of 32 rows "
           "(terminated, truncated and short rows among them).")
    return my_dqn_target
