"""The pole_wobble checker accepts right answers and names the typical mistakes."""

import numpy as np
import pytest

from rlcourse.callbacks.callbacks import Callbacks
from rlcourse.course.exercises import ExerciseError, ReferencePoleWobble, check_pole_wobble_callbacks

pytestmark = pytest.mark.timeout(120)


class LastChunkOnly(Callbacks):
    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value("pole_wobble", np.abs(episode.observations[:, 2]).mean())


class KeptOnSelf(Callbacks):
    """Resets at every episode start, but all sub-envs add to the same sum."""

    def on_episode_start(self, *, episode, **kwargs):
        self.total = 0.0

    def on_episode_step(self, *, episode, **kwargs):
        self.total += abs(episode.get_observations(-1)[2])

    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value("pole_wobble", self.total / episode.t)


class Signed(ReferencePoleWobble):
    def on_episode_step(self, *, episode, **kwargs):
        episode.custom_data["abs_angle_sum"] += float(episode.get_observations(-1)[2])


class EveryStep(Callbacks):
    def on_episode_step(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value("pole_wobble", abs(episode.get_observations(-1)[2]))


class ReduceMax(ReferencePoleWobble):
    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value("pole_wobble", episode.custom_data["abs_angle_sum"] / episode.t,
                                 reduce="max")


class AngularVelocity(ReferencePoleWobble):
    def on_episode_step(self, *, episode, **kwargs):
        episode.custom_data["abs_angle_sum"] += abs(float(episode.get_observations(-1)[3]))


class ChunkLength(ReferencePoleWobble):  # divides by the last chunk's length, not the episode's
    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value("pole_wobble", episode.custom_data["abs_angle_sum"] / len(episode))


class WindowOfOne(ReferencePoleWobble):  # each result would show the last episode only
    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value("pole_wobble", episode.custom_data["abs_angle_sum"] / episode.t,
                                 reduce="mean", window=1)


class WindowOfTen(ReferencePoleWobble):
    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value("pole_wobble", episode.custom_data["abs_angle_sum"] / episode.t,
                                 window=10)


class SmoothedLikeTheReturn(ReferencePoleWobble):  # over 100 episodes, not the iteration's
    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value("pole_wobble", episode.custom_data["abs_angle_sum"] / episode.t,
                                 window=100)


class DividesByStepsPlusOne(ReferencePoleWobble):  # T angles summed, T + 1 in the divisor
    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value("pole_wobble",
                                 episode.custom_data["abs_angle_sum"] / (episode.t + 1))


class Degrees(ReferencePoleWobble):
    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value("pole_wobble",
                                 np.degrees(episode.custom_data["abs_angle_sum"] / episode.t))


class LargestAngle(Callbacks):
    def on_episode_start(self, *, episode, **kwargs):
        episode.custom_data["largest"] = 0.0

    def on_episode_step(self, *, episode, **kwargs):
        angle = abs(float(episode.get_observations(-1)[2]))
        episode.custom_data["largest"] = max(episode.custom_data["largest"], angle)

    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value("pole_wobble", episode.custom_data["largest"])


def holds_a_lock():
    """Right in this process, but Ray cannot ship it (defined in a function, the class is pickled
    by value, as a notebook's classes are)."""
    import threading

    class HoldsALock(ReferencePoleWobble):
        lock = threading.Lock()

    return HoldsALock


class WrongKey(ReferencePoleWobble):
    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value("wobble", episode.custom_data["abs_angle_sum"] / episode.t)


class CountsTheResetToo(Callbacks):
    """Another right answer: the reset's observation counted, T+1 observations in all."""

    def on_episode_start(self, *, episode, **kwargs):
        episode.custom_data["angles"] = [abs(episode.get_observations(-1)[2])]

    def on_episode_step(self, *, episode, **kwargs):
        episode.custom_data["angles"].append(abs(episode.get_observations(-1)[2]))

    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value("pole_wobble", float(np.mean(episode.custom_data["angles"])))


class Stub(Callbacks):
    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        raise NotImplementedError("TODO: log the episode's mean |pole angle|")


@pytest.mark.parametrize("answer, seed", [(ReferencePoleWobble, 0), (ReferencePoleWobble, 1),
                                          (CountsTheResetToo, 0)])
def test_right_answers_pass(answer, seed, capsys):
    assert check_pole_wobble_callbacks(answer, seed=seed) is answer
    out = capsys.readouterr().out
    assert "Correct" in out and "spanning several samples" in out


@pytest.mark.parametrize("answer, hint", [
    (LastChunkOnly, "only the episode's last chunk"),
    (KeptOnSelf, "kept on `self`"),
    (Signed, "absolute value"),
    (EveryStep, "log once per episode"),
    (ReduceMax, "reduce='mean'"),
    (AngularVelocity, r"observation\[2\]"),
    (ChunkLength, "divide by len\\(episode\\)"),
    (WindowOfOne, "window=1"),
    (DividesByStepsPlusOne, "one step more or fewer"),
    (Degrees, "in degrees"),
    (holds_a_lock(), "cannot be pickled"),
    (LargestAngle, "largest"),
    (WindowOfTen, "window=10"),
    (SmoothedLikeTheReturn, "window=100"),
    (WrongKey, "Nothing was logged under 'pole_wobble'"),
    (ReferencePoleWobble(), "Pass your class itself"),
])
def test_plausible_mistakes_are_named(answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_pole_wobble_callbacks(answer)


def test_the_stub_is_not_attempted_and_the_reference_stands_in(capsys):
    assert check_pole_wobble_callbacks(Stub) is ReferencePoleWobble
    assert "Not attempted yet" in capsys.readouterr().out
