"""Every diagram helper draws without error and returns its figure when not shown."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from rlcourse.course import diagrams, scaling_diagrams, serving_diagrams  # noqa: E402


@pytest.mark.parametrize("draw", [diagrams.rl_loop, diagrams.discounting, diagrams.episode_chunk,
                                  diagrams.clipped_objective, diagrams.data_walk,
                                  scaling_diagrams.impala_pipeline, scaling_diagrams.all_reduce,
                                  lambda show: scaling_diagrams.ppo_vs_impala(
                                      [("sample", 0.5), ("update", 0.4), ("sync weights", 0.01)],
                                      show=show),
                                  lambda show: scaling_diagrams.throughput_bars(
                                      {("slow", "SYNC"): 180.0, ("slow", "ASYNC"): 650.0},
                                      ("slow", {"SYNC": 200.0, "ASYNC": 800.0}), show=show),
                                  lambda show: scaling_diagrams.runners_on_nodes(
                                      [{"nodes": ["head", "worker-1"], "seconds": 1.0},
                                       {"nodes": ["head", "head"], "seconds": 3.0}],
                                      lost_after=1, show=show)])
def test_a_diagram_returns_its_figure(draw):
    figure = draw(show=False)
    assert isinstance(figure, Figure) and figure.axes
    plt.close(figure)


@pytest.mark.parametrize("ending", ["terminated", "truncated", "cut"])
def test_the_episode_chunk_names_each_ending(ending):
    figure = diagrams.episode_chunk(n=3, ending=ending, show=False)
    texts = " ".join(t.get_text() for t in figure.axes[0].texts)
    assert ending in texts and "4 observations" in texts
    plt.close(figure)


def test_chunk_advantages_and_the_animation():
    import numpy as np

    from rlcourse.env.single_agent_episode import SingleAgentEpisode

    episode = SingleAgentEpisode(np.zeros((4, 1), np.float32), np.zeros(3, np.int64),
                                 np.ones(3, np.float32), {"action_logp": np.zeros(3, np.float32)})
    figure = diagrams.chunk_advantages([("cut", episode, np.zeros(4), np.ones(3))], show=False)
    assert figure.axes[0].get_title() == "cut: 3 steps"
    plt.close(figure)
    html = diagrams.animation_html([np.zeros((8, 8, 3), np.uint8)] * 3)
    assert "<script" in html


def test_gridworld_policy_draws_arrows_and_a_path():
    import numpy as np

    from rlcourse.course.envs import GridWorld

    grid = GridWorld({"size": 5, "render_mode": "rgb_array"})
    grid.reset(seed=0)
    figure = diagrams.gridworld_policy(grid, np.ones(25, int), [(0, 0), (0, 1)], -0.1, show=False)
    assert "1 steps" in figure.axes[1].get_title()
    plt.close(figure)


def test_the_serving_pictures_show_the_request_path_and_the_measured_load():
    path = serving_diagrams.request_path(show=False)
    texts = " ".join(t.get_text() for t in path.axes[0].texts)
    assert all(word in texts for word in ("client", "HTTP proxy", "@serve.batch", "replica"))
    rows = [{"clients": 1, "p50": 4.0, "p99": 9.0, "actions_per_s": 200.0},
            {"clients": 8, "p50": 30.0, "p99": 70.0, "actions_per_s": 260.0}]
    load = serving_diagrams.latency_under_load(rows, in_process_ms=0.1, show=False)
    latency, throughput = load.axes
    lines = {line.get_label(): line.get_ydata() for line in latency.get_lines()}
    assert list(lines["p50"]) == [4.0, 30.0] and list(lines["p99"]) == [9.0, 70.0]
    assert [bar.get_height() for bar in throughput.patches] == [200.0, 260.0]
    plt.close(path)
    plt.close(load)


def test_gradient_variance_bars_are_the_variances_given():
    import numpy as np

    rng = np.random.default_rng(0)
    estimates = {"G": rng.normal(1.0, 2.0, (50, 3)), "G - b": rng.normal(1.0, 1.0, (50, 3))}
    figure = diagrams.gradient_variance(estimates, show=False)
    heights = [bar.get_height() for bar in figure.axes[0].patches]
    assert heights == pytest.approx([e.var(axis=0).sum() for e in estimates.values()])
    plt.close(figure)


def test_the_scaling_pictures_draw_the_numbers_given():
    phases = [("sample", 0.5), ("update", 0.4), ("sync weights", 0.01)]
    timeline = scaling_diagrams.ppo_vs_impala(phases, show=False)
    ppo, impala = timeline.axes
    assert [bar.get_width() for bar in ppo.patches] == pytest.approx([0.5, 0.4, 0.01])
    assert [bar.get_x() for bar in ppo.patches] == pytest.approx([0.0, 0.5, 0.9])  # one after another
    assert impala.patches[0].get_width() == pytest.approx(0.91)  # runners busy all the time
    bars = scaling_diagrams.throughput_bars({("slow", "SYNC"): 180.0, ("slow", "ASYNC"): 650.0},
                                            ("slow", {"SYNC": 200.0, "ASYNC": 800.0}), show=False)
    ax = bars.axes[0]
    assert [bar.get_height() for bar in ax.patches] == [180.0, 650.0]
    assert [line.get_ydata()[0] for line in ax.get_lines()] == [200.0, 800.0]  # the predictions
    history = [{"nodes": ["head", "worker-1"], "seconds": 1.0},
               {"nodes": ["head", "head"], "seconds": 3.0}]
    nodes = scaling_diagrams.runners_on_nodes(history, lost_after=1, show=False)
    top, bottom = nodes.axes
    assert [bar.get_height() for bar in bottom.patches] == [1.0, 3.0]
    head, worker = (points.get_offsets().tolist() for points in top.collections)
    assert head == [[1, 1], [2, 1], [2, 2]] and worker == [[1, 2]]  # (iteration, runner)
    for figure in (timeline, bars, nodes):
        plt.close(figure)
