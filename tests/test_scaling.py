"""Scaling measurements and the ScalingLab widget: real runner actors, short durations, checked data."""

import time

import matplotlib
import pytest
from helpers import free_cpus_after_release

from rlcourse.course import scaling
from rlcourse.course.envs import LatencyBoundCartPole
from rlcourse.course.scaling import (
    format_rows,
    measure_throughput,
    scaling_config,
    scaling_rows,
    sweep,
)
from rlcourse.course.scaling_lab import ScalingLab
from rlcourse.env.env_context import EnvContext
from rlcourse.env.env_runner_group import EnvRunnerGroup

matplotlib.use("Agg")


def test_latency_bound_cartpole_waits_in_every_step_and_is_cartpole():
    env = LatencyBoundCartPole(EnvContext({"step_latency_s": 0.01}))
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4,) and env.action_space.n == 2
    start = time.perf_counter()
    for _ in range(3):
        env.step(0)
    assert time.perf_counter() - start >= 0.03
    assert env.spec.max_episode_steps == 500  # CartPole-v1's time limit is kept
    env.close()


def test_scaling_rows_compute_speedup_and_efficiency():
    rows = scaling_rows({4: 3000.0, 1: 1000.0, 2: 1800.0})
    assert [r["workers"] for r in rows] == [1, 2, 4]
    assert [r["speedup"] for r in rows] == pytest.approx([1.0, 1.8, 3.0])
    assert [r["efficiency"] for r in rows] == pytest.approx([1.0, 0.9, 0.75])
    # Without a 1-runner row, the smallest count's rate per runner stands in for one runner.
    assert scaling_rows({2: 1800.0, 4: 2700.0})[1]["speedup"] == pytest.approx(3.0)
    assert "3.00x" in format_rows(rows) and "75%" in format_rows(rows)


def test_calibration_grows_calls_until_they_take_about_the_target(monkeypatch):
    now, seen = [0.0], []

    def sample(fragment):  # a fake clock: 0.2 ms per step
        seen.append(fragment)
        now[0] += fragment * 0.0002

    monkeypatch.setattr(scaling.time, "perf_counter", lambda: now[0])
    # 16 steps take 3.2 ms: grow 8x; 128 take 25.6 ms: grow to the target; 500 take 0.1 s.
    assert scaling.calibrate_fragment(sample) == 500 and seen == [16, 128, 500]
    monkeypatch.setattr(scaling.time, "perf_counter", lambda: 0.0)  # calls too fast to time
    assert scaling.calibrate_fragment(lambda fragment: None) == scaling.MAX_FRAGMENT


def test_scaling_config_sets_the_runner_axes():
    config = scaling_config(4, num_envs_per_env_runner=3, env_kind="latency_bound",
                            gym_env_vectorize_mode="ASYNC", num_cpus_per_env_runner=0.5)
    assert (config.num_env_runners, config.num_envs_per_env_runner) == (4, 3)
    assert config.env is LatencyBoundCartPole and config.gym_env_vectorize_mode == "ASYNC"
    assert config.num_cpus_per_env_runner == 0.5
    with pytest.raises(ValueError, match="env_kind"):
        scaling_config(1, env_kind="gpu_bound")
    with pytest.raises(ValueError, match="num_env_runners=0"):  # the lab times runner actors
        measure_throughput(scaling_config(0))


@pytest.mark.timeout(300)
def test_measure_throughput_samples_with_runner_actors_and_releases_them(ray_session):
    rate = measure_throughput(scaling_config(2, num_envs_per_env_runner=2), duration_s=0.3)
    assert rate > 100  # CartPole does thousands of steps per second; this only checks it ran
    assert free_cpus_after_release(2) == pytest.approx(2)


@pytest.mark.timeout(300)
def test_sweep_reports_each_count_and_fits_the_largest_into_the_cluster(ray_session, monkeypatch):
    groups = []  # each runner process starts once: one group of the largest count serves them all
    monkeypatch.setattr(scaling, "EnvRunnerGroup",
                        lambda config, *args: groups.append(config.num_env_runners)
                        or EnvRunnerGroup(config, *args))
    measured = []
    rows = sweep((2, 1), env_kind="latency_bound", duration_s=0.3,
                 on_measured=lambda n, rate: measured.append((n, rate)))
    assert [n for n, _ in measured] == [1, 2]
    assert [r["workers"] for r in rows] == [1, 2]
    assert [r["env_steps_per_s"] for r in rows] == [rate for _, rate in measured]
    assert rows[0]["speedup"] == 1.0 and rows[1]["efficiency"] == rows[1]["speedup"] / 2
    # A 5 ms wait per step caps one runner with one sub-env below 200 steps/s.
    assert rows[0]["env_steps_per_s"] < 200
    assert groups == [2]
    assert free_cpus_after_release(2) == pytest.approx(2)


@pytest.mark.timeout(300)
def test_pressing_run_measures_the_selected_settings_and_draws_them(ray_session):
    lab = ScalingLab(workers=(1, 2), duration_s=0.5)
    lab.display()
    lab.set_controls(env_kind="latency_bound", num_envs_per_env_runner=2)
    lab.run_button.click()
    assert len(lab.runs) == 1 and not lab.run_button.disabled
    run = lab.runs[0]
    assert run.settings == {"workers": (1, 2), "num_envs_per_env_runner": 2,
                            "env_kind": "latency_bound", "gym_env_vectorize_mode": "SYNC",
                            "duration_s": 0.5}
    assert [r["workers"] for r in run.rows] == [1, 2] and run.rows[0]["env_steps_per_s"] > 0
    assert lab.progress.value == lab.progress.max == 2
    assert "2 sub-envs" in run.label and bytes(lab.image.value).startswith(b"\x89PNG")

    # Code can run the same sweep with other settings; the chart keeps both runs.
    rows = lab.run(workers=(1,), env_kind="cpu_bound", gym_env_vectorize_mode="ASYNC")
    assert len(lab.runs) == 2 and lab.runs[1].rows == rows
    figure = lab.plot()
    speed_ax, efficiency_ax = figure.axes
    measured = [line for line in speed_ax.lines if line.get_linestyle() == "-"]
    assert [list(line.get_ydata()) for line in measured] == [
        [r["env_steps_per_s"] for r in run.rows] for run in lab.runs]
    assert list(efficiency_ax.lines[0].get_ydata()) == [r["efficiency"] for r in lab.runs[0].rows]
    matplotlib.pyplot.close(figure)
    lab.clear()
    assert lab.runs == []
    assert free_cpus_after_release(2) == pytest.approx(2)


def test_bad_settings_fail_before_anything_runs(monkeypatch):
    lab = ScalingLab()
    with pytest.raises(ValueError, match="from 1 to 8"):
        lab.set_controls(workers=(16,))
    with pytest.raises(ValueError, match="env_kind"):
        lab.set_controls(env_kind="gpu_bound")
    for button in lab.worker_buttons.values():
        button.value = False
    with pytest.raises(ValueError, match="at least one"):
        lab.run()
    # A failing run started by the button shows its error and leaves the button usable.
    monkeypatch.setattr("rlcourse.course.scaling_lab.sweep", lambda **kw: 1 / 0)
    lab.set_controls(workers=(1,))
    lab.run_button.click()
    assert lab.status.value.startswith("failed: ZeroDivisionError")
    assert not lab.run_button.disabled and lab.runs == []  # the failed run is not charted
