"""Lesson 10's pictures draw what they are given: one arrow per agent to its module, frozen modules
hatched, the snapshot lines where the league grew, and ConnectFour's own rendering of a board."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from rlcourse.course import multi_agent_diagrams  # noqa: E402
from rlcourse.course.multi_agent_envs import ConnectFour  # noqa: E402

pytestmark = pytest.mark.timeout(60)


def arrows(ax) -> list:
    """The arrows drawn by `diagrams.arrow`: annotations with an arrow patch."""
    return [t for t in ax.texts if getattr(t, "arrow_patch", None) is not None]


def boxes(ax) -> dict:
    """{label: its box's patch} for every boxed text (agents and modules)."""
    return {t.get_text(): t.get_bbox_patch() for t in ax.texts if t.get_bbox_patch() is not None}


def points_to(ax, arrow) -> str:
    """The label of the box at the arrow's head."""
    head = tuple(arrow.xy)
    return next(t.get_text() for t in ax.texts if t.get_bbox_patch() is not None
                and tuple(t.get_position()) == head)


def starts_at(ax, arrow) -> str:
    tail = tuple(arrow.xyann)
    return next(t.get_text() for t in ax.texts if t.get_bbox_patch() is not None
                and tuple(t.get_position()) == tail)


@pytest.mark.parametrize(("mapping", "trained", "policies"), [
    ({"agent_0": "shared", "agent_1": "shared"}, None, None),
    ({"agent_0": "policy_0", "agent_1": "policy_1", "agent_2": "policy_2"}, None, None),
    ({"player_0": "main", "player_1": "main_v1"}, {"main"}, ["main", "main_v0", "main_v1", "main_v2"]),
], ids=["shared", "separate", "self-play"])
def test_each_agent_has_one_arrow_to_its_module(mapping, trained, policies):
    figure = multi_agent_diagrams.draw_policy_mapping(mapping, title="who acts for whom",
                                                      trained=trained, policies=policies, show=False)
    ax = figure.axes[0]
    drawn = arrows(ax)
    assert len(drawn) == len(mapping)
    assert {starts_at(ax, a): points_to(ax, a) for a in drawn} == mapping
    modules = set(policies or mapping.values())
    assert set(boxes(ax)) == set(mapping) | modules  # one box per agent and per module
    assert ax.get_title() == "who acts for whom"
    plt.close(figure)


def test_frozen_modules_are_hatched_and_grey_and_trained_ones_filled():
    figure = multi_agent_diagrams.draw_policy_mapping(
        {"player_0": "main", "player_1": "main_v1"}, trained={"main"},
        policies=["main", "main_v0", "main_v1", "main_v2"], show=False)
    ax = figure.axes[0]
    patches = boxes(ax)
    frozen = {label for label, patch in patches.items() if patch.get_hatch()}
    assert frozen == {"main_v0", "main_v1", "main_v2"}
    grey = matplotlib.colors.to_rgba(multi_agent_diagrams.FROZEN)
    assert all(patches[m].get_facecolor() == grey for m in frozen)
    assert patches["main"].get_facecolor() != grey
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "trained (policies_to_train)", "frozen (not trained)"]
    plt.close(figure)
    # With every module trained, nothing is hatched and the legend has no "frozen" entry.
    figure = multi_agent_diagrams.draw_policy_mapping({"a": "p", "b": "q"}, show=False)
    ax = figure.axes[0]
    assert not any(patch.get_hatch() for patch in boxes(ax).values())
    assert len(ax.get_legend().get_texts()) == 1
    plt.close(figure)


def test_the_win_rate_plot_has_the_curve_the_snapshots_and_the_goal():
    iterations, rates = [1, 2, 3, 4, 5], [0.2, 0.35, 0.5, 0.7, 0.85]
    figure = multi_agent_diagrams.plot_win_rate(iterations, rates, snapshot_iterations=(2, 4),
                                                goal=0.75, show=False)
    ax = figure.axes[0]
    curve, *others = ax.get_lines()
    assert list(curve.get_xdata()) == iterations and list(curve.get_ydata()) == rates
    vertical = [line for line in others if line.get_xdata()[0] == line.get_xdata()[1]
                and line.get_transform() != ax.transData]
    assert sorted(line.get_xdata()[0] for line in vertical) == [2, 4]
    goal = [line for line in others if line not in vertical]
    assert len(goal) == 1 and list(goal[0].get_ydata()) == [0.75, 0.75]
    assert goal[0].get_linestyle() == "--"
    labels = [t.get_text() for t in ax.texts]
    assert labels == ["main_v0", "main_v1"]
    assert "75%" in [t.get_text() for t in ax.get_legend().get_texts()][-1]
    plt.close(figure)


def test_show_board_shows_the_envs_own_rendering_with_a_title_and_no_axes():
    env = ConnectFour({"render_mode": "rgb_array"})
    env.reset(seed=0)
    for col in (3, 3, 4, 2):
        env.step({f"player_{env.to_move}": col})
    figure = multi_agent_diagrams.show_board(env, show=False)
    ax = figure.axes[0]
    np.testing.assert_array_equal(ax.images[0].get_array(), env.render())
    assert not ax.axison and "4 discs" in ax.get_title()
    plt.close(figure)
    # A bare board (or an env without rgb_array) is drawn the same way by ConnectFour's render().
    for given in (env.board.copy(), ConnectFour()):
        if isinstance(given, ConnectFour):
            given.board[:] = env.board
        figure = multi_agent_diagrams.show_board(given, title="a board", show=False)
        np.testing.assert_array_equal(figure.axes[0].images[0].get_array(), env.render())
        assert figure.axes[0].get_title() == "a board"
        plt.close(figure)
    with pytest.raises(ValueError, match="reshape it to \\(rows, cols\\)"):
        multi_agent_diagrams.show_board(env.observe(0), show=False)
