"""TrainingDashboard: a live view of a training run in a notebook, built on ipywidgets and matplotlib.

    dashboard = TrainingDashboard(target_return=450, max_iterations=60)
    dashboard.display()
    results = train(algo, dashboard)   # or: for ...: dashboard.update(algo.train())

It shows a progress bar (toward the target return, or through the iteration budget), a status line
(iteration, return, env steps, env steps/s, time), the return curve and the env-steps/s curve.
The series behind the charts live in `TrainingHistory`, which needs no frontend (tests read it).
Charts are redrawn at most every `redraw_interval_s` (and with at most a tenth of the wall time), so
calling update() every iteration is cheap.
"""

import io
import math
import time
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as widgets
from IPython.display import display as ipython_display
from matplotlib.figure import Figure


@dataclass
class TrainingHistory:
    """One entry per result: the numbers the dashboard draws."""

    iterations: list[int] = field(default_factory=list)
    env_steps: list[int] = field(default_factory=list)  # num_env_steps_sampled_lifetime
    returns: list[float] = field(default_factory=list)  # episode_return_mean (NaN: none finished)
    env_steps_per_s: list[float] = field(default_factory=list)
    elapsed_s: list[float] = field(default_factory=list)  # wall time since the first iteration began
    evaluation: list[tuple[int, float]] = field(default_factory=list)  # (env steps, greedy return)

    def add(self, result: dict[str, Any], elapsed_s: float) -> None:
        self.iterations.append(result["training_iteration"])
        self.env_steps.append(result["num_env_steps_sampled_lifetime"])
        self.returns.append(float(result["env_runners"]["episode_return_mean"]))
        self.env_steps_per_s.append(float(result["num_env_steps_sampled_throughput"]))
        self.elapsed_s.append(elapsed_s)
        if "evaluation" in result:
            self.evaluation.append((self.env_steps[-1],
                                    float(result["evaluation"]["env_runners"]["episode_return_mean"])))

    def __len__(self) -> int:
        return len(self.iterations)


class HistoryCharts:
    """The return chart and the throughput chart on one figure, redrawn by moving their lines'
    data, which is cheaper than building a new figure each time."""

    def __init__(self, figure: Figure, target_return: float | None):
        self.figure = figure
        self.return_ax, self.speed_ax = figure.subplots(1, 2)
        figure.subplots_adjust(left=0.08, right=0.98, bottom=0.17, top=0.9, wspace=0.28)
        (self.returns,) = self.return_ax.plot([], [], marker=".",
                                              label="training return (last 100 episodes)")
        (self.evaluation,) = self.return_ax.plot([], [], "s")
        if target_return is not None:
            self.return_ax.axhline(target_return, color="gray", linestyle="--", label="target")
        self.return_ax.set(xlabel="env steps sampled", ylabel="episode return", title="Return")
        (self.speed,) = self.speed_ax.plot([], [], marker=".", color="tab:green")
        self.speed_ax.set(xlabel="env steps sampled", ylabel="env steps / s", title="Throughput")

    def draw(self, history: TrainingHistory) -> None:
        self.returns.set_data(history.env_steps, history.returns)
        if history.evaluation:
            self.evaluation.set_data(*zip(*history.evaluation, strict=True))
            self.evaluation.set_label("evaluation return (greedy)")
        self.speed.set_data(history.env_steps, history.env_steps_per_s)  # one x-axis for both
        self.return_ax.legend(loc="lower right", fontsize="small")
        for ax in (self.return_ax, self.speed_ax):
            ax.relim()
            ax.autoscale_view()
        self.speed_ax.set_ylim(0, 1.15 * max(history.env_steps_per_s, default=0.0) or 1.0)


class TrainingDashboard:
    """Progress bar, status line and two live charts for a training run; see the module docstring."""

    def __init__(self, target_return: float | None = None, max_iterations: int | None = None,
                 title: str = "Training", redraw_interval_s: float = 1.0):
        self.target_return = target_return
        self.max_iterations = max_iterations
        self.redraw_interval_s = redraw_interval_s
        self.history = TrainingHistory()
        self.num_renders = 0
        self._start: float | None = None
        self._last_render = -math.inf
        self._render_s = 0.0  # how long the last redraw took
        self._num_drawn = 0  # results in the charts
        self.charts: HistoryCharts | None = None
        self._displayed = False
        self.progress = widgets.FloatProgress(value=0.0, min=0.0, max=1.0, description="progress",
                                              layout=widgets.Layout(width="60%"))
        self.status = widgets.Label("waiting for the first iteration...")
        # Hidden until the first chart is drawn (an empty image shows as a broken one).
        self.image = widgets.Image(format="png", layout=widgets.Layout(display="none"))
        self.widget = widgets.VBox([widgets.HTML(f"<b>{title}</b>"), self.progress, self.status,
                                    self.image])

    # -- what the widgets show --------------------------------------------------------------

    def fraction_done(self) -> float:
        """How far along the run is, 0..1: toward the target return if there is one, else through
        the iteration budget."""
        if not self.history:
            return 0.0
        if self.target_return is not None and self.target_return > 0:
            last = self.history.returns[-1]
            return 0.0 if math.isnan(last) else min(1.0, max(0.0, last / self.target_return))
        if self.max_iterations:
            return min(1.0, len(self.history) / self.max_iterations)
        return 0.0

    @property
    def reached_target(self) -> bool:
        return (self.target_return is not None and bool(self.history)
                and self.history.returns[-1] >= self.target_return)

    @property
    def done(self) -> bool:
        """True once the target return is reached or the iteration budget is used up."""
        over_budget = self.max_iterations is not None and len(self.history) >= self.max_iterations
        return self.reached_target or over_budget

    def status_line(self) -> str:
        h = self.history
        if not h:
            return "waiting for the first iteration..."
        budget = f"/{self.max_iterations}" if self.max_iterations else ""
        target = f" / {self.target_return:g}" if self.target_return is not None else ""
        return (f"iteration {h.iterations[-1]}{budget} | return {h.returns[-1]:.1f}{target} | "
                f"env steps {h.env_steps[-1]:,} | {h.env_steps_per_s[-1]:,.0f} env steps/s | "
                f"{h.elapsed_s[-1]:.0f} s")

    # -- updating ---------------------------------------------------------------------------

    def display(self) -> None:
        """Show the dashboard in the notebook (charts are drawn only once it is shown)."""
        ipython_display(self.widget)
        self._displayed = True
        self.refresh()

    def update(self, result: dict[str, Any]) -> None:
        """Add one `algo.train()` result; redraw the charts if the last redraw is old enough."""
        now = time.perf_counter()
        if self._start is None:  # the first iteration began before its result came in
            self._start = now - result.get("timers", {}).get("training_iteration", 0.0)
        self.history.add(result, now - self._start)
        self.progress.value = self.fraction_done()
        self.progress.bar_style = "success" if self.reached_target else ""
        self.status.value = self.status_line()
        # Spend at most a tenth of the time drawing, however slow the machine.
        interval = max(self.redraw_interval_s, 10 * self._render_s)
        if self._displayed and (self.done or now - self._last_render >= interval):
            self.refresh()

    def refresh(self) -> None:
        """Redraw the charts now, if shown (update() calls this at most every `redraw_interval_s`)."""
        if not self._displayed or len(self.history) == self._num_drawn:
            return
        start = time.perf_counter()
        if self.charts is None:
            # A Figure not registered with pyplot: the notebook does not also show it as an output.
            self.charts = HistoryCharts(Figure(figsize=(9, 3), dpi=80), self.target_return)
        self.charts.draw(self.history)
        buffer = io.BytesIO()
        self.charts.figure.savefig(buffer, format="png")
        self.image.value = buffer.getvalue()
        self.image.layout.display = None
        self._last_render = time.perf_counter()
        self._render_s = self._last_render - start
        self._num_drawn = len(self.history)
        self.num_renders += 1

    def plot(self) -> Figure:
        """The same charts as a static matplotlib figure (shown by `plt.show()`)."""
        import matplotlib.pyplot as plt

        charts = HistoryCharts(plt.figure(figsize=(10, 3.5)), self.target_return)
        charts.draw(self.history)
        return charts.figure


def train(algo, dashboard: TrainingDashboard | None = None, *, max_iterations: int | None = None,
          target_return: float | None = None) -> list[dict[str, Any]]:
    """Call `algo.train()` until the return reaches `target_return` or `max_iterations` have run
    (both default to the dashboard's); feed each result to the dashboard; return all results."""
    if dashboard is not None:
        max_iterations = dashboard.max_iterations if max_iterations is None else max_iterations
        target_return = dashboard.target_return if target_return is None else target_return
    if max_iterations is None:
        raise ValueError("train(): give max_iterations (here or in the TrainingDashboard).")
    results = []
    for _ in range(max_iterations):
        result = algo.train()
        results.append(result)
        if dashboard is not None:
            dashboard.update(result)
        if target_return is not None and result["env_runners"]["episode_return_mean"] >= target_return:
            break
    if dashboard is not None:
        dashboard.refresh()  # the last iterations may have come in between redraws
    return results
