"""CheckpointKeeper: the latest checkpoint, and beside it the best one by a metric of the results
(Tune's `CheckpointConfig(checkpoint_score_attribute, checkpoint_score_order, num_to_keep=1)`)."""

import json
import math
import numbers
import os
from pathlib import Path
from typing import Any

from rlcourse.utils.checkpoints import read_checkpoint, write_checkpoint, write_file

RECORD_FILE = "keeper.json"


class CheckpointKeeper:
    """`root/latest/` after every `update`, `root/best/` a copy of the one whose `metric` was best,
    `root/keeper.json` the best score (written after best/, so never ahead of it).

        keeper = CheckpointKeeper("runs/ppo")   # best by evaluation/env_runners/episode_return_mean
        for _ in range(20):
            keeper.update(algo, algo.train())
        Algorithm.from_checkpoint(keeper.best_path)

    An `evaluation/` metric needs `config.evaluation(evaluation_interval=...)`. `resume=True`
    continues the run saved in `root` and its best; without it a root that holds one is refused.
    """

    def __init__(self, root: str | os.PathLike,
                 metric: str = "evaluation/env_runners/episode_return_mean",
                 mode: str = "max", resume: bool = False) -> None:
        if mode not in ("max", "min"):
            raise ValueError(f"mode={mode!r}: use 'max' (higher is better) or 'min'.")
        self.root = Path(root).resolve()
        self.metric, self.mode = metric, mode
        self.latest_path = self.root / "latest"
        self.best_score: float | None = None
        self.best_iteration: int | None = None
        record_file = self.root / RECORD_FILE
        if not resume and (record_file.exists() or self.latest_path.exists()):
            raise ValueError(f"{self.root} holds the checkpoints of a run (latest/): pass "
                             "resume=True to continue that run and its best, or use another root.")
        if not record_file.exists():
            return
        try:
            record = json.loads(record_file.read_text())
            metric, mode = record["metric"], record["mode"]
            self.best_score, self.best_iteration = record["best_score"], record["best_iteration"]
        except (ValueError, KeyError, TypeError) as e:  # JSONDecodeError is a ValueError
            raise ValueError(f"{record_file} is not a keeper record ({type(e).__name__}: {e}): "
                             "restore it, or delete it to resume without the best so far (the "
                             "next best replaces best/).") from None
        if (metric, mode) != (self.metric, self.mode):
            raise ValueError(f"{record_file} keeps the best by metric={metric!r}, mode={mode!r}, "
                             f"not metric={self.metric!r}, mode={self.mode!r}: pass the same "
                             "metric and mode to resume, or use another root.")

    @property
    def best_path(self) -> Path | None:
        """The best checkpoint's directory; None until a result had a finite score."""
        return None if self.best_score is None else self.root / "best"

    def update(self, algo: Any, result: dict[str, Any]) -> bool:
        """Call after every `train()`: save `algo` as latest/, and if `result`'s score is the best
        so far (a missing evaluation or NaN is not), copy the weights that scored it to best/.

        With `evaluation_parallel_to_training` those are the iteration's starting weights: the
        latest checkpoint before this update replaces it."""
        score = self._score(algo, result)
        new_best = score is not None and math.isfinite(score) and (
            self.best_score is None or (score > self.best_score if self.mode == "max"
                                        else score < self.best_score))
        scored_start = (self.metric.startswith("evaluation/")
                        and bool(getattr(algo.config, "evaluation_parallel_to_training", False)))
        if new_best and scored_start:
            new_best = self.latest_path.exists()  # a first iteration's start was never saved
            if new_best:
                self._keep_best(score, result["training_iteration"] - 1)
        algo.save_to_path(self.latest_path)
        if new_best and not scored_start:
            self._keep_best(score, result["training_iteration"])
        return new_best

    def _keep_best(self, score: float, iteration: int) -> None:
        write_checkpoint(self.root / "best", *read_checkpoint(self.latest_path))
        self.best_score, self.best_iteration = score, iteration
        record = {"metric": self.metric, "mode": self.mode, "best_score": score,
                  "best_iteration": iteration}
        # Replaced atomically; a killed write's leftover .tmp is overwritten next time.
        write_file(self.root / f".{RECORD_FILE}.tmp", json.dumps(record).encode(),
                   replace=self.root / RECORD_FILE)

    def _score(self, algo: Any, result: dict[str, Any]) -> float | None:
        """The metric's value, or None if this iteration did not evaluate; a path that does not
        lead to a number, or to an evaluation that never runs, raises (instead of never keeping a
        best)."""
        keys = self.metric.split("/")
        if keys[0] == "evaluation" and "evaluation" not in result:
            if getattr(algo.config, "evaluation_interval", None):
                return None
            raise ValueError(f"metric={self.metric!r} is an evaluation result, but this algorithm "
                             "does not evaluate: set config.evaluation(evaluation_interval=...), "
                             "or pass a training metric such as "
                             "metric='env_runners/episode_return_mean'.")
        value: Any = result
        for depth, key in enumerate(keys):
            if not isinstance(value, dict) or key not in value:
                where = "/".join(keys[:depth]) or "the result"
                found = sorted(value) if isinstance(value, dict) else type(value).__name__
                raise ValueError(f"metric={self.metric!r}: {where} has no key {key!r}; it has "
                                 f"{found}. Check the metric's spelling.")
            value = value[key]
        if not isinstance(value, numbers.Real):
            raise ValueError(f"metric={self.metric!r} is {type(value).__name__}, not a number: "
                             "name a number in the result.")
        return float(value)
