"""ScalingLab: a widget that measures how sampling scales with runners, sub-envs and the kind of env.

    lab = ScalingLab()
    lab.display()                         # controls, a Run button, progress, the chart
    rows = lab.run(env_kind="latency_bound")   # what the Run button does, callable from code
    lab.plot(); plt.show()                # the same chart as a static figure

Each run is a `rlcourse.course.scaling.sweep` over the selected runner counts; the chart keeps every
run so they can be compared: env steps/s against runners (with the ideal, linear line) and the
scaling efficiency (1.0 = every runner added its full share).
"""

import io
from dataclasses import dataclass, field

import ipywidgets as widgets
from IPython.display import display as ipython_display
from matplotlib.figure import Figure
from matplotlib.ticker import LogLocator, NullLocator, StrMethodFormatter

from rlcourse.course.scaling import ENV_KINDS, format_rows, scaling_rows, sweep

MAX_WORKERS = 8


@dataclass
class ScalingRun:
    """One sweep: its settings, a legend label, and its rows (filled in as points are measured)."""

    settings: dict
    rows: list[dict] = field(default_factory=list)

    @property
    def label(self) -> str:
        s = self.settings
        envs = s["num_envs_per_env_runner"]
        return (f"{ENV_KINDS[s['env_kind']].label}, {envs} sub-env{'s' * (envs > 1)}, "
                f"{s['gym_env_vectorize_mode']}")


def draw_runs(runs: list[ScalingRun], speed_ax, efficiency_ax) -> None:
    """Env steps/s per run with its ideal (one runner's rate times the runners), and efficiency.

    Throughput is drawn on log-log axes: ideal lines are then parallel diagonals, so runs of fast
    and slow envs compare at a glance, and a flat line means that runners stopped adding anything.
    """
    measured = [r for run in runs for r in run.rows]
    for i, run in enumerate(runs):
        if not run.rows:
            continue
        color = f"C{i % 10}"
        workers = [r["workers"] for r in run.rows]
        one_worker = run.rows[0]["env_steps_per_s"] / run.rows[0]["speedup"]
        speed_ax.plot(workers, [r["env_steps_per_s"] for r in run.rows], "o-", color=color)
        speed_ax.plot(workers, [one_worker * w for w in workers], "--", color=color, alpha=0.5)
        efficiency_ax.plot(workers, [r["efficiency"] for r in run.rows], "o-", color=color,
                           label=run.label)
    ticks = sorted({r["workers"] for r in measured}) or [1, 2, 4, 8]
    rates = [r["env_steps_per_s"] for r in measured] or [100.0, 10_000.0]
    # Ideal lines may leave the chart: the measured points set its height.
    speed_ax.set(xscale="log", yscale="log", ylim=(min(rates) / 1.5, 2 * max(rates)),
                 xlabel="env runners", ylabel="env steps / s",
                 title="Throughput (dashed: ideal, linear scaling)")
    speed_ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    speed_ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    speed_ax.yaxis.set_minor_locator(NullLocator())
    efficiency_ax.axhline(1.0, color="gray", linestyle="--")
    efficiency_ax.set(xscale="log", ylim=(0, max([1.2] + [1.1 * r["efficiency"] for r in measured])),
                      xlabel="env runners", ylabel="speed-up / runners", title="Scaling efficiency")
    for ax in (speed_ax, efficiency_ax):
        ax.set_xticks(ticks, [str(n) for n in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
    if measured:  # low efficiencies come with many runners, so the lower left is free
        efficiency_ax.legend(fontsize="small", loc="lower left")


class ScalingLab:
    """Controls for a scaling sweep, a Run button, live progress and the comparison chart."""

    def __init__(self, workers: tuple[int, ...] = (1, 2, 4, 8), num_envs_per_env_runner: int = 1,
                 env_kind: str = "cpu_bound", gym_env_vectorize_mode: str = "SYNC",
                 duration_s: float = 2.0):
        self.runs: list[ScalingRun] = []
        self._figure: Figure | None = None
        self.worker_buttons = {n: widgets.ToggleButton(value=False, description=str(n),
                                                       layout=widgets.Layout(width="3em"))
                               for n in range(1, MAX_WORKERS + 1)}
        self.num_envs = widgets.IntSlider(min=1, max=8, description="sub-envs/runner",
                                          style={"description_width": "initial"})
        self.env_kind = widgets.Dropdown(options=[(k.label, name) for name, k in ENV_KINDS.items()],
                                         description="env", layout=widgets.Layout(width="28em"))
        self.vectorize_mode = widgets.ToggleButtons(options=["SYNC", "ASYNC"],
                                                    description="vectorize")
        self.duration = widgets.FloatSlider(min=0.5, max=5.0, step=0.5, description="s per point",
                                            style={"description_width": "initial"})
        self.run_button = widgets.Button(description="Run", button_style="primary", icon="play")
        self.clear_button = widgets.Button(description="Clear chart")
        self.progress = widgets.IntProgress(value=0, min=0, max=1)
        self.status = widgets.Label("Choose settings and press Run.")
        self.log = widgets.Output()  # what a run prints, when it is started by the button
        self.image = widgets.Image(format="png")
        self.set_controls(workers=workers, num_envs_per_env_runner=num_envs_per_env_runner,
                          env_kind=env_kind, gym_env_vectorize_mode=gym_env_vectorize_mode,
                          duration_s=duration_s)
        self.run_button.on_click(self._on_run_clicked)
        self.clear_button.on_click(lambda _: self.clear())
        self.widget = widgets.VBox([
            widgets.HBox([widgets.Label("runners to measure:"), *self.worker_buttons.values()]),
            widgets.HBox([self.env_kind, self.num_envs]),
            widgets.HBox([self.vectorize_mode, self.duration]),
            widgets.HBox([self.run_button, self.clear_button, self.progress, self.status]),
            self.image, self.log])

    # -- controls ---------------------------------------------------------------------------

    def set_controls(self, *, workers: tuple[int, ...] | None = None,
                     num_envs_per_env_runner: int | None = None, env_kind: str | None = None,
                     gym_env_vectorize_mode: str | None = None,
                     duration_s: float | None = None) -> None:
        """Set the controls from code (what a learner would click)."""
        if workers is not None:
            if not workers or not set(workers) <= set(self.worker_buttons):
                raise ValueError(f"workers={workers!r}: choose counts from 1 to {MAX_WORKERS}.")
            for n, button in self.worker_buttons.items():
                button.value = n in workers
        if env_kind is not None and env_kind not in ENV_KINDS:
            raise ValueError(f"env_kind={env_kind!r}: use one of {sorted(ENV_KINDS)}.")
        for control, value in ((self.num_envs, num_envs_per_env_runner), (self.env_kind, env_kind),
                               (self.vectorize_mode, gym_env_vectorize_mode),
                               (self.duration, duration_s)):
            if value is not None:
                control.value = value

    def settings(self) -> dict:
        """The sweep the controls describe, as keyword arguments of `rlcourse.course.scaling.sweep`."""
        return {"workers": tuple(n for n, b in self.worker_buttons.items() if b.value),
                "num_envs_per_env_runner": self.num_envs.value, "env_kind": self.env_kind.value,
                "gym_env_vectorize_mode": self.vectorize_mode.value,
                "duration_s": self.duration.value}

    # -- running ----------------------------------------------------------------------------

    def run(self, **controls) -> list[dict]:
        """Run the sweep the controls describe (keyword arguments set controls first, see
        `set_controls`); add it to the chart and return its rows. The Run button calls this."""
        self.set_controls(**controls)
        settings = self.settings()
        if not settings["workers"]:
            raise ValueError("Select at least one runner count to measure.")
        run = ScalingRun(settings)
        self.runs.append(run)
        throughputs: dict[int, float] = {}
        self.progress.max, self.progress.value = len(settings["workers"]), 0
        print(f"Measuring {run.label}:")

        def on_measured(workers: int, env_steps_per_s: float) -> None:
            throughputs[workers] = env_steps_per_s
            run.rows = scaling_rows(throughputs)
            self.progress.value += 1
            self.status.value = (f"{workers} runners: {env_steps_per_s:,.0f} env steps/s "
                                 f"({self.progress.value}/{self.progress.max} done)")
            print(f"  {workers} runner(s): {env_steps_per_s:,.0f} env steps/s", flush=True)
            self.redraw()

        self.status.value = f"measuring {settings['workers'][0]} runner(s)..."
        try:
            run.rows = sweep(**settings, on_measured=on_measured)
        except BaseException:
            self.runs.remove(run)
            self.redraw()
            raise
        best = max(run.rows, key=lambda r: r["env_steps_per_s"])
        self.status.value = (f"done: fastest with {best['workers']} runner(s), a speed-up of "
                             f"{best['speedup']:.2f}x")
        print(format_rows(run.rows))
        return run.rows

    def _on_run_clicked(self, _button: widgets.Button) -> None:
        self.run_button.disabled = True
        with self.log:  # what the run prints, and its traceback if it fails, appear under the chart
            try:
                self.run()
            except Exception as e:
                self.status.value = f"failed: {type(e).__name__}: {e}"
                raise
            finally:
                self.run_button.disabled = False

    def clear(self) -> None:
        """Forget all runs and empty the chart."""
        self.runs.clear()
        self.log.clear_output()
        self.redraw()

    # -- drawing ----------------------------------------------------------------------------

    def redraw(self) -> None:
        """Draw the runs into the widget's image (a small PNG; the figure is reused)."""
        if self._figure is None:  # not registered with pyplot, so never shown as a cell output
            self._figure = Figure(figsize=(10, 3.6), dpi=80, layout="constrained")
        self._figure.clear()
        draw_runs(self.runs, *self._figure.subplots(1, 2))
        buffer = io.BytesIO()
        self._figure.savefig(buffer, format="png")
        self.image.value = buffer.getvalue()

    def display(self) -> None:
        """Show the lab in the notebook."""
        self.redraw()
        ipython_display(self.widget)

    def plot(self) -> Figure:
        """All runs as a static matplotlib figure (show it with `plt.show()`)."""
        import matplotlib.pyplot as plt

        figure, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
        draw_runs(self.runs, *axes)
        return figure
