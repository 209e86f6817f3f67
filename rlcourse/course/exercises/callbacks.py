"""Exercise of lesson 08: a callback that logs a custom metric from the EnvRunners.

The learner writes a Callbacks subclass that logs, once per finished CartPole episode, how much the
pole wobbled: the mean |pole angle| over the episode's steps, as "pole_wobble" averaged over
episodes. The checker runs it on an EnvRunner in this process (no Ray) with 4 sub-envs and short
fragments, so most episodes span several sample() calls, and compares every logged value with the
truth from the joined episodes. The traps: reading only the last chunk in on_episode_end, keeping
the running sum on `self` (shared by all sub-envs), the signed angle, logging every step,
dividing by the last chunk's length or by one step too many or too few, degrees, the largest
angle, reduce="max", and a window (each result is to average that iteration's episodes:
window=None, the default). Whether the reset's or the last observation counts is the learner's
choice.

The EnvRunner runs in this process; what a runner actor needs beyond that is that Ray can pickle
the class, which is checked.

Review, what answer would still pass that should not? Extra keys logged beside "pole_wobble", an
answer that mixes the counting conventions episode by episode (each value is matched on its own),
and one whose hooks read a notebook global that a runner process would see only as a copy taken
when the class was shipped.
"""

from collections import defaultdict

import cloudpickle
import numpy as np

from rlcourse.callbacks.callbacks import Callbacks
from rlcourse.course.exercises.common import ExerciseError, call, exercise, passed

__all__ = ["check_pole_wobble_callbacks", "ReferencePoleWobble"]

KEY = "pole_wobble"
ANGLE = 2  # CartPole's observation: cart position, cart velocity, pole angle, pole angular velocity


class ReferencePoleWobble(Callbacks):
    """rlcourse's answer: a running sum of |angle| follows the episode in custom_data."""

    def on_episode_start(self, *, episode, **kwargs):
        episode.custom_data["abs_angle_sum"] = 0.0

    def on_episode_step(self, *, episode, **kwargs):
        episode.custom_data["abs_angle_sum"] += abs(float(episode.get_observations(-1)[ANGLE]))

    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value(KEY, episode.custom_data["abs_angle_sum"] / episode.t)
def _run(callbacks_class: type, seed: int) -> tuple[list[str], dict, dict]:
    """Sample CartPole with a random policy and `callbacks_class`'s hooks: (the ids of episodes in
    the order on_episode_end saw them, every chunk by episode id, what the hooks logged)."""
    from rlcourse.algorithms.ppo.ppo import PPOConfig
    from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner

    ended: list[str] = []

    class Probe(callbacks_class):  # notes which episode each on_episode_end call was for
        def on_episode_end(self, *, episode, **kwargs):
            ended.append(episode.id_)
            super().on_episode_end(episode=episode, **kwargs)

    config = (PPOConfig().environment("CartPole-v1").callbacks(Probe).debugging(seed=seed)
              .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=8))
    runner = SingleAgentEnvRunner(config, config.get_env_creator())
    runner.set_weights({"pi.0.weight": np.zeros((2, 4), np.float32),  # a uniformly random policy
                        "pi.0.bias": np.zeros(2, np.float32)})
    chunks = defaultdict(list)
    try:
        for _ in range(12):
            for chunk in runner.sample():
                chunks[chunk.id_].append(chunk)
    finally:
        runner.stop()
    return ended, chunks, runner.metrics.pop_logged()


def _whole(parts: list) -> np.ndarray:
    """All observations of an episode from its chunks (each chunk repeats the previous one's last)."""
    return np.concatenate([parts[0].observations, *(p.observations[1:] for p in parts[1:])])


def _means(angles: np.ndarray) -> list[float]:
    """An episode's mean angle, each way of counting accepted: the observations after each of its
    T steps, the ones before, or all T+1."""
    return [angles[1:].mean(), angles[:-1].mean(), angles.mean()]


def _sums(angles: np.ndarray) -> list[float]:
    """An episode's sum of angles, counted each way that `_means` accepts."""
    return [angles[1:].sum(), angles[:-1].sum(), angles.sum()]


def _matches(values: np.ndarray, candidates: list[list[float]]) -> bool:
    """Each value is one of its episode's candidates (either convention, episode by episode)."""
    return all(np.isclose(value, options, rtol=1e-5, atol=1e-7).any()
               for value, options in zip(values, candidates, strict=True))


@exercise("pole_wobble", stub="PoleWobble's on_episode_end",
          fallback="rlcourse's ReferencePoleWobble", reference=lambda cls, seed=0: ReferencePoleWobble)
def check_pole_wobble_callbacks(callbacks_class: type, seed: int = 0) -> type:
    """`callbacks_class` must log, per finished episode, its mean |pole angle| under "pole_wobble"
    with reduce="mean". Returns the class."""
    if not (isinstance(callbacks_class, type) and issubclass(callbacks_class, Callbacks)):
        raise ExerciseError(f"Pass your class itself (a subclass of Callbacks), not "
                            f"{type(callbacks_class).__name__}.")

    try:  # Ray ships the class to every runner actor, another process, by pickling it
        cloudpickle.loads(cloudpickle.dumps(callbacks_class))
    except Exception as e:
        raise ExerciseError(f"{callbacks_class.__name__} cannot be pickled ({type(e).__name__}: "
                            f"{e}); Ray sends it to the runner actors, other processes, that way. "
                            "Keep locks, open files and the like out of the class.") from None

    def sample_with_your_hooks() -> tuple:
        return _run(callbacks_class, seed)

    sample_with_your_hooks.__name__ = f"{callbacks_class.__name__}'s hooks"
    ended, chunks, logged = call(sample_with_your_hooks, where="while an EnvRunner sampled")
    if KEY not in logged:
        raise ExerciseError(f"Nothing was logged under {KEY!r} (logged: {sorted(logged)}). In "
                            f"on_episode_end call metrics_logger.log_value({KEY!r}, value).")
    values, reduce = np.asarray(logged[KEY]["values"]), logged[KEY]["reduce"]
    if reduce != "mean":
        raise ExerciseError(f"You logged with reduce={reduce!r}; the result should be the mean over "
                            "episodes of each episode's wobble: reduce='mean' (the default).")
    window = logged[KEY]["window"]
    if window is not None:
        raise ExerciseError(f"You logged with window={window}: each result would average the last "
                            f"{window} episode(s) of all runners, not that iteration's episodes. "
                            "Leave window out (None: every episode since the last result).")
    if len(values) != len(ended):
        raise ExerciseError(f"{len(ended)} episodes ended but {len(values)} values were logged: log "
                            "once per episode, in on_episode_end (not in on_episode_step).")
    episodes = [_whole(chunks[id_])[:, ANGLE] for id_ in ended]
    if _matches(values, [_means(np.abs(angles)) for angles in episodes]):
        spanning = sum(len(chunks[id_]) > 1 for id_ in ended)
        passed(f"{len(ended)} episodes on 4 sub-envs, {spanning} of them spanning several samples: "
               "each logged value is its whole episode's mean |pole angle|.")
        return callbacks_class
    last_chunks = [np.abs(chunks[id_][-1].observations[:, ANGLE]) for id_ in ended]
    if _matches(values, [_means(a) for a in last_chunks]):
        raise ExerciseError("Your values are right for episodes that fit in one sample() and wrong "
                            "for the others: on_episode_end gets only the episode's last chunk. Add "
                            "|angle| up step by step in on_episode_step, in episode.custom_data "
                            "(start it in on_episode_start), and divide by episode.t at the end.")
    chunk_steps = [len(chunks[id_][-1]) for id_ in ended]
    if _matches(values, [[total / n for total in _sums(np.abs(angles))]
                         for angles, n in zip(episodes, chunk_steps, strict=True)]):
        raise ExerciseError("Your sums are right but you divide by len(episode), the last chunk's "
                            "steps: on_episode_end gets only the last chunk. Divide by episode.t, "
                            "which counts every step since the reset.")
    if _matches(values, [_means(angles) for angles in episodes]):
        raise ExerciseError("The pole leans to either side and the signs cancel: average the "
                            "absolute value of the angle.")
    absolute = [np.abs(angles) for angles in episodes]
    if _matches(values, [[total / (count + shift)  # T, T and T + 1 angles summed
                          for total, count in zip(_sums(a), (len(a) - 1, len(a) - 1, len(a)),
                                                  strict=True) for shift in (-1, 1)]
                         for a in absolute]):
        raise ExerciseError("You divide by one step more or fewer than the angles you added up: "
                            "with one |angle| per step, divide by episode.t (the episode's steps).")
    if _matches(values, [np.degrees(_means(a)).tolist() for a in absolute]):
        raise ExerciseError("Your values are in degrees; CartPole's angle is in radians: log it "
                            "as it is.")
    if _matches(values, [[a[1:].max(), a.max()] for a in absolute]):
        raise ExerciseError("You logged each episode's largest |angle|; the wobble is the mean "
                            "|angle| over its steps.")
    truth = [_means(np.abs(angles))[0] for angles in episodes]
    raise ExerciseError(
        f"The values logged (first ones: {np.round(values[:3], 4).tolist()}) are not the episodes' "
        f"mean |pole angle| (first ones: {np.round(truth[:3], 4).tolist()}). Is the running sum kept "
        "on `self`? One Callbacks object serves all 4 sub-envs and every episode: keep it in "
        f"episode.custom_data. The angle is observation[{ANGLE}].")
