"""Lesson 14's pictures: where an external simulator sits, and RLlink's messages as a timeline."""

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from rlcourse.course.diagrams import BLUE, GREEN, GREY, SAND, arrow, box, finish

ACCENT = "#b03a2e"  # the learner's events, and what happened to the simulators


def external_system(show: bool = True) -> Figure | None:
    """Simulator processes outside Ray -> RLlink over TCP -> the server runner -> the learner."""
    fig, ax = plt.subplots(figsize=(11, 3.4))
    ax.add_patch(FancyBboxPatch((3.6, -1.55), 7.3, 3.1, boxstyle="round,pad=0.1", fc="none",
                                ec=GREY, ls="--"))
    ax.text(7.25, 1.3, "the Ray cluster", ha="center", color=GREY, fontsize=9)
    sims = [box(ax, 0, y, f"simulator process {i}\n(game engine, robot, ...)\nclient.py: "
                "the policy in NumPy", GREEN, 9) for i, y in ((1, 0.85), (2, -0.85))]
    runner = box(ax, 5.3, 0, "server EnvRunner\n(a Ray actor)\nlistens on host:port", BLUE, 9)
    learner = box(ax, 9.3, 0, "Learner (PPO)\ntorch, the loss,\nthe optimizer", SAND, 9)
    for sim in sims:
        arrow(ax, sim, runner)
    ax.text(2.55, 0.05, "RLlink over TCP:\nwhole episodes ->\n<- weights", ha="center",
            va="center", fontsize=9)
    arrow(ax, runner, learner, "episodes", rad=-0.3, offset=(0, 0.6))
    arrow(ax, learner, runner, "weights", rad=-0.3, offset=(0, -0.6))
    ax.text(5.3, -1.95, "the env cannot be imported into a Ray actor: it runs where it must, and "
            "calls in", ha="center", fontsize=9, color=GREY)
    ax.set_xlim(-1.6, 11.2)
    ax.set_ylim(-2.2, 1.7)
    ax.axis("off")
    return finish(fig, show)


def protocol_timeline(log: list[tuple[float, str, str, int]], show: bool = True) -> Figure | None:
    """Each message of `log` (seconds, sender: "simulator", "server" or "learner", type, bytes)
    as an arrow between the simulator's and the server runner's lines, in order, time downwards."""
    fig, ax = plt.subplots(figsize=(10, 0.42 * len(log) + 1.2))
    n = len(log)
    for x, name in ((0, "simulator (client.py)"), (4, "server EnvRunner")):
        ax.plot([x, x], [0.3, n + 0.5], color=GREY, lw=1)
        ax.text(x, 0, name, ha="center", fontsize=10, weight="bold")
    for row, (seconds, sender, kind, size) in enumerate(log, start=1):
        ax.text(-0.3, row, f"{seconds:7.3f} s", ha="right", va="center", fontsize=8, color=GREY)
        if sender == "learner":
            ax.text(4.2, row, f"learner: {kind}", va="center", fontsize=9, color=ACCENT)
            continue
        start, end = (0, 4) if sender == "simulator" else (4, 0)
        ax.annotate("", xy=(end, row + 0.25), xytext=(start, row - 0.15),
                    arrowprops=dict(arrowstyle="-|>", color=GREY, lw=1.2))
        ax.text(2, row - 0.1, f"{kind}  ({size:,} bytes)", ha="center", va="bottom", fontsize=9,
                bbox=dict(fc=GREEN if sender == "simulator" else BLUE, ec="none", pad=1))
    ax.set_xlim(-1.6, 6.2)
    ax.set_ylim(n + 0.8, -0.5)
    ax.axis("off")
    return finish(fig, show)


def training_run(rows: list[dict], events: dict[str, int], show: bool = True) -> Figure | None:
    """The smoothed return and the clients connected against env steps (`rows`: one dict per
    iteration with env_steps, episode_return_mean, clients), `events` {label: env steps} marked."""
    steps = [r["env_steps"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.2))
    left.plot(steps, [r["episode_return_mean"] for r in rows], "o-", ms=3)
    left.set(xlabel="env steps", ylabel="episode_return_mean", title="PPO from external simulators")
    right.step(steps, [r["clients"] for r in rows], where="pre")  # over the iteration ending there
    right.set(xlabel="env steps", ylabel="clients per runner", title="simulators connected",
              ylim=(-0.1, max(r["clients"] for r in rows) + 0.5))
    for axis in (left, right):
        for label, at in events.items():
            axis.axvline(at, color=ACCENT, ls="--", lw=1)
            axis.text(at, axis.get_ylim()[1], f" {label}", color=ACCENT, fontsize=8, va="top")
    return finish(fig, show)
