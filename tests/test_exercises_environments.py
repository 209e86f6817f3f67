"""check_env_implementation accepts a Corridor built to the spec and explains typical mistakes."""

import gymnasium as gym
import numpy as np
import pytest

from rlcourse.course.exercises import ExerciseError, check_env_implementation
from rlcourse.course.exercises.solutions.corridor import Corridor  # the lesson's answer


def step_changed(change):
    """A Corridor whose step() results go through `change(obs, reward, terminated, truncated)`."""

    class Changed(Corridor):
        def step(self, action):
            obs, reward, terminated, truncated, info = super().step(action)
            return (*change(obs, reward, terminated, truncated), info)

    return Changed


class TruncatesAtTheGoalToo(Corridor):
    """truncated from the step count alone: on the last allowed step the goal gives both flags."""

    def step(self, action):
        obs, reward, terminated, _, info = super().step(action)
        return obs, reward, terminated, self.steps >= self.max_episode_steps, info


class GoalRewardReplacesNothing(Corridor):  # +1 and -0.1 on the goal step: 0.9
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward - 0.1 if terminated else reward, terminated, truncated, info


class NoSuperReset(Corridor):
    def reset(self, *, seed=None, options=None):
        self.position, self.steps = 0, 0
        return np.array([0.0], dtype=np.float32), {}


class Float64Observations(Corridor):
    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed)
        return obs.astype(np.float64), info


class IgnoresEnvConfig(Corridor):
    def __init__(self, config=None):
        super().__init__(None)


class TakesNoConfig(Corridor):
    def __init__(self):
        super().__init__(None)


def outcome(env):
    """step()'s five values once the position and step count have moved, as the spec says."""
    terminated = env.position == env.length - 1
    truncated = not terminated and env.steps >= env.max_episode_steps
    return (np.array([env.position], dtype=np.float32), 1.0 if terminated else -0.1, terminated,
            truncated, {})


class ReadsANoneConfig(Corridor):
    def __init__(self, config=None):
        super().__init__({"length": config.get("length", 10),  # config=None: AttributeError
                          "max_episode_steps": config.get("max_episode_steps", 50)})


class CountsOnlyLeftSteps(Corridor):
    """The step counter indented into the `left` branch: steps to the right never count."""

    def step(self, action):
        if action == 0:
            self.position = max(0, self.position - 1)
            self.steps += 1
        else:
            self.position += 1
        return outcome(self)


class PositionOnTheClass(Corridor):
    """`type(self).position`: every sub-env shares one agent."""

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed)
        type(self).position = 0
        del self.position
        return obs, info

    def step(self, action):
        type(self).position = max(0, self.position - 1) if action == 0 else self.position + 1
        self.steps += 1
        return outcome(self)


class KeepsStepCount(Corridor):
    """reset() forgets to restart the step counter."""

    def __init__(self, config=None):
        super().__init__(config)
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        gym.Env.reset(self, seed=seed)
        self.position = 0
        return np.array([0.0], dtype=np.float32), {}


class ReusesObservationArray(Corridor):
    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.obs = np.zeros(1, dtype=np.float32)
        return self.obs, {}

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        self.obs[:] = obs
        return self.obs, reward, terminated, truncated, info


class LeftDoesNothing(Corridor):
    """Action 0 keeps the agent where it is (only the wall case was ever tried)."""

    def step(self, action):
        if action == 0:
            self.position += 1  # undone by super().step's left move... unless at the wall
            self.position = max(0, self.position - 1)
            self.steps += 1
            truncated = self.steps >= self.max_episode_steps
            return np.array([self.position], dtype=np.float32), -0.1, False, truncated, {}
        return super().step(action)


class SwappedActions(Corridor):
    def step(self, action):
        return super().step(1 - action)


class LeftWrapsAround(Corridor):
    """Left from cell 0 goes to -1 (no wall)."""

    def step(self, action):
        if action == 0 and self.position == 0:
            self.steps += 1
            self.position = -1
            return np.array([-1.0], dtype=np.float32), -0.1, False, False, {}
        return super().step(action)


class ComparesActionsWithIs(Corridor):
    """`action is LEFT` holds for the Python int 0, never for the np.int64(0) a runner passes."""

    def step(self, action):
        left = 0
        self.position = max(0, self.position - 1) if action is left else self.position + 1
        self.steps += 1
        terminated = self.position == self.length - 1
        truncated = not terminated and self.steps >= self.max_episode_steps
        reward = 1.0 if terminated else -0.1
        return np.array([self.position], dtype=np.float32), reward, terminated, truncated, {}


def test_corridor_rejects_comparing_actions_with_is():
    with pytest.raises(ExerciseError, match=r"should be in cell 0.*np\.int64.*never with `is`"):
        check_env_implementation(ComparesActionsWithIs)


def test_the_spec_passes_and_is_returned(capsys):
    assert check_env_implementation(Corridor) is Corridor
    assert "Correct" in capsys.readouterr().out


def test_the_stub_is_not_attempted_and_the_reference_passes(capsys):
    class Stub(gym.Env):
        def __init__(self, config=None):
            raise NotImplementedError("TODO: the spaces")

    reference = check_env_implementation(Stub)
    assert "Not attempted yet" in capsys.readouterr().out
    assert check_env_implementation(reference) is reference


def test_a_half_written_corridor_is_not_attempted_yet(capsys):
    class HalfDone(Corridor):
        def step(self, action):
            raise NotImplementedError("TODO: step")

    check_env_implementation(HalfDone)
    assert "Not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize(("env_class", "message"), [
    (NoSuperReset, r"super\(\)\.reset\(seed=seed\)"),
    (Float64Observations, "dtype float64.*float32"),
    (IgnoresEnvConfig, "Size the space from env_config"),
    (TakesNoConfig, r"def __init__\(self, config=None\)"),
    (KeepsStepCount, "restart the step counter"),
    (ReusesObservationArray, "share an object.*new array"),
    (step_changed(lambda o, r, te, tr: (o, r, te or tr, False)), "Running out of time is truncation"),
    (step_changed(lambda o, r, te, tr: (o, r, te, False)), "did not end the episode"),
    (step_changed(lambda o, r, te, tr: (o, r, np.bool_(te), np.bool_(tr))), "not a Python bool"),
    (step_changed(lambda o, r, te, tr: (o, r, te or tr)), "must return five values"),
    (step_changed(lambda o, r, te, tr: (o, 1.0 if te else 0.0, te, tr)), "-0.1 per step"),
    (step_changed(lambda o, r, te, tr: (o[0], r, te, tr)), "float32 array of shape"),
    (LeftDoesNothing, r"step 2 \(to the left\).*should be in cell 0"),
    (SwappedActions, "first step to the right.*should be in cell 1"),
    (LeftWrapsAround, "not (in|within) (the )?observation.space|should be in cell 0"),
    (TruncatesAtTheGoalToo, "truncates only an episode that has not terminated"),
    (GoalRewardReplacesNothing, r"reward 0.9; the spec says 1.0 \(\+1 on reaching"),
    (ReadsANoneConfig, r"ReadsANoneConfig\(\) raised AttributeError.*config = config or \{\}"),
    (CountsOnlyLeftSteps, "one step to the right, then left: .*Count every step"),
    (PositionOnTheClass, "after env B's reset.*not on the class"),
], ids=["no-super-reset", "float64", "ignores-env-config", "no-config-argument", "step-count",
        "reused-array", "timeout-terminates", "never-truncates", "numpy-bools", "old-gym-api",
        "rewards", "scalar-observation", "left-does-nothing", "swapped-actions", "no-wall-on-the-left",
        "truncated-at-the-goal", "goal-reward-minus-step", "none-config", "counts-only-left-steps",
        "position-on-the-class"])
def test_typical_mistakes_get_a_hint(env_class, message):
    with pytest.raises(ExerciseError, match=message):
        check_env_implementation(env_class)


def test_an_instance_or_a_non_env_is_refused():
    with pytest.raises(ExerciseError, match="class itself"):
        check_env_implementation(Corridor())
    with pytest.raises(ExerciseError, match="subclass of gymnasium.Env"):
        check_env_implementation(dict)
