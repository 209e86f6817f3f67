"""Lesson 09's pictures draw what they are given: the sum-tree from its array (and the walk SumTree
itself takes), the rows and bars from the measurements."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from rlcourse.course import replay_diagrams  # noqa: E402
from rlcourse.utils.replay_buffers.prioritized_episode_replay_buffer import SumTree  # noqa: E402

pytestmark = pytest.mark.timeout(60)


def texts(figure) -> list[str]:
    return [t.get_text() for ax in figure.axes for t in ax.texts]


def test_the_sum_tree_shows_every_node_sum_and_the_walk_sumtree_takes():
    tree = SumTree(8)
    priorities = np.array([1, 4, 2, 0.5, 3, 1, 6, 0.5])
    tree.set(np.arange(8), priorities)
    for u in (0.0, 4.9, 5.0, 11.0, 17.9):
        figure = replay_diagrams.sum_tree(tree, u=u, show=False)
        labels = texts(figure)
        # 15 nodes: the root (18), the leaves, and every sum in between.
        assert [label for label in labels if not label.startswith("slot")][:3] == ["18", "7.5", "10.5"]
        slot = int(tree.find(np.array([u]))[0])
        assert figure.axes[0].get_title().endswith(f"walks down to slot {slot}")
        # The highlighted leaf is the slot SumTree.find returns.
        leaves = [t for t in figure.axes[0].texts if not t.get_text().startswith("slot")][7:]
        highlighted = [i for i, t in enumerate(leaves) if t.get_bbox_patch().get_facecolor()[:3]
                       == matplotlib.colors.to_rgb(replay_diagrams.RED)]
        assert highlighted == [slot], (u, highlighted, slot)
        plt.close(figure)


def test_sampling_frequencies_and_weights_are_the_given_ones():
    priorities = np.array([1.0, 3.0])
    figure = replay_diagrams.sampling_frequencies(priorities, np.array([1, 1, 1, 0]),
                                                  {0.4: np.array([1.0, 0.6])}, show=False)
    freq, weight = figure.axes
    heights = [bar.get_height() for bar in freq.patches]
    assert heights == [0.25, 0.75, 0.25, 0.75]
    assert list(weight.get_lines()[0].get_ydata()) == [1.0, 0.6]
    plt.close(figure)


def test_n_step_rows_mark_which_rows_bootstrap():
    rows = [(0, 3, False), (1, 3, False), (2, 2, True), (3, 1, True)]
    figure = replay_diagrams.n_step_rows(4, rows, "terminated", show=False)
    labels = texts(figure)
    assert labels.count("no bootstrap") == 2 and "bootstrap Q(s_3)" in labels
    assert [bar.get_width() for bar in figure.axes[0].patches] == [3, 3, 2, 1]
    plt.close(figure)


def test_curves_and_bars_plot_the_measurements():
    rows = np.array([[1.0, 100, 20.0], [2.0, 300, 40.0]])
    figure = replay_diagrams.learning_curves({"DQN": rows}, target=450, show=False)
    by_steps, by_time = figure.axes
    assert list(by_steps.get_lines()[0].get_xdata()) == [100, 300]
    assert list(by_time.get_lines()[0].get_xdata()) == [1.0, 2.0]
    plt.close(figure)
    figure = replay_diagrams.throughput({"DQN, 1 local runner": 900.0, "Ape-X": 2100.0}, show=False)
    assert [bar.get_height() for bar in figure.axes[0].patches] == [900.0, 2100.0]
    assert "2,100" in texts(figure)
    plt.close(figure)


@pytest.mark.parametrize("draw", [
    replay_diagrams.on_off_policy,
    lambda show: replay_diagrams.apex(num_runners=2, num_shards=1, show=show),
    lambda show: replay_diagrams.apex(num_runners=4, num_shards=2, show=show),
    lambda show: replay_diagrams.overestimation(np.array([2, 4]), np.array([0.5, 1.0]),
                                                np.array([0.0, 0.01]), show=show),
    lambda show: replay_diagrams.sac_temperature(np.array([200, 400]), np.array([-1400, -1200]),
                                                 np.array([1.0, 0.5]), show=show),
], ids=["on-off-policy", "apex-2-1", "apex-4-2", "overestimation", "sac"])
def test_a_picture_returns_its_figure(draw):
    figure = draw(show=False)
    assert figure.axes and any(ax.texts or ax.lines for ax in figure.axes)
    plt.close(figure)


def test_the_apex_picture_has_a_box_per_runner_and_shard():
    figure = replay_diagrams.apex(num_runners=3, num_shards=2, show=False)
    labels = " ".join(texts(figure))
    assert labels.count("runner ") == 3 and labels.count("replay shard") == 2
    assert "learner" in labels and "priorities" in labels and "weights" in labels
    plt.close(figure)


def test_the_q_table_shows_each_cells_value_and_greedy_action():
    from rlcourse.course.envs import GridWorld

    grid = GridWorld()
    q = np.zeros((25, 4))
    q[:, 1] = np.linspace(0.5, 1.0, 25)  # every cell's greedy action: right (1)
    figure = replay_diagrams.q_table(grid, q, q, [0.0, 1.0, 0.5], show=False)
    values = [t.get_text() for t in figure.axes[0].texts if t.get_text() != "goal"]
    assert len(values) == 25 - 4 - 1  # no value on the 4 pits and the goal
    assert values[0] == f"{q[0, 1]:.2f}"
    arrows = figure.axes[0].collections[-1]
    assert np.all(arrows.U == 1) and np.all(arrows.V == 0)
    plt.close(figure)
