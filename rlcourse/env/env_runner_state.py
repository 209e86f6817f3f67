"""The values of a saved EnvRunner state (`get_state()`), checked in the runner's process before it
takes any, so an edited checkpoint is refused at restore, naming the field, instead of showing later
as a NaN observation or an attribute set on an env (connectors check theirs: ConnectorV2)."""

from typing import Any

from rlcourse.env.env_state import check_env_state, wrapper_layers
from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.state_values import (
    check_array,
    check_counter,
    check_generator,
    check_like,
    check_numbers,
    decode,
)

EPISODE_KEYS = {"obs", "ids", "t_started", "running_returns", "envs", "hooks"}  # no hooks: older
HOOK_KEYS = {"custom_data", "observations", "actions", "rewards"}


def check_runner_state(runner: Any, state: Any, where: str) -> None:
    """A single- or multi-agent runner's saved state, against `runner` (which it leaves as it is)."""
    if not isinstance(state, dict):
        raise CheckpointError(f"{where} must be a dict.")
    check_counter(state.get("num_env_steps_lifetime"), f"{where}.num_env_steps_lifetime")
    if hasattr(runner, "modules"):  # a MultiAgentEnvRunner: one random generator per module
        rngs = state.get("module_rngs")
        if not isinstance(rngs, dict) or not set(rngs) <= set(runner.modules):
            raise CheckpointError(f"{where}.module_rngs must be a dict of this runner's modules "
                                  f"{sorted(runner.modules)}.")
        for mid, rng in rngs.items():
            check_generator(rng, f"{where}.module_rngs[{mid!r}]")
        return
    if state.get("module_rng") is not None:
        check_generator(state["module_rng"], f"{where}.module_rng")
    if runner.env_to_module is not None:
        runner.env_to_module.check_state(state.get("env_to_module"), f"{where}.env_to_module")
    envs = getattr(runner.env, "envs", None)
    if envs is None:  # ASYNC sub-envs, whose state is not restored
        return
    episodes = state.get("episodes")
    saved_envs, here = ((episodes.get("envs"), f"{where}.episodes.envs")
                        if isinstance(episodes, dict) and episodes
                        else (state.get("envs"), f"{where}.envs"))
    if saved_envs is not None:  # first, as another number of sub-envs shows everywhere
        if not isinstance(saved_envs, list) or not all(isinstance(e, list) for e in saved_envs):
            raise CheckpointError(f"{here} must be a list of {len(envs)} sub-envs' states.")
        layers = [len(wrapper_layers(env)) for env in envs]
        if [len(env) for env in saved_envs] != layers:
            raise CheckpointError(
                f"{here}: the checkpoint has sub-envs with {[len(e) for e in saved_envs]} layers "
                f"(env and wrappers), this runner's have {layers}: check num_envs_per_env_runner "
                "and restart_failed_sub_environments, which must be as when it was saved.")
        for i, (env, saved) in enumerate(zip(envs, saved_envs, strict=True)):
            check_env_state(env, saved, f"{here}[{i}]")
    if episodes is not None:
        _check_episodes(runner, episodes, len(envs), f"{where}.episodes")


def _check_episodes(runner: Any, episodes: Any, n: int, where: str) -> None:
    """The running episodes: one per sub-env, the observations the module acts on next."""
    # "module_state": a stateful module's state per sub-env (use_lstm), saved with its episodes.
    if not isinstance(episodes, dict) or set(episodes) - {"module_state"} not in (
            EPISODE_KEYS, EPISODE_KEYS - {"hooks"}):
        raise CheckpointError(f"{where} must be a dict with keys {sorted(EPISODE_KEYS)}.")
    for key in ("ids", "t_started", "running_returns"):
        if not isinstance(episodes[key], list) or len(episodes[key]) != n:
            raise CheckpointError(f"{where}.{key} must be a list of {n} (one per sub-env).")
    if not all(isinstance(i, str) for i in episodes["ids"]):
        raise CheckpointError(f"{where}.ids must be strings.")
    for i, t in enumerate(episodes["t_started"]):
        check_counter(t, f"{where}.t_started[{i}]")
    check_numbers(episodes["running_returns"], f"{where}.running_returns")
    obs = decode(episodes["obs"], f"{where}.obs")
    if getattr(runner, "_obs", None) is not None:  # after the connectors: as this runner's own
        check_like(obs, runner._obs, f"{where}.obs")
    else:
        check_array(obs, f"{where}.obs", rows=n)
    hooks = episodes.get("hooks")  # None: no episode hooks configured
    if hooks is not None and (not isinstance(hooks, list) or len(hooks) != n):
        raise CheckpointError(f"{where}.hooks must be a list of {n} running episodes.")
    for i, episode in enumerate(hooks or ()):
        here = f"{where}.hooks[{i}]"
        if not isinstance(episode, dict) or set(episode) != HOOK_KEYS:
            raise CheckpointError(f"{here} must be a dict with keys {sorted(HOOK_KEYS)}.")
        check_numbers(episode["rewards"], f"{here}.rewards")
        for key in ("observations", "actions"):
            for t, value in enumerate(decode(episode[key], f"{here}.{key}")):
                check_array(value, f"{here}.{key}[{t}]")
        decode(episode["custom_data"], f"{here}.custom_data")
