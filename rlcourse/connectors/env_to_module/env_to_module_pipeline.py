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
    if isinstance(factory, ConnectorV2):
        raise ConfigError("env_to_module_connector", factory, "pass a function that returns the "
                          f"connector, not the connector: lambda env: {type(factory).__name__}().",
                          "env_runners")
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
        if isinstance(connector, type) or not callable(connector):
            kind = "the class, not an instance" if isinstance(connector, type) else "not a connector"
            raise ConfigError("env_to_module_connector", factory, f"it returned {connector!r}, "
                              f"{kind}: return a ConnectorV2 such as MeanStdFilter() (called), a "
                              "function obs -> obs, or a list of them.", "env_runners")
    return connectors


def probe(connector: Connector, observations: Any, space: gym.Space) -> Any:
    """`connector`'s output for a batch of one observation, refused (ConfigError naming it and its
    form) unless it takes the batch and returns one of `space` (once at build, not per step)."""
    own = isinstance(connector, ConnectorV2)
    name = type(connector).__name__ if own else f"the function {getattr(connector, '__name__', '')}"
    form = ("__call__(self, observations, *, update=True) (not RLlib's __call__(*, rl_module, "
            "batch, ...))" if own else "a function of one argument, the batch of observations")
    try:
        if own and type(connector).__call__ is ConnectorV2.__call__:
            raise TypeError("it defines no __call__")
        inspect.signature(connector).bind(observations, **({"update": False} if own else {}))
    except TypeError as e:
        raise ConfigError("env_to_module_connector", connector, f"{name} cannot take a batch of "
                          f"observations ({e}): a connector is {form}.", "env_runners") from None
    except ValueError:  # no signature (a builtin): call it as it is
        pass
    out = connector(observations, update=False) if own else connector(observations)
    shape = None if space.shape is None else (1, *space.shape)
    if shape is not None and getattr(out, "shape", None) != shape:
        got = f"shape {out.shape}" if isinstance(out, np.ndarray) else repr(type(out).__name__)
        fix = ("override recompute_output_observation_space to give the space it returns" if own
               else "a function keeps the space: to change it, write a ConnectorV2 with "
               "recompute_output_observation_space")
        raise ConfigError("env_to_module_connector", connector, f"{name} returned {got} for a "
                          f"batch of 1 observation; the module is built for {space}, so it must "
                          f"return an array of shape {shape}: {fix}.", "env_runners")
    return out


class EnvToModulePipeline:
    """The connectors in order; `observation_space` is what the module is built for."""

    def __init__(self, connectors: list[Connector], input_observation_space: gym.Space,
                 input_action_space: gym.Space, update_stats: bool = True):
        self.connectors = connectors
        self.stateful = [c for c in connectors if isinstance(c, ConnectorV2)]  # functions have none
        self.update_stats = update_stats  # False in evaluation: statistics frozen
        self.input_observation_space = input_observation_space
        # The runner acts on its stacks; episodes keep the frames before it (frame_stacking.py).
        self.frame_stacking = next((c for c in connectors
                                    if isinstance(c, FrameStackingEnvToModule)), None)
        if self.frame_stacking is not None and connectors[-1] is not self.frame_stacking:
            raise ConfigError("env_to_module_connector", connectors, "put FrameStackingEnvToModule "
                              "last: it stacks the frames the other connectors made.", "env_runners")
        space = input_observation_space
        observations = concatenate(space, [space.sample()], create_empty_array(space, 1))
        for connector in connectors:
            before = space
            if isinstance(connector, ConnectorV2):
                space = connector.recompute_output_observation_space(space, input_action_space)
            # (FrameStackingEnvToModule passes frames through: the runner acts on its stacks)
            observations = probe(connector, observations, before if connector is self.frame_stacking
                                 else space)
        self.observation_space = space

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
    """The pipeline of `config.env_to_module_connector`; statistics frozen in evaluation. Without
    `env` (the algorithm's copy, or a checkpoint's), refuse a learner_connector that stacks frames
    otherwise than its FrameStackingEnvToModule."""
    factory = config.env_to_module_connector
    spaces = {"__env_single__": (observation_space, action_space)}
    if env is not None:
        spaces["__env__"] = (env.observation_space, env.action_space)
    connectors = [] if factory is None else call_connector_factory(factory, env, spaces)
    pipeline = EnvToModulePipeline(connectors, observation_space, action_space,
                                   update_stats=not config.in_evaluation)
    if env is None:
        from rlcourse.connectors.learner.frame_stacking import build_learner_connector  # (a cycle)
        stacking = pipeline.frame_stacking
        build_learner_connector(config, pipeline.observation_space, action_space,
                                stacking.num_frames if stacking else 1)
    return pipeline
