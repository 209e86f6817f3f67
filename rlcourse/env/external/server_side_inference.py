"""Server-side inference, for a simulator that cannot run the policy itself (not in RLlib's new
stack): GET_ACTION sends an observation (and the last action's reward) and gets the runner's action;
END_EPISODE ends the episode, which the runner records as EPISODES would have brought it (same
checks) and drops if the client leaves first. benchmarks/external_sampling.py times the round trip."""

import itertools
import math
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from rlcourse.core.rl_module import numpy_mlp
from rlcourse.env.external.client import head_action
from rlcourse.env.external.rllink import ProtocolError, checked_array, checked_ending, encode_array
from rlcourse.env.single_agent_episode import SingleAgentEpisode

if TYPE_CHECKING:
    from rlcourse.env.external.env_runner_server_for_external_inference import (
        EnvRunnerServerForExternalInference,
    )

# The action heads client.py's Policy runs, by their names in SET_CONFIG.
HEADS = {numpy_mlp.Categorical: "categorical", numpy_mlp.DiagGaussian: "gaussian",
         numpy_mlp.EpsilonGreedy: "epsilon_greedy", numpy_mlp.SquashedGaussian: "squashed_gaussian"}
FIELDS = {"GET_ACTION": {"type", "obs", "reward"},  # "reward": all but an episode's first
          "END_EPISODE": {"type", "obs", "reward", "terminated", "truncated"}}
_sessions = itertools.count()  # numbers each client's random stream (with the runner's seed)


def act(network: numpy_mlp.NumpyMLP, head: Any, obs: np.ndarray, rng: np.random.Generator,
        explore: bool) -> tuple[Any, float]:
    """The module's action for one observation and its log-probability, as client.py's Policy
    computes them: the episode recorded is the one the client would have sent."""
    bounds = (head.low, head.high) if isinstance(head, numpy_mlp.SquashedGaussian) else ()
    epsilon = head.epsilon if isinstance(head, numpy_mlp.EpsilonGreedy) else 0.0
    return head_action(HEADS[type(head)], network.action_dist_inputs(obs[None])[0], rng, explore,
                       epsilon, bounds)


def _reward(message: dict, where: str) -> float:
    reward = message.get("reward")
    try:
        finite = type(reward) in (int, float) and math.isfinite(reward)
    except OverflowError:  # an int beyond float's range, as 10**400
        finite = False
    if not finite:
        raise ProtocolError(f"{where}.reward: expected a finite number, got {reward!r}: send the "
                            "env's reward for the last action.")
    return float(reward)


class ServerSideInference:
    """One client's GET_ACTION and END_EPISODE messages: its episode in progress, recorded."""

    def __init__(self, server: "EnvRunnerServerForExternalInference"):
        self.server = server
        self.rng = np.random.default_rng(None if server.seed is None else [server.seed, next(_sessions)])
        self.version: int | None = None  # of the weights held when the last episode began
        self.discrete = isinstance(server.action_space, gym.spaces.Discrete)
        self._clear()

    def _clear(self) -> None:  # the episode in progress, step by step
        self.observations, self.actions, self.rewards, self.logps = [], [], [], []

    def answer(self, message: dict) -> dict | None:
        """ACTION for GET_ACTION; None for END_EPISODE. ProtocolError for anything the protocol does
        not allow (the episode in progress is then refused)."""
        kind = message["type"]
        try:
            if set(message) - FIELDS[kind]:
                raise ProtocolError(f"{kind}: unknown fields {sorted(set(message) - FIELDS[kind])}; "
                                    f"it has {sorted(FIELDS[kind])}.")
            obs = checked_array(message, "obs", kind, ("float32",),
                                self.server.observation_space.shape)
            return self._get_action(obs, message) if kind == "GET_ACTION" else self._end(obs, message)
        except ProtocolError:
            if self.actions:
                self.server.count("num_external_episodes_refused")
            raise

    def _get_action(self, obs: np.ndarray, message: dict) -> dict:
        server = self.server
        if not self.actions:  # a new episode waits for new weights, as EPISODES_AND_GET_STATE does
            if "reward" in message:
                raise ProtocolError("GET_ACTION.reward: an episode's first GET_ACTION has no reward "
                                    "(nothing was done yet); end each episode with END_EPISODE.")
            self.version = server.state_message(self.version)[1]
        elif len(self.actions) >= server.max_episode_steps:
            raise ProtocolError(f"GET_ACTION: the episode has max_episode_steps="
                                f"{server.max_episode_steps} steps already: truncate it in the "
                                "simulator (END_EPISODE with truncated=true).")
        else:
            self.rewards.append(_reward(message, "GET_ACTION"))
        action, logp = act(server.network, server.head, obs, self.rng, server.config.explore)
        self.observations.append(obs)
        self.actions.append(action)
        self.logps.append(logp)
        env_action = numpy_mlp.to_env_actions(action, server.action_space)
        return {"type": "ACTION", "action": int(env_action) if self.discrete
                else encode_array(np.asarray(env_action, dtype=np.float32))}

    def _end(self, obs: np.ndarray, message: dict) -> None:
        if not self.actions:
            raise ProtocolError("END_EPISODE without a GET_ACTION before it: an episode has 1 to "
                                "max_episode_steps steps.")
        reward = _reward(message, "END_EPISODE")
        terminated, truncated = checked_ending(message, "END_EPISODE")
        episode = SingleAgentEpisode(
            np.stack([*self.observations, obs]),
            np.asarray(self.actions, dtype=np.int64 if self.discrete else np.float32),
            np.asarray([*self.rewards, reward], dtype=np.float32),
            {"action_logp": np.asarray(self.logps, dtype=np.float32)},
            is_terminated=terminated, is_truncated=truncated)
        self._clear()
        self.server.add_episodes([episode])
