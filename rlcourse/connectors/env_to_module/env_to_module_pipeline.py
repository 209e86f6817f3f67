"""EnvToModulePipeline: the connectors `config.env_runners(env_to_module_connector=fn)` returns
(ConnectorV2s, or functions obs_batch -> obs_batch keeping the space), applied in order. Runners
record their output in episodes, so the Learner trains on what the policy saw."""

import inspect
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import concatenate, create_empty_array

from rlcourse.connectors.connector_v2 import ConnectorV2
from rlcourse.connectors.env_to_module.frame_stacking import FrameStackingEnvToModule
from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.validation import ConfigError

Connector = ConnectorV2 | Callable[[Any], np.ndarray]


def call_connector_factory(factory: Callable, env: Any, spaces: dict | None) -> list[Connector]:
    """The connectors `factory` returns, called as RLlib 2.60 does, `fn(env, spaces, device)`, or
    with as many of these as it takes (`fn(env)`, `FlattenObservations`); env None: probing."""
    try:
        kinds = [p.kind for p in inspect.signature(factory).parameters.values()]
    except (TypeError, ValueError):  # a builtin without a signature: give it everything
        kinds = None
    n = 3 if kinds is None or inspect.Parameter.VAR_POSITIONAL in kinds else sum(
        kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        for kind in kinds)
    result = factory(*(env, spaces, None)[:min(n, 3)])
    connectors = list(result) if isinstance(result, list | tuple) else [result]
    for connector in connectors:
        if not callable(connector):
            raise ConfigError("env_to_module_connector", factory, f"it returned {connector!r}, "
                              "which is not a connector: return a ConnectorV2 such as "
                              "MeanStdFilter(), a function obs -> obs, or a list of them.",
                              "env_runners")
    return connectors


class EnvToModulePipeline:
    """The connectors in order; `observation_space` is what the module is built for."""

    def __init__(self, connectors: list[Connector], input_observation_space: gym.Space,
                 input_action_space: gym.Space, update_stats: bool = True):
        self.connectors = connectors
        self.stateful = [c for c in connectors if isinstance(c, ConnectorV2)]  # functions have none
        self.update_stats = update_stats  # False in evaluation: statistics frozen
        self.input_observation_space = input_observation_space
        space = input_observation_space
        for connector in self.stateful:
            space = connector.recompute_output_observation_space(space, input_action_space)
        self.observation_space = space
        # The runner acts on its stacks; episodes keep the frames before it (frame_stacking.py).
        self.frame_stacking = next((c for c in connectors
                                    if isinstance(c, FrameStackingEnvToModule)), None)
        if self.frame_stacking is not None and connectors[-1] is not self.frame_stacking:
            raise ConfigError("env_to_module_connector", connectors, "put FrameStackingEnvToModule "
                              "last: it stacks the frames the other connectors made.", "env_runners")

    def __call__(self, observations: Any) -> Any:
        for connector in self.connectors:
            if isinstance(connector, ConnectorV2):
                observations = connector(observations, update=self.update_stats)
            else:
                observations = connector(observations)
        return observations

    def process_items(self, items: list[Any]) -> list[Any] | np.ndarray:
        """Single observations (ended episodes' last ones) as one batch."""
        if not self.connectors:
            return items
        space = self.input_observation_space
        return self(concatenate(space, items, create_empty_array(space, len(items))))

    def get_state(self) -> list[dict[str, Any]]:
        """Each ConnectorV2's state, in order (plain data)."""
        return [c.get_state() for c in self.stateful]

    def check_state(self, states: Any, where: str) -> None:
        """Refuse saved `get_state()` or merged states (None: none) before any step takes one."""
        if states is None:
            return
        if not isinstance(states, list):
            raise CheckpointError(f"{where} must be a list of each connector's state.")
        for k, (connector, state) in enumerate(zip(self.stateful, states, strict=False)):
            connector.check_state(state, f"{where}[{k}]")

    def set_state(self, states: list[dict[str, Any]] | None) -> None:
        """Take `get_state()`'s or `merge_states()`'s result (None: nothing to take)."""
        for connector, state in zip(self.stateful, states or [], strict=False):
            connector.set_state(state)

    def pop_buffers(self) -> list[dict[str, Any]] | None:
        """What the connectors learned since the last call; None if nothing."""
        buffers = [c.pop_buffer() for c in self.stateful]
        return buffers if any(buffers) else None

    def merge_states(self, base: list[dict[str, Any]] | None,
                     buffers: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """`base` (the merged states so far, or None) plus several runners' `pop_buffers()`."""
        base = base or [{}] * len(self.stateful)
        return [type(c).merge_states(b, [runner[k] for runner in buffers])
                for k, (c, b) in enumerate(zip(self.stateful, base, strict=True))]


def build_env_to_module_pipeline(config: Any, observation_space: gym.Space,
                                 action_space: gym.Space, env: Any = None) -> EnvToModulePipeline:
    """The pipeline of `config.env_to_module_connector`; statistics frozen in evaluation."""
    factory = config.env_to_module_connector
    spaces = {"__env_single__": (observation_space, action_space)}
    if env is not None:
        spaces["__env__"] = (env.observation_space, env.action_space)
    connectors = [] if factory is None else call_connector_factory(factory, env, spaces)
    return EnvToModulePipeline(connectors, observation_space, action_space,
                               update_stats=not config.in_evaluation)
