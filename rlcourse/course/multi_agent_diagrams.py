"""Lesson 10's pictures: which module acts for which agent (shared, separate, self-play), the win rate
of self-play against the heuristic with the league's snapshots, and a ConnectFour board."""

from collections.abc import Iterable, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from rlcourse.course.diagrams import BLUE, GREEN, GREY, arrow, box, finish
from rlcourse.course.multi_agent_envs import ConnectFour

FROZEN, FROZEN_EDGE = "#e4e4e4", "#a8a8a8"  # a frozen module's face; hatched: "not trained"
HATCH = "//"
SNAPSHOT = "#8e44ad"  # the lines where a snapshot joined the league


def _column(count: int) -> list[float]:
    """`count` heights, top to bottom, centred on 0."""
    return list(1.2 * ((count - 1) / 2 - np.arange(count)))


def draw_policy_mapping(mapping: dict[str, str], title: str = "policy_mapping_fn: agent -> module",
                        trained: set[str] | None = None, policies: Iterable[str] | None = None,
                        show: bool = True) -> Figure | None:
    """Agents on the left, modules (policies) on the right, an arrow from each agent to the module
    that acts for it. Trained modules are filled, frozen ones (not in `trained`; None: all are
    trained) grey and hatched; `policies` adds modules that no agent maps to (the rest of a league)."""
    modules = list(dict.fromkeys([*(policies or ()), *mapping.values()]))
    trained = set(modules) if trained is None else set(trained)
    fig, ax = plt.subplots(figsize=(7, 0.9 * max(len(mapping), len(modules)) + 1.6))
    agents = {agent: box(ax, 0, y, agent, GREEN)
              for agent, y in zip(mapping, _column(len(mapping)), strict=True)}
    boxes = {}
    for module, y in zip(modules, _column(len(modules)), strict=True):
        boxes[module] = box(ax, 5, y, module, BLUE if module in trained else FROZEN)
        if module not in trained:  # (the hatch takes the edge's colour: light, to keep it legible)
            boxes[module].get_bbox_patch().set(hatch=HATCH, edgecolor=FROZEN_EDGE)
    for agent, module in mapping.items():
        arrow(ax, agents[agent], boxes[module])
    top = max(_column(max(len(mapping), len(modules)))) + 0.9
    ax.text(0, top, "agents (the env's)", ha="center", fontsize=10, weight="bold")
    ax.text(5, top, "modules (policies)", ha="center", fontsize=10, weight="bold")
    handles = [Patch(fc=BLUE, ec=GREY, label="trained (policies_to_train)")]
    if trained != set(modules):
        handles.append(Patch(fc=FROZEN, ec=FROZEN_EDGE, hatch=HATCH, label="frozen (not trained)"))
    ax.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, -0.12), ncol=2,
              fontsize=8, frameon=False)
    ax.set_title(title, fontsize=10)
    ax.set_xlim(-1.6, 6.6)
    ax.set_ylim(min(_column(max(len(mapping), len(modules)))) - 0.8, top + 0.4)
    ax.axis("off")
    return finish(fig, show)


def plot_win_rate(iterations: Sequence[float], win_rates: Sequence[float],
                  snapshot_iterations: Sequence[float] = (), goal: float = 0.8,
                  show: bool = True) -> Figure | None:
    """main's win rate against the heuristic over training, a vertical line where each snapshot
    (main_v0, main_v1, ...) joined the league, and the goal as a dashed line."""
    fig, ax = plt.subplots(figsize=(8, 3.4))
    ax.plot(iterations, win_rates, "o-", color="C0", label="main vs the heuristic")
    for k, x in enumerate(snapshot_iterations):
        ax.axvline(x, color=SNAPSHOT, ls=":", lw=1.2)
        ax.text(x, 1.03, f"main_v{k}", ha="center", fontsize=8, color=SNAPSHOT)
    ax.axhline(goal, color=GREY, ls="--", lw=1, label=f"goal: {goal:.0%}")
    ax.set(xlabel="training iteration", ylabel="win rate", ylim=(0, 1.09),
           title="self-play: win rate against the heuristic (dotted: a snapshot joins the league)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8, loc="lower right")
    return finish(fig, show)


def _image(env_or_board: ConnectFour | np.ndarray) -> np.ndarray:
    """ConnectFour's render() of an env, or of a board (+1 player_0, -1 player_1, 0 empty)."""
    if isinstance(env_or_board, ConnectFour) and env_or_board.render_mode == "rgb_array":
        return env_or_board.render()
    board = np.asarray(env_or_board.board if isinstance(env_or_board, ConnectFour)
                       else env_or_board)
    if board.ndim != 2 or not np.isin(board, (-1, 0, 1)).all():
        raise ValueError(f"show_board() takes a ConnectFour env or its board: a 2-D array of +1 "
                         f"(player_0), -1 (player_1) and 0 (empty); got shape {board.shape}. An "
                         "observation is flat: reshape it to (rows, cols) first.")
    painter = ConnectFour({"rows": board.shape[0], "cols": board.shape[1], "connect": 2,
                           "render_mode": "rgb_array"})
    painter.board[:] = board
    return painter.render()


def show_board(env_or_board: ConnectFour | np.ndarray, title: str | None = None,
               show: bool = True) -> Figure | None:
    """A ConnectFour board as its render() draws it (red player_0, yellow player_1), axes off."""
    image = _image(env_or_board)
    board = np.asarray(env_or_board.board if isinstance(env_or_board, ConnectFour)
                       else env_or_board)
    rows, cols = board.shape
    fig, ax = plt.subplots(figsize=(0.55 * cols, 0.55 * rows + 0.4))
    ax.imshow(image)
    ax.set_title(title or f"ConnectFour, {int(np.count_nonzero(board))} discs: red player_0, "
                 "yellow player_1", fontsize=9)
    ax.axis("off")
    return finish(fig, show)
