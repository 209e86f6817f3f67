"""A one-line progress report for a Ray Tune run in a notebook (lesson 07): `tuner.fit()` with
`RunConfig(verbose=0, callbacks=[TuneProgress("grid")])` updates one line per reported iteration
instead of printing Tune's tables. Imports Tune: only where Tune runs."""

import time

from IPython.display import display
from ray import tune

RETURN = "env_runners/episode_return_mean"


class TuneProgress(tune.Callback):
    """One display line: trials running and finished, results so far, the best return so far.
    `max_running` is the most trials Tune had running at once (measured, not planned)."""

    def __init__(self, name: str):
        self.name, self.start, self.results, self.best = name, time.perf_counter(), 0, float("-inf")
        self.max_running = 0
        self.line = display(f"{name}: starting trials...", display_id=True)

    def _update(self, trials) -> None:
        running = sum(t.status == "RUNNING" for t in trials)
        self.max_running = max(self.max_running, running)
        done = sum(t.status in ("TERMINATED", "ERROR") for t in trials)
        text = (f"{self.name}: {time.perf_counter() - self.start:5.1f} s | {running} running, "
                f"{done}/{len(trials)} finished | {self.results} results | best return so far "
                f"{self.best:.1f}")
        if self.line is not None:
            self.line.update(text)

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        self.results += 1
        value = result.get("env_runners", {}).get("episode_return_mean", float("nan"))
        if value == value:  # not NaN
            self.best = max(self.best, value)
        self._update(trials)

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        self._update(trials)
