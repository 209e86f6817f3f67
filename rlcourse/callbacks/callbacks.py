"""Callbacks (RLlib's RLlibCallback). Episode and sample hooks run inside each EnvRunner, so they
cannot change the driver's objects; what they log with `metrics_logger.log_value(...)` appears in
result["env_runners"] (evaluation's in result["evaluation"]["env_runners"]). The rest run in the
driver."""

import difflib
import inspect
from typing import Any


class Callbacks:
    """Subclass and override the hooks you need; each one does nothing by default. Hooks take
    keyword arguments only: name the ones you use and end with `**kwargs`."""

    def on_algorithm_init(self, *, algorithm: Any, **kwargs: Any) -> None:
        """Once the Algorithm is built: runners, learners and its own parts (a replay buffer...)."""

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


HOOKS = tuple(name for name in vars(Callbacks) if name.startswith("on_"))


def callbacks_problem(callbacks_class: type) -> str | None:
    """Why `callbacks_class` would go wrong unseen, or None: an `on_*` method that is no hook (a
    typo, or an RLlib-only hook) is never called; a hook that cannot take the keywords it is
    called with fails only when it first runs (an episode hook: inside a runner)."""
    for name in dir(callbacks_class):
        if name.startswith("on_") and name not in HOOKS and callable(getattr(callbacks_class, name)):
            close = difflib.get_close_matches(name, HOOKS, n=1, cutoff=0.8)
            return (f"{callbacks_class.__name__}.{name} is not a hook (a typo, or an RLlib hook "
                    f"rlcourse lacks), so nothing would call it"
                    f"{f' (did you mean {close[0]}?)' if close else ''}. The hooks are "
                    f"{', '.join(HOOKS)}.")
    for hook in filter(lambda hook: overrides(callbacks_class, hook), HOOKS):
        passed = [p.name for p in inspect.signature(getattr(Callbacks, hook)).parameters.values()
                  if p.kind is p.KEYWORD_ONLY]
        signature = inspect.signature(getattr(callbacks_class, hook))
        try:
            signature.bind(None, **dict.fromkeys(passed))
        except TypeError as e:
            named = [p for p in signature.parameters if p in passed] or passed[:1]
            return (f"{callbacks_class.__name__}.{hook}{signature} cannot take the keyword "
                    f"arguments it is called with ({', '.join(passed)}): {e}. Hooks take keyword "
                    f"arguments: def {hook}(self, *, {', '.join(named)}, **kwargs).")
    return None
