"""Lesson 01's exercise: the reinforcement-learning loop, written by hand.

The learner writes `run_episode(env, policy, seed) -> float`: reset the env with `seed`, then act
with `policy(observation)` until the episode ends (terminated *or* truncated), and return the sum of
the rewards. `check_run_episode` runs it on envs chosen so that each typical mistake shows: stopping
only on `terminated`, counting steps instead of adding rewards, not passing the seed to reset,
acting on an old observation, actions not from the policy, the first or the last reward left out
(one env terminates on the very step its time limit truncates it, as gymnasium's TimeLimit reports
it; the hint names which reward is missing where the two differ, and both where they do not), a loop
capped at a fixed number of steps (one env's episodes last 1,000), and a return value that is not
one number. Named too: a reward counted twice, a total overwritten, a mean, counted steps, older
gym's reset (obs alone) and step (four values), and a loop that never steps. The stub
(NotImplementedError) is reported as not attempted and the lesson goes on with
`reference_run_episode`.

Review, what answer would still pass that should not? A loop capped at 1,000 steps or more (the
longest episode here), and an answer that resets, then steps and sums correctly but also calls
the policy on a copy of the observation (harmless). Refused though right in value: a policy
called twice per step (e.g. to print the action), and a reset after the episode "to clean up".
"""

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.course.exercises.common import ExerciseError, call, exercise, number, passed

__all__ = ["check_run_episode"]


MAX_ACTIONS_WITHOUT_A_STEP = 10_000  # a loop that never steps would otherwise run forever


class _Watched(gym.Wrapper):
    """Refuses to step past the end of an episode (instead of looping forever) and records seeds."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.ended, self.seeds, self.latest = False, [], None
        self.steps, self.actions = 0, 0  # env steps taken, and actions the policy chose
        self.first_reward = self.last_reward = 0.0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.ended = False
        self.seeds.append(seed)
        obs, info = self.env.reset(seed=seed, options=options)
        self.latest = obs
        return obs, info

    def step(self, action: Any):
        if self.ended:
            raise ExerciseError("run_episode called step() after the episode had ended. Stop when "
                                "`terminated or truncated` is True: a time limit ends an episode "
                                "by truncation, without terminating it.")
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.ended, self.latest, self.last_reward = terminated or truncated, obs, float(reward)
        if not self.steps:
            self.first_reward = self.last_reward
        self.steps += 1
        return obs, reward, terminated, truncated, info

    def watch(self, policy: Callable) -> Callable:
        """`policy`, refusing an observation other than the one reset() or step() returned last."""

        def watched(obs):
            if isinstance(obs, tuple) and len(obs) == 2 and isinstance(obs[1], dict):
                raise ExerciseError("The policy was given (observation, info): gymnasium's "
                                    "env.reset() returns both (older gym returned only the "
                                    "observation). Unpack them: obs, info = env.reset(seed=seed).")
            if self.actions - self.steps >= MAX_ACTIONS_WITHOUT_A_STEP:
                raise ExerciseError(f"run_episode asked the policy for {self.actions - self.steps:,} "
                                    "actions without stepping the env: is env.step(...) inside the "
                                    "loop, indented like the policy call?")
            if self.latest is not None and not np.array_equal(obs, self.latest):
                raise ExerciseError("The policy was given an old observation. Act on the newest one: "
                                    "`obs, reward, terminated, truncated, info = env.step(...)` must "
                                    "replace obs before the next policy(obs).")
            self.actions += 1
            return policy(obs)

        return watched


class _Drift(gym.Env):
    """Rewards 0.5, 1.5, 0.5, 1.5, ...; starts at a random point; terminates after `ends_after`
    steps (never by default)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, ends_after: int | None = None):
        self.ends_after = ends_after

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.uniform(-1, 1, 1).astype(np.float32), {}

    def step(self, action):
        self.t += 1
        return (np.full(1, self.t / 10, np.float32), 0.5 + (self.t % 2 == 0),
                self.t == self.ends_after, False, {})


def reference_run_episode(env: gym.Env, policy: Callable, seed: int) -> float:
    """The return of one episode of `env` played by `policy` (rlcourse's answer)."""
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        total += float(reward)
        done = terminated or truncated
    return total


def _cases() -> list[tuple[str, Callable[[], gym.Env], Callable, str]]:
    def lean(obs):  # push the cart the way the pole leans: a decent CartPole policy
        return int(obs[2] > 0)

    # The 6-step env comes first: its first reward (0.5) and last (1.5) differ, so a hint can say
    # which one a loop leaves out.
    return [
        # gymnasium's TimeLimit sets both flags when an episode terminates on its last allowed step.
        ("an env that terminates on the step its time limit truncates it (6 steps, both flags)",
         lambda: gym.wrappers.TimeLimit(_Drift(ends_after=6), max_episode_steps=6), lambda obs: 1,
         "Add up every step's reward once, the last one too (it ends the episode by both flags "
         "at once), and return the plain sum: no discount, no mean."),
        ("an env that only ends by its time limit (7 steps, rewards 0.5 and 1.5)",
         lambda: gym.wrappers.TimeLimit(_Drift(), max_episode_steps=7), lambda obs: 0,
         "Add up the rewards themselves (they are not always 1), and stop on truncation too."),
        ("CartPole with a simple policy", lambda: gym.make("CartPole-v1"), lean,
         "Sum the rewards of every step until the episode ends."),
        ("an env whose episodes last 1,000 steps", lambda: gym.wrappers.TimeLimit(
            _Drift(), max_episode_steps=1000), lambda obs: 0,
         "Step until the episode ends, however long it lasts: no fixed number of steps."),
    ]


def _reward_mistake(got: float, expected: float, env: _Watched) -> str | None:
    """The typical mistake that gives `got` for this episode, named, or None."""
    if got == env.steps:
        return (f"that is the number of steps ({env.steps}). Add up the rewards themselves: they "
                "are not always 1.")
    missing = [which for which, reward in (("first", env.first_reward), ("last", env.last_reward))
               if reward and np.isclose(got, expected - reward)]
    if missing:
        reward = env.last_reward if missing == ["last"] else env.first_reward
        return (f"the {' or the '.join(missing)} step's reward ({reward:g}) is missing. Add the "
                "reward of every step, from the first step after reset to the one that comes with "
                "terminated or truncated: add each reward before checking whether the episode ended.")
    if np.isclose(got, expected + env.last_reward):
        return (f"the last step's reward ({env.last_reward:g}) is counted twice. Add each reward "
                "once, right after its env.step(), and nothing after the loop.")
    if np.isclose(got, env.last_reward):
        return ("that is the last step's reward alone. Add every step's reward to a running "
                "total: total += reward, not total = reward.")
    if np.isclose(got, expected / env.steps):
        return "that is the mean reward per step. Return the sum of the rewards, not their mean."
    return None


def _unpack_hint(error: ExerciseError) -> ExerciseError:
    """`error` with the five values of gymnasium's step (and two of reset) named, where the
    learner's code unpacked the wrong number of them (older gym's API)."""
    if isinstance(error.__cause__, ValueError) and "values to unpack" in str(error.__cause__):
        return ExerciseError(f"{error}. gymnasium's env.step() returns five values, obs, reward, "
                             "terminated, truncated, info (older gym returned four), and "
                             "env.reset() two: obs, info.")
    return error


@exercise("run_episode", stub="run_episode", fallback="rlcourse's reference_run_episode",
          reference=lambda run_episode: reference_run_episode)
def check_run_episode(run_episode: Callable[[gym.Env, Callable, int], float]) -> Callable:
    """Check `run_episode(env, policy, seed)`; raise ExerciseError with a hint if it is wrong.

    Returns `run_episode` when it is right (and rlcourse's answer while it is still the stub)."""
    for name, make_env, policy, hint in _cases():
        for seed in (0, 7):
            env = _Watched(make_env())
            try:
                answer = call(run_episode, env, env.watch(policy), seed, where=name)
            except ExerciseError as error:
                raise _unpack_hint(error) from error.__cause__
            got = number(answer, "What run_episode returned", " Return the sum of the episode's "
                         "rewards (e.g. total += reward).")
            if env.seeds[:1] != [seed]:
                raise ExerciseError(f"Reset the env with the seed you are given: "
                                    f"env.reset(seed=seed) (it was reset with {env.seeds}).")
            if len(env.seeds) > 1:
                raise ExerciseError(f"run_episode reset the env {len(env.seeds)} times ({name}). "
                                    "Reset it once, at the start, with env.reset(seed=seed): a "
                                    "second reset() starts another episode.")
            if not env.ended:
                raise ExerciseError(f"run_episode returned before the episode ended ({name}). "
                                    "Keep stepping until terminated or truncated is True.")
            if env.actions != env.steps:
                raise ExerciseError(f"run_episode took {env.steps} steps but asked the policy for "
                                    f"{env.actions} actions ({name}): every action comes from "
                                    "policy(obs), one call per step (not env.action_space.sample()"
                                    " or a fixed action).")
            expected = reference_run_episode(make_env(), policy, seed)
            if not np.isclose(got, expected):
                mistake = _reward_mistake(got, expected, env)
                raise ExerciseError(f"On {name} with seed {seed}, run_episode returned {got}; the "
                                    f"episode's return is {expected}"
                                    + (f": {mistake}" if mistake else f". Hint: {hint}"))
    passed("your loop resets with the seed, acts on each new observation, steps until the episode "
           "ends, and adds up the rewards.")
    return run_episode
