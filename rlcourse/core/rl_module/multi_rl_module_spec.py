"""MultiRLModuleSpec: one RLModuleSpec per module id (RLlib's shape), each module's spaces those of
the agents mapped to it unless its spec names them. Torch-free: configs and runners import it."""

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.core import DEFAULT_MODULE_ID
from rlcourse.core.rl_module.rl_module_spec import RLModuleSpec
from rlcourse.env import registry
from rlcourse.env.env_context import EnvContext
from rlcourse.env.multi_agent_env import MultiAgentEnv, names
from rlcourse.env.multi_agent_episode import ModuleID, MultiAgentEpisode

NUM_PROBE_EPISODES = 8  # a mapping may depend on the episode (self-play): ask it for several


@dataclass
class MultiRLModuleSpec:
    """Which RLModuleSpec each module id is built from."""

    rl_module_specs: dict[ModuleID, RLModuleSpec] = field(default_factory=dict)

    @property
    def module_ids(self) -> list[ModuleID]:
        return list(self.rl_module_specs)

    def spaces(self) -> dict[ModuleID, tuple[gym.Space, gym.Space]]:
        """{module_id: (observation_space, action_space)}, once the spaces are filled in."""
        return {mid: (s.observation_space, s.action_space) for mid, s in self.rl_module_specs.items()}


def specs_from_policies(policies: Iterable[ModuleID] | dict[ModuleID, RLModuleSpec | None] | None
                        ) -> dict[ModuleID, RLModuleSpec]:
    """`config.multi_agent(policies=...)` (a set of ids, or {id: None or RLModuleSpec}; None:
    RLlib's "default_policy") as specs."""
    if policies is None:
        return {DEFAULT_MODULE_ID: RLModuleSpec()}
    if not isinstance(policies, dict):
        policies = dict.fromkeys(sorted(policies, key=str))  # a set: fix an order
    for module_id, spec in policies.items():
        if not isinstance(module_id, str):
            raise ValueError(f"module ids are strings (RLlib's ModuleID); got {module_id!r}.")
        if spec is not None and not isinstance(spec, RLModuleSpec):
            raise ValueError(f"policies[{module_id!r}] is a {type(spec).__name__}: give None "
                             "(spaces from the env) or an RLModuleSpec(observation_space=..., "
                             "action_space=...) in config.multi_agent(policies=...).")
        for arg in ("observation_space", "action_space"):
            if spec is not None and not isinstance(getattr(spec, arg), gym.Space | None):
                raise ValueError(f"policies[{module_id!r}] is an RLModuleSpec({arg}="
                                 f"{getattr(spec, arg)!r}): give a gymnasium space, e.g. gymnasium."
                                 "spaces.Box(-1.0, 1.0, (2,)), or None for its agents' space.")
    return {module_id: spec or RLModuleSpec() for module_id, spec in policies.items()}


def module_config(config: Any, module_id: ModuleID, spec: MultiRLModuleSpec, index: int) -> Any:
    """The config of module `module_id`: its spec's class and model_config where set, and a seed
    of its own (separate policies must not start identical)."""
    own = spec.rl_module_specs[module_id]
    sub = config.copy()
    if own.module_class is not None:
        sub.rl_module_class = own.module_class
    if own.model_config is not None:
        sub.model_config = {**config.model_config, **own.model_config}
    if config.seed is not None:
        sub.seed = config.seed + index
    return sub


def unknown_module_error(agent_id: Any, module_id: Any, module_ids: Iterable[ModuleID]) -> ValueError:
    return ValueError(
        f"policy_mapping_fn mapped agent {agent_id!r} to policy {module_id!r}, which is not one of "
        f"the policies {names(module_ids)}. Add {module_id!r} to "
        "config.multi_agent(policies=...), or make policy_mapping_fn return one of those.")


def spaces_match(have: tuple[gym.Space, gym.Space], want: tuple[gym.Space, gym.Space]) -> bool:
    """Whether an agent's spaces fit a module built for `want`: same kind, shape, dtype and size."""
    return all(_key(a) == _key(b) for a, b in zip(have, want, strict=True))


def _key(space: gym.Space) -> tuple:
    return (type(space).__name__, space.shape, space.dtype, getattr(space, "n", None),
            getattr(space, "start", None) if isinstance(space, gym.spaces.Discrete) else None)


def space_mismatch_error(agent_id: Any, module_id: ModuleID, have: tuple, want: tuple,
                         source: str) -> ValueError:
    return ValueError(
        f"Agent {agent_id!r} has observation_space {have[0]} and action_space {have[1]}, but it is "
        f"mapped to policy {module_id!r}, whose spaces are {want[0]} and {want[1]} ({source}). A "
        "policy acts for agents of one shape only: map this agent to another policy in "
        "policy_mapping_fn, or give the policy matching spaces in config.multi_agent(policies=...).")


def resolve_multi_rl_module_spec(policies: Any, policy_mapping_fn: Callable | None, env: Any,
                                 env_name: str = "the env") -> MultiRLModuleSpec:
    """The specs of `policies`, every module's spaces filled in from `env`'s agents, checking
    first that each agent maps to a known module of its spaces."""
    specs = specs_from_policies(policies)
    source = {mid: "set in config.multi_agent(policies=...)" for mid, s in specs.items()
              if s.observation_space is not None}
    for _ in range(NUM_PROBE_EPISODES):
        probe = MultiAgentEpisode(agent_to_module_mapping_fn=policy_mapping_fn, env_name=env_name)
        for agent_id in env.possible_agents:
            module_id = probe.agent_to_module_mapping_fn(agent_id, probe)  # None: the default
            if module_id not in specs:
                raise unknown_module_error(agent_id, module_id, specs)
            have = (env.get_observation_space(agent_id), env.get_action_space(agent_id))
            spec = specs[module_id]
            if spec.observation_space is None or spec.action_space is None:
                specs[module_id] = spec = replace(spec, observation_space=have[0], action_space=have[1])
                source[module_id] = f"those of agent {agent_id!r}, the first mapped to it"
            want = (spec.observation_space, spec.action_space)
            if not spaces_match(have, want):
                raise space_mismatch_error(agent_id, module_id, have, want, source[module_id])
    # A module the probes did not reach (a league snapshot drawn at random) gets the agents' spaces
    # if every agent has the same ones (as in self-play), as RLlib does.
    spaces = [(env.get_observation_space(a), env.get_action_space(a)) for a in env.possible_agents]
    shared = spaces and all(spaces_match(s, spaces[0]) for s in spaces)
    for mid, spec in specs.items():
        if spec.observation_space is None:
            if not shared:
                raise ValueError(
                    f"No agent of {env_name} was mapped to policy {mid!r} (possible_agents: "
                    f"{list(env.possible_agents)}), so its spaces are unknown. Give it spaces with "
                    "RLModuleSpec(observation_space=..., action_space=...) in "
                    "config.multi_agent(policies=...), or remove it.")
            specs[mid] = replace(spec, observation_space=spaces[0][0], action_space=spaces[0][1])
    return MultiRLModuleSpec(specs)


def multi_rl_module_spec_for(config: Any, env: Any = None) -> MultiRLModuleSpec:
    """`config.get_multi_rl_module_spec(env)`: resolve against `env`, or one built from the config."""
    name = registry.env_name(config.env)
    own = env is None
    env = config.get_env_creator()(EnvContext(config.env_config)) if own else env
    try:
        if not isinstance(env, MultiAgentEnv):
            raise TypeError(f"Env {name!r} is a {type(env).__name__}, not a MultiAgentEnv: "
                            "config.multi_agent() needs the dict API (wrap a single-agent env "
                            "with make_multi_agent).")
        spec = resolve_multi_rl_module_spec(config.policies, config.policy_mapping_fn, env, name)
    finally:
        if own:
            env.close()
    check_box_observations(config, spec)
    return spec


def check_box_observations(config: Any, spec: MultiRLModuleSpec) -> None:
    """Refuse a default module for non-Box observations: multi-agent has no FlattenObservations."""
    for mid, own in spec.rl_module_specs.items():
        if not (config.rl_module_class or own.module_class
                or isinstance(own.observation_space, gym.spaces.Box)):
            raise ValueError(
                f"Policy {mid!r} observes {own.observation_space}, and the default module takes "
                "Box observations only; a multi-agent config has no env-to-module connectors "
                "(FlattenObservations) to convert them. Give the agents Box observations (one-hot "
                "Discrete ones in the env, gymnasium.spaces.utils.flatten Dict ones), or pass your "
                "own module with config.rl_module(rl_module_class=...).")


def check_multi_agent_settings(config: Any, fail: Callable[[Any, str, str], None]) -> None:
    """`validate()`'s checks of a multi-agent config; `fail(config, setting, fix)` raises."""
    policies, mapping_fn, to_train = config.policies, config.policy_mapping_fn, config.policies_to_train
    if not isinstance(policies, dict | set | frozenset | list | tuple) or not policies:
        fail(config, "policies", "give a non-empty set of module ids, e.g. {'main', 'opponent'}, "
             "or {module_id: None or RLModuleSpec(observation_space=..., action_space=...)}.")
    try:
        specs_from_policies(policies)
    except ValueError as e:
        fail(config, "policies", str(e))
    if mapping_fn is None:
        if list(policies) != [DEFAULT_MODULE_ID]:
            fail(config, "policy_mapping_fn", f"with policies {names(policies)}, say which agent "
                 "acts with which: policy_mapping_fn=lambda agent_id, episode, **kwargs: ...")
    elif not _accepts(mapping_fn, 2):
        fail(config, "policy_mapping_fn", "give a function (agent_id, episode, **kwargs) that "
             "returns a module id.")
    if to_train is None:
        return
    if _accepts(to_train, 2):  # asked once with no episodes: a forgotten `return` trains nothing
        module_id = next(iter(specs_from_policies(policies)))
        try:
            answer = to_train(module_id, [])
        except Exception:  # it reads the episodes: left to training time (learner_group.py)
            return
        check_trains_answer(config, module_id, answer, fail)
        return
    if not isinstance(to_train, set | frozenset | list | tuple):
        fail(config, "policies_to_train", "give module ids (a set), a function (module_id, "
             "batch) -> bool, or None to train every policy.")
    if not to_train:
        fail(config, "policies_to_train", "it is empty, so no policy would train: name the ids "
             "to train, e.g. {'main'}, or None to train every policy.")
    unknown = [m for m in to_train if m not in policies]
    if unknown:
        fail(config, "policies_to_train", f"{unknown[0]!r} is not one of the policies "
             f"{names(policies)}: add it to policies, or train only those.")


def check_trains_answer(config: Any, module_id: ModuleID, answer: Any,
                        fail: Callable[[Any, str, str], None]) -> bool:
    """A `policies_to_train` function's answer for `module_id`, which must be a bool: anything else
    (a forgotten `return`) fails, rather than meaning "do not train"."""
    if not isinstance(answer, bool | np.bool_):
        fail(config, "policies_to_train", f"the function returned {answer!r} for module "
             f"{module_id!r}: return True to train the module id it is given, False to leave it "
             "(or give a set of ids).")
    return bool(answer)


def _accepts(fn: Callable, n: int) -> bool:
    """Whether `fn` is a function of `n` positional arguments (True if Python cannot tell)."""
    try:
        inspect.signature(fn).bind(*range(n))
    except TypeError:
        return False
    except ValueError:  # no signature (some builtins)
        return True
    return True
