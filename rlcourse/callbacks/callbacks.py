"""Callbacks: hooks into training that lessons and users override (RLlib calls it RLlibCallback)."""

from typing import Any


class Callbacks:
    """Subclass and override the hooks you need; each one does nothing by default.

    `on_episode_end` runs where the episode ran: inside the EnvRunner, which is a separate Ray actor
    process when `num_env_runners > 0`. It receives the episode's last chunk.
    """

    def on_algorithm_init(self, *, algorithm: Any, **kwargs: Any) -> None:
        """After the Algorithm has built its runners and learners."""

    def on_episode_end(self, *, episode: Any, env_runner: Any, env_index: int, **kwargs: Any) -> None:
        """When an episode ends on an EnvRunner (terminated or truncated)."""

    def on_train_result(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
        """After each `Algorithm.train()`, with the result dict (you may add keys to it)."""

    def on_evaluate_end(self, *, algorithm: Any, evaluation_metrics: dict, **kwargs: Any) -> None:
        """After each evaluation, with its results (the `evaluation` part of a result dict)."""

    def on_env_runners_recreated(self, *, algorithm: Any, env_runner_indices: list[int],
                                 is_evaluation: bool, **kwargs: Any) -> None:
        """After Ray restarted failed runner actors and they answered their health probe
        (indices count from 0 within their EnvRunnerGroup)."""

    def on_checkpoint_loaded(self, *, algorithm: Any, **kwargs: Any) -> None:
        """After `restore_from_path` or `Algorithm.from_checkpoint` restored a checkpoint."""
