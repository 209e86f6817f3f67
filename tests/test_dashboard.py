"""TrainingDashboard: the series behind its charts, its progress, its redraw budget, and train()."""

import math

import matplotlib
import pytest
from helpers import small_ppo

from rlcourse.course.dashboard import TrainingDashboard, train

matplotlib.use("Agg")


def result(iteration: int, episode_return: float, steps_per_iter: int = 2000,
           evaluation: float | None = None) -> dict:
    """A result dict with the keys and nesting Algorithm.train() returns."""
    r = {"training_iteration": iteration,
         "num_env_steps_sampled_lifetime": steps_per_iter * iteration,
         "num_env_steps_sampled_throughput": 4000.0 + iteration,
         "env_runners": {"episode_return_mean": episode_return,
                         "num_env_steps_sampled": steps_per_iter},
         "learners": {"default_policy": {"total_loss": 0.1}},
         "timers": {"training_iteration": 0.5}}
    if evaluation is not None:
        r["evaluation"] = {"env_runners": {"episode_return_mean": evaluation}}
    return r


class FakeAlgo:
    """Returns rising returns, as a learning algorithm would."""

    def __init__(self, returns: list[float]):
        self.returns, self.calls = returns, 0

    def train(self) -> dict:
        self.calls += 1
        return result(self.calls, self.returns[self.calls - 1])


def test_history_holds_the_series_the_charts_draw():
    dashboard = TrainingDashboard(target_return=450, max_iterations=10)
    for i, ret in enumerate([math.nan, 22.0, 80.5], start=1):
        dashboard.update(result(i, ret, evaluation=100.0 if i == 3 else None))
    h = dashboard.history
    assert h.iterations == [1, 2, 3]
    assert h.env_steps == [2000, 4000, 6000]
    assert math.isnan(h.returns[0]) and h.returns[1:] == [22.0, 80.5]
    assert h.env_steps_per_s == [4001.0, 4002.0, 4003.0]
    assert h.evaluation == [(6000, 100.0)]
    assert h.elapsed_s[0] >= 0.5 and h.elapsed_s == sorted(h.elapsed_s)


def test_progress_goes_toward_the_target_and_status_line_reports():
    dashboard = TrainingDashboard(target_return=400, max_iterations=50)
    assert dashboard.fraction_done() == 0.0 and not dashboard.done
    dashboard.update(result(1, math.nan))  # no episode finished yet
    assert dashboard.progress.value == 0.0
    dashboard.update(result(2, 100.0))
    assert dashboard.progress.value == pytest.approx(0.25)
    line = dashboard.status.value
    for part in ("iteration 2/50", "return 100.0 / 400", "env steps 4,000", "4,002 env steps/s"):
        assert part in line
    dashboard.update(result(3, 420.0))
    assert dashboard.reached_target and dashboard.done and dashboard.progress.value == 1.0
    assert dashboard.progress.bar_style == "success"


def test_without_a_target_progress_counts_iterations():
    dashboard = TrainingDashboard(max_iterations=4)
    for i in range(1, 4):
        dashboard.update(result(i, 10.0 * i))
    assert dashboard.fraction_done() == pytest.approx(0.75) and not dashboard.done
    dashboard.update(result(4, 40.0))
    assert dashboard.done and not dashboard.reached_target


def test_charts_are_drawn_only_when_shown_and_at_most_every_interval():
    hidden = TrainingDashboard(max_iterations=30)
    for i in range(1, 31):
        hidden.update(result(i, float(i)))
    assert hidden.num_renders == 0 and bytes(hidden.image.value) == b""

    shown = TrainingDashboard(max_iterations=30, redraw_interval_s=3600)
    shown.display()
    for i in range(1, 31):
        shown.update(result(i, float(i)))
    # The first result is drawn at once, the last because the budget is used up; none between.
    assert shown.num_renders == 2
    assert bytes(shown.image.value).startswith(b"\x89PNG")
    x, y = shown.charts.returns.get_data()
    assert list(x) == shown.history.env_steps and list(y) == shown.history.returns
    assert list(shown.charts.speed.get_ydata()) == shown.history.env_steps_per_s
    shown.refresh()  # nothing new to draw
    assert shown.num_renders == 2


def test_static_plot_has_the_same_data():
    dashboard = TrainingDashboard(target_return=100)
    for i in range(1, 4):
        dashboard.update(result(i, 30.0 * i, evaluation=50.0))
    figure = dashboard.plot()
    return_ax, speed_ax = figure.axes
    assert list(return_ax.lines[0].get_ydata()) == [30.0, 60.0, 90.0]
    assert list(return_ax.lines[1].get_ydata()) == [50.0, 50.0, 50.0]  # evaluation points
    assert list(speed_ax.lines[0].get_xdata()) == [2000, 4000, 6000]  # env steps, as the return
    matplotlib.pyplot.close(figure)


def test_train_stops_at_the_target_or_the_budget():
    dashboard = TrainingDashboard(target_return=100, max_iterations=20)
    algo = FakeAlgo([10.0, 50.0, 120.0, 200.0])
    results = train(algo, dashboard)
    assert algo.calls == 3 and len(results) == 3 and dashboard.reached_target
    assert dashboard.history.returns == [10.0, 50.0, 120.0]

    algo = FakeAlgo([1.0] * 10)
    assert len(train(algo, max_iterations=5)) == 5 and algo.calls == 5
    with pytest.raises(ValueError, match="max_iterations"):
        train(algo)


@pytest.mark.timeout(300)
def test_dashboard_follows_a_real_algorithm():
    config = (small_ppo().environment("CartPole-v1")
              .training(train_batch_size_per_learner=500, minibatch_size=250, num_epochs=1)
              .debugging(seed=0))
    dashboard = TrainingDashboard(max_iterations=3)
    dashboard.display()
    with config.build_algo() as algo:
        results = train(algo, dashboard)
    assert len(results) == 3
    assert dashboard.history.iterations == [1, 2, 3]
    assert dashboard.history.env_steps == [r["num_env_steps_sampled_lifetime"] for r in results]
    assert dashboard.history.env_steps[-1] >= 1500
    assert all(rate > 0 for rate in dashboard.history.env_steps_per_s)
    assert dashboard.num_renders >= 1 and dashboard.done
