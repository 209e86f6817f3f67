"""EnvRunnerStateMixin: EnvRunner's get_state / set_state, for checkpoints (RLlib's EnvRunner is a
Checkpointable with these two methods; the Algorithm's checkpoint holds each runner's state).

The state is plain data (env_state.py: no pickle): the step count, the module's random generator,
the connectors' statistics, and where the sub-envs' episodes stand (their envs' state, the current
observations, episode ids, start steps, running returns and the episode hooks' data), so a restored
runner continues the same episodes. Between episodes, only the envs' random generators are kept.
"""

from gymnasium.vector import SyncVectorEnv

from rlcourse.env.env_state import get_env_state, set_env_state
from rlcourse.utils.serialization import from_plain, to_plain


class EnvRunnerStateMixin:
    """get_state / set_state for EnvRunner (env_runner.py), over its env, module, connectors and the
    sub-envs' ongoing episodes (`_obs`, `_ids`, `_t_started`, `_running_returns`)."""

    def get_state(self) -> dict:
        """Everything needed to continue sampling exactly here, as plain data (see env_state.py).

        Sub-envs of an ASYNC vector env live in other processes: their episodes restart instead.
        """
        sync = isinstance(self.env, SyncVectorEnv)
        envs = [get_env_state(env) for env in self.env.envs] if sync else None
        state = {"num_env_steps_lifetime": self._num_env_steps_lifetime,
                 "module_rng": to_plain(self.module.rng) if hasattr(self.module, "rng") else None,
                 "episodes": None, "envs": None, "env_to_module": self.env_to_module.get_state()}
        if sync and not self._needs_reset:
            state["episodes"] = {
                "obs": to_plain(self._obs), "ids": self._ids, "t_started": self._t_started,
                "running_returns": self._running_returns, "envs": envs,
                "hooks": self.hooks.get_state() if self.hooks else None}
        else:  # between episodes: the envs' random generators, so their next resets are as planned
            state["envs"] = envs
        return state

    def set_state(self, state: dict) -> None:
        """Continue from `get_state()` of a runner built with the same config."""
        self._num_env_steps_lifetime = state["num_env_steps_lifetime"]
        if state["module_rng"] is not None and hasattr(self.module, "rng"):
            self.module.rng = from_plain(state["module_rng"])
        self.env_to_module.set_state(state.get("env_to_module"))  # none in older checkpoints
        episodes = state["episodes"]
        envs = episodes["envs"] if episodes else state.get("envs")  # no "envs" in older checkpoints
        sync = isinstance(self.env, SyncVectorEnv)
        if sync and envs is not None:
            for env, env_state in zip(self.env.envs, envs, strict=True):
                set_env_state(env, env_state)
        self._needs_reset = episodes is None or not sync
        if self._needs_reset:
            return
        self._obs = from_plain(episodes["obs"])
        self._ids, self._t_started = list(episodes["ids"]), list(episodes["t_started"])
        self._running_returns = list(episodes["running_returns"])
        if self.hooks and episodes.get("hooks") is not None:
            self.hooks.set_state(episodes["hooks"])
        elif self.hooks:  # saved without these callbacks: the hooks see the episodes start here
            self.hooks.on_reset(self._obs, {})
