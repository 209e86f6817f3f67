"""Exercise of lesson 14 (external simulators): the simulator's loop.

The learner writes `simulate(connection, policy, env, steps_per_batch, max_env_steps)`: step `env`
with `policy.act(obs)`, gather whole episodes (client.episode_entry), send each batch of at least
`steps_per_batch` env steps as EPISODES_AND_GET_STATE and load the answer into the policy, send the
batch that reaches `max_env_steps` as EPISODES, and return the env steps sent. The checker runs it
on its own recording stand-ins: an env whose observations say (episode, step) and whose episodes
end at random lengths, terminated or truncated; a policy that notes which weights acted at each
step; a connection that answers SET_STATE with ever newer weights. It checks every episode against
the env's own record (whole, from its reset observation to its last, in order, each sent once, with
the actions the env was stepped with and the log-probabilities the policy gave), the batch sizes,
the weights each step acted with, the last message and the count returned, on four cases (batches
of several episodes, batches of one step, a budget smaller than one batch, a budget met exactly).
An empty batch, or far more episodes than the budget needs, stops the loop with a hint.

Review, what answer would still pass that should not? One that sends extra fields the server
refuses (the checker reads only the fields episode_entry writes, so it would not see them), and
one that puts a time limit of its own on episodes (the stand-in env ends each episode itself).
"""

import json
from collections.abc import Callable

import numpy as np

from rlcourse.course.exercises.common import ExerciseError, call, exercise, passed
from rlcourse.env.external import client

__all__ = ["check_simulator_loop", "reference_simulate"]

MAX_EPISODES = 2_000  # per case: over ten times what the largest budget can need (400 steps / 3)


def reference_simulate(connection, policy, env, steps_per_batch: int, max_env_steps: int) -> int:
    """rlcourse's loop (client.run's, without reconnecting): whole episodes in batches."""
    config = {"action_space": {"type": "Discrete", "start": 0}, "max_episode_steps": 2**31}
    sent = 0
    while sent < max_env_steps:
        batch, steps = [], 0
        while steps < steps_per_batch and sent + steps < max_env_steps:
            batch.append(client.run_episode(env, policy, config))
            steps += batch[-1]["rewards"]["shape"][0]
        sent += steps
        if sent >= max_env_steps:
            connection.send({"type": "EPISODES", "episodes": batch})
        else:
            policy.set_state(connection.request({"type": "EPISODES_AND_GET_STATE",
                                                 "episodes": batch}, "SET_STATE"))
    return sent


class ExerciseEnv:
    """Episodes of 3 to 30 steps, terminated or truncated at random; observation (episode, step,
    noise, noise), distinct rewards. It keeps each episode as it happened."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.episodes: list[dict] = []  # obs, rewards, terminated, per episode begun
        self.done = True

    def _obs(self) -> np.ndarray:
        e = self.episodes[-1]
        return np.array([len(self.episodes) - 1, len(e["rewards"]), *self.rng.normal(size=2)],
                        np.float32)

    def reset(self, seed=None, options=None):
        if len(self.episodes) >= MAX_EPISODES:
            raise ExerciseError(f"simulate began {MAX_EPISODES} episodes, far more than "
                                "max_env_steps needs: stop once that many env steps are sent.")
        self.episodes.append({"obs": [], "actions": [], "rewards": [], "terminated": None,
                              "length": int(self.rng.integers(3, 31))})
        self.done = False
        self.episodes[-1]["obs"].append(self._obs())
        return self.episodes[-1]["obs"][-1], {}

    def step(self, action):
        if self.done:
            raise ExerciseError("env.step() after the episode ended: call env.reset() to begin the "
                                "next episode.")
        if not isinstance(action, int | np.integer) or action not in (0, 1):
            raise ExerciseError(f"env.step() got the action {action!r}; it takes 0 or 1. "
                                "policy.act(obs) returns two values: action, logp = "
                                "policy.act(obs), then env.step(action).")
        e = self.episodes[-1]
        e["actions"].append(int(action))
        e["rewards"].append(float(self.rng.uniform(0.5, 1.5)))
        obs = self._obs()
        e["obs"].append(obs)
        self.done = len(e["rewards"]) == e["length"]
        e["terminated"] = bool(self.done and self.rng.random() < 0.5)
        return obs, e["rewards"][-1], e["terminated"], self.done and not e["terminated"], {}


class ExercisePolicy:
    """Acts at random and notes, per step, the weights version it acted with and what it gave:
    `chose[(episode, step)]` = (action, log-probability), the latest if asked twice."""

    def __init__(self, env: ExerciseEnv):
        self.env, self.version, self.acted, self.chose = env, 0, [], {}
        self.rng = np.random.default_rng(1)

    def act(self, obs):
        self.acted.append((int(obs[0]), int(obs[1]), self.version))
        action, logp = int(self.rng.integers(2)), float(np.float32(-self.rng.uniform(0.1, 2.0)))
        self.chose[int(obs[0]), int(obs[1])] = action, logp
        return action, logp

    def set_state(self, state: dict) -> None:
        self.version = state["weights_seq_no"]


class ExerciseConnection:
    """Answers each request with newer weights; keeps every message as it would travel."""

    def __init__(self, policy: ExercisePolicy):
        self.policy, self.messages = policy, []

    def _note(self, message: dict, how: str) -> None:
        if isinstance(message, dict) and message.get("episodes") == []:
            raise ExerciseError(f"message {len(self.messages)} holds no episode: stop once "
                                "max_env_steps are sent (`while sent < max_env_steps`, not <=).")
        self.messages.append((how, json.loads(json.dumps(message)), len(self.policy.acted)))

    def send(self, message: dict) -> None:
        self._note(message, "send")

    def request(self, message: dict, answer: str) -> dict:
        self._note(message, "request")
        return {"type": answer, "weights_seq_no": len(self.messages), "layers": []}


def _fail(what: str, hint: str) -> None:
    raise ExerciseError(f"On {what}: {hint}")


def _check_episode(sent: dict, env: ExerciseEnv, policy: ExercisePolicy, where: str
                   ) -> tuple[int, int]:
    """(episode index, length) of one sent episode, checked against what the env and policy did."""
    if not isinstance(sent, dict) or not {"obs", "actions", "rewards", "action_logp",
                                          "terminated"} <= set(sent):
        _fail(where, "send each episode as episode_entry(observations, actions, rewards, logps, "
              "terminated).")
    obs = client.decode_array(sent["obs"])
    rewards = client.decode_array(sent["rewards"])
    if len(obs) != len(rewards) + 1 or len(rewards) == 0:
        _fail(where, f"an episode of {len(rewards)} steps came with {len(obs)} observations; send "
              "T+1: the one reset() gave, then the one after each step (and not the next "
              "episode's first).")
    index, steps = obs[:, 0].astype(int), obs[:, 1].astype(int)
    if len(set(index)) != 1:
        _fail(where, "one episode holds the steps of two: start new lists after each episode ends "
              "(its boundaries are where terminated or truncated is True).")
    truth = env.episodes[index[0]]
    if steps[0] != 0:
        _fail(where, f"an episode begins at its step {steps[0]}: begin each with the observation "
              "env.reset() gave.")
    if len(rewards) != truth["length"] or list(steps) != list(range(len(obs))):
        _fail(where, f"an episode of {truth['length']} steps was sent as {len(rewards)} steps: send "
              "whole episodes only, from reset() until terminated or truncated, never part of one "
              "(finish the episode before sending the batch).")
    if not np.allclose(rewards, truth["rewards"]) or sent["terminated"] != truth["terminated"]:
        _fail(where, "an episode's rewards or its terminated flag are not what the env returned: "
              "keep each step's reward, and pass the env's own `terminated`.")
    actions, logps = (client.decode_array(sent[k]) for k in ("actions", "action_logp"))
    if actions.shape != rewards.shape or list(actions) != truth["actions"]:
        _fail(where, "an episode's actions are not the ones env.step() was given: keep each step's "
              "action, in order.")
    chose = [policy.chose[index[0], t] for t in range(len(rewards))]
    if [action for action, _ in chose] != truth["actions"]:
        _fail(where, "the env was stepped with actions policy.act did not give last (a second "
              "act() per step?): act once per step, and step with that action.")
    if logps.shape != rewards.shape or not np.allclose(logps, [p for _, p in chose]):
        _fail(where, "an episode's action_logp are not the log-probabilities policy.act returned "
              "with its actions (the second value it returns): keep them as they are, in order.")
    return int(index[0]), len(rewards)


def _check_case(fn: Callable, steps_per_batch: int, max_env_steps: int, seed: int) -> None:
    what = f"steps_per_batch={steps_per_batch}, max_env_steps={max_env_steps}"
    env = ExerciseEnv(seed)
    policy = ExercisePolicy(env)
    connection = ExerciseConnection(policy)
    returned = call(fn, connection, policy, env, steps_per_batch, max_env_steps, where=what)
    messages = connection.messages
    if not messages:
        _fail(what, "nothing was sent: send each batch with connection.request(...).")
    if not all(isinstance(message.get("episodes"), list) for _, message, _ in messages):
        _fail(what, "each message is {'type': ..., 'episodes': [episode_entry(...), ...]}.")
    batches = [[_check_episode(e, env, policy, f"{what}, message {i}") for e in message["episodes"]]
               for i, (_, message, _) in enumerate(messages)]
    ended = [i for i, e in enumerate(env.episodes) if len(e["rewards"]) == e["length"]]
    if missing := sorted(set(ended) - {index for batch in batches for index, _ in batch}):
        _fail(what, f"{len(missing)} finished episode(s) were never sent (the first: episode "
              f"{missing[0]} of {len(ended)}): send every batch, the last one too.")
    seen, total = set(), 0
    for i, ((how, message, _), batch) in enumerate(zip(messages, batches, strict=True)):
        last = i == len(messages) - 1
        kind = message.get("type")
        if not last and (how, kind) != ("request", "EPISODES_AND_GET_STATE"):
            _fail(what, f"message {i} was {kind!r} by connection.{how}: each batch but the last "
                  "goes by connection.request({'type': 'EPISODES_AND_GET_STATE', ...}, "
                  "'SET_STATE'), whose answer holds the new weights.")
        if last and (how, kind) != ("send", "EPISODES"):
            _fail(what, f"the last message was {kind!r} by connection.{how}: the batch that reaches "
                  "max_env_steps goes by connection.send({'type': 'EPISODES', ...}): nothing "
                  "needs an answer then (a request would wait for weights no one will use).")
        if any(index in seen for index, _ in batch):
            _fail(what, f"message {i} sent an episode again: start a new batch after each send.")
        seen.update(index for index, _ in batch)
        steps = sum(n for _, n in batch)
        total += steps
        if not last and steps < steps_per_batch:
            _fail(what, f"message {i} held {steps} env steps: gather whole episodes until a batch "
                  f"holds at least steps_per_batch={steps_per_batch}, then send it in one message "
                  "(one message per step or per episode costs a round trip each).")
        if batch and steps - batch[-1][1] >= steps_per_batch:
            _fail(what, f"message {i} held {steps} env steps, more than it needed: send the batch "
                  "as soon as it holds steps_per_batch (older data is more off-policy).")
    answered = [acted for _, _, acted in messages[:-1]]  # answer i holds weights version i + 1
    if any(version != sum(a <= k for a in answered) for k, (*_, version) in enumerate(policy.acted)):
        _fail(what, "episodes after an answer were sampled with older weights: give "
              "connection.request's answer to policy.set_state(...) before the next episode.")
    if not seen or total < max_env_steps or (
            total - env.episodes[max(seen)]["length"] >= max_env_steps):
        _fail(what, f"{total} env steps were sent: go on until max_env_steps={max_env_steps} are "
              "sent, and stop with the episode that reaches it.")
    if returned != total:
        _fail(what, f"simulate returned {returned!r}; it sent {total} env steps: return that.")


@exercise("simulator_loop", stub="simulate", fallback="rlcourse's loop (reference_simulate)",
          reference=lambda fn: reference_simulate)
def check_simulator_loop(fn: Callable) -> Callable:
    """Check `fn` on the checker's stand-ins; return it when right (the lesson then runs it)."""
    # Seed 3's first episodes sum to exactly 60 steps: a loop that gathers past that (`<=`) shows.
    for steps_per_batch, max_env_steps, seed in ((60, 400, 0), (1, 50, 1), (500, 120, 2),
                                                 (60, 400, 3)):
        _check_case(fn, steps_per_batch, max_env_steps, seed)
    passed("simulate sends whole episodes in batches, takes the new weights from each answer, "
           "and ends with the batch that reaches max_env_steps.")
    return fn
