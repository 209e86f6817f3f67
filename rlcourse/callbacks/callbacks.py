"""Callbacks (RLlib's RLlibCallback). Episode and sample hooks run inside each EnvRunner, so they
cannot change the driver's objects; what they log with `metrics_logger.log_value(...)` appears in
result["env_runners"] (evaluation's in result["evaluation"]["env_runners"]). The rest run in the
driver."""

from typing import Any


class Callbacks:
    """Subclass and override the hooks you need; each one does nothing by default. Hooks take
    keyword arguments only: name the ones you use and end with `**kwargs`."""

    def on_algorithm_init(self, *, algorithm: Any, **kwargs: Any) -> None:
        """After the Algorithm has built its runners and learners."""

    def on_episode_start(self, *, episode: Any, env_runner: Any, metrics_logger: Any, env: Any,
                         env_index: int, rl_module: Any, **kwargs: Any) -> None:
        """When sub-env `env_index` resets. `episode` is a RunningEpisode (env/episode_hooks.py):
        set up `episode.custom_data` here."""

    def on_episode_step(self, *, episode: Any, env_runner: Any, metrics_logger: Any, env: Any,
                        env_index: int, rl_module: Any, **kwargs: Any) -> None:
        """After each env step of the episode: `episode.get_observations(-1)`, `get_actions(-1)`,
        `get_rewards(-1)`, `get_infos(-1)` are that step's. Costs a call per sub-env and step."""

    def on_episode_end(self, *, episode: Any, env_runner: Any, metrics_logger: Any, env: Any,
                       env_index: int, rl_module: Any, **kwargs: Any) -> None:
        """When an episode ends. `episode` is its chunk from the last sample() only (an episode may
        span several): collect what the whole episode did in `episode.custom_data`."""

    def on_sample_end(self, *, env_runner: Any, metrics_logger: Any, samples: list,
                      **kwargs: Any) -> None:
        """After each EnvRunner.sample(), with the episode chunks it returns."""

    def on_train_result(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
        """After each `Algorithm.train()`, with the result dict (you may add keys to it)."""

    def on_evaluate_start(self, *, algorithm: Any, **kwargs: Any) -> None:
        """Before each evaluation."""

    def on_evaluate_end(self, *, algorithm: Any, evaluation_metrics: dict, **kwargs: Any) -> None:
        """After each evaluation, with its results (the `evaluation` part of a result dict)."""

    def on_env_runners_recreated(self, *, algorithm: Any, env_runner_indices: list[int],
                                 is_evaluation: bool, **kwargs: Any) -> None:
        """After Ray restarted failed runner actors (indices within their EnvRunnerGroup)."""

    def get_state(self) -> dict[str, Any]:
        """What checkpoints keep of this object, as plain data (say, a self-play league's)."""
        return {}

    def check_state(self, state: dict[str, Any]) -> None:
        """Raise ValueError, naming the field, if `set_state` could not take `state` (a restore
        calls it before it changes anything)."""
        if not isinstance(state, dict):
            raise ValueError(f"must be a dict, not {type(state).__name__}.")

    def set_state(self, state: dict[str, Any]) -> None:
        """Take back what `get_state` returned, when a checkpoint is restored."""

    def on_checkpoint_loaded(self, *, algorithm: Any, **kwargs: Any) -> None:
        """After `restore_from_path` or `Algorithm.from_checkpoint` restored a checkpoint."""


def overrides(callbacks_class: type, hook: str) -> bool:
    """Whether `callbacks_class` defines its own `hook` (Callbacks' own does nothing)."""
    return getattr(callbacks_class, hook) is not getattr(Callbacks, hook)


def overrides_episode_hooks(callbacks_class: type) -> bool:
    """Whether `callbacks_class` has episode hooks of its own, which runners then call."""
    hooks = ("on_episode_start", "on_episode_step", "on_episode_end")
    return any(overrides(callbacks_class, hook) for hook in hooks)
