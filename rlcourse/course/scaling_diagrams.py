"""Pictures of scaling out (lessons 04-06): data-parallel learners' all-reduce, throughput bars,
IMPALA's pipeline and its timeline beside PPO's, runners on a cluster's nodes. Same conventions as
diagrams.py: `show=True` shows the figure, `show=False` returns it."""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from rlcourse.course.diagrams import BLUE, GREEN, GREY, SAND, arrow, box, finish


def impala_pipeline(show: bool = True) -> Figure | None:
    """IMPALA's pieces: runners with requests in flight, the driver's ray.wait, a bounded queue and
    the learner thread; weights go back every broadcast_interval updates."""
    fig, ax = plt.subplots(figsize=(10, 2.8))
    runners = [box(ax, 0, y, f"runner {i + 1}\n(requests in flight)", GREEN, 9)
               for i, y in enumerate((1.0, -1.0))]
    driver = box(ax, 3.2, 0, "driver\nray.wait", BLUE, 9)
    queue = box(ax, 6.0, 0, "bounded queue\n(oldest dropped)", SAND, 9)
    learner = box(ax, 9.0, 0, "learner thread\nV-trace, update", BLUE, 9)
    for runner in runners:
        arrow(ax, runner, driver)
    arrow(ax, driver, queue, "batches", offset=(0, 0.3))
    arrow(ax, queue, learner)
    ax.annotate("weights (one ray.put) every broadcast_interval updates", xy=(0.9, 1.55),
                xytext=(9.0, 1.55), ha="center", va="center", fontsize=9,
                arrowprops=dict(arrowstyle="-|>", color=GREY, lw=1.2))
    ax.set_xlim(-1.3, 10.5)
    ax.set_ylim(-1.6, 1.9)
    ax.axis("off")
    return finish(fig, show)

def ppo_vs_impala(phases, show: bool = True) -> Figure | None:
    """PPO's and IMPALA's timelines side by side. `phases`: PPO's measured (name, seconds) of one
    iteration: sample, update, sync weights. PPO's runners and learner take turns; IMPALA's runners
    sample all the time while the learner thread updates (schematic, same length of time)."""
    fig, (ppo, impala) = plt.subplots(2, 1, figsize=(9, 3.6), sharex=True)
    colors = {"sample": "C0", "update": "C1", "sync weights": "C2"}
    start = 0.0
    for name, seconds in phases:
        row = 1 if name == "sample" else 0
        ppo.barh(row, seconds, left=start, color=colors.get(name, "C3"),
                 label=f"{name} ({seconds:.2f} s)")
        start += seconds
    total = start
    ppo.set_title("PPO (measured): one side works while the other waits", fontsize=10)
    ppo.legend(loc="upper right", fontsize=8)
    impala.barh(1, total, color="C0")
    update = total / 6
    for k in range(int(total // update)):
        impala.barh(0, update * 0.9, left=k * update, color="C1")
    impala.set_title("IMPALA (schematic): runners sample all the time, the learner thread "
                     "updates from the queue", fontsize=10)
    impala.set_xlabel("seconds")
    for ax in (ppo, impala):
        ax.set_yticks([0, 1], ["learner", "runners"])
    return finish(fig, show)

def all_reduce(gradients=("$g_0$", "$g_1$"), show: bool = True) -> Figure | None:
    """Data-parallel learners: each computes a gradient on its shard; the all-reduce gives every
    learner the sum, so all apply the same averaged step."""
    k = len(gradients)
    fig, ax = plt.subplots(figsize=(9, 2.9))
    total = " + ".join(g.strip("$") for g in gradients)
    hub = box(ax, 4.5, 0, f"all-reduce (sum)\n${total}$", SAND, 10)
    for i, g in enumerate(gradients):
        y = (k - 1) / 2 - i
        shard = box(ax, 0, 1.4 * y, f"learner {i}: shard {i}\n→ gradient {g}", BLUE, 9)
        back = box(ax, 9, 1.4 * y, f"learner {i}\napplies the mean", GREEN, 9)
        arrow(ax, shard, hub)
        arrow(ax, hub, back)
    ax.set_xlim(-1.8, 10.8)
    ax.set_ylim(-0.7 * k - 0.4, 0.7 * k + 0.4)
    ax.axis("off")
    return finish(fig, show)

def throughput_bars(rates, predictions=None, show: bool = True) -> Figure | None:
    """Env steps/s by (env kind, vectorize mode) as bars per env kind; optional predicted lines
    for one kind: `predictions` = (kind, {mode: steps/s})."""
    kinds = list(dict.fromkeys(kind for kind, _ in rates))
    fig, axes = plt.subplots(1, len(kinds), figsize=(4.5 * len(kinds), 3.5), squeeze=False)
    for ax, kind in zip(axes[0], kinds, strict=True):
        modes = [mode for k, mode in rates if k == kind]
        ax.bar(modes, [rates[kind, mode] for mode in modes], color=["C0", "C1", "C2"][:len(modes)])
        ax.set(title=kind, ylabel="env steps / s")
        if predictions and predictions[0] == kind:
            for (mode, value), style in zip(predictions[1].items(), ("--", ":", "-."), strict=False):
                ax.axhline(value, color="gray", linestyle=style, label=f"your {mode} prediction")
            ax.legend(fontsize="small")
    return finish(fig, show)

def runners_on_nodes(history, lost_after: int, show: bool = True) -> Figure | None:
    """Lesson 06's node loss: which node each runner ran on, and seconds per iteration, with the
    moment the node was stopped. `history`: one {"nodes": [...], "seconds": s} per iteration."""
    iterations = np.arange(1, len(history) + 1)
    names = list(dict.fromkeys(node for row in history for node in row["nodes"]))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 4.5), sharex=True)
    for name, color in zip(names, ("tab:blue", "tab:orange", "tab:green"), strict=False):
        points = [(i, runner) for i, row in zip(iterations, history, strict=True)
                  for runner, node in enumerate(row["nodes"], start=1) if node == name]
        top.scatter(*np.array(points).T, s=120, color=color, label=name)
    num_runners = len(history[0]["nodes"])
    top.set(yticks=range(1, num_runners + 1), ylim=(0.5, num_runners + 0.5),
            title="Which node each runner ran on")
    top.set_yticklabels([f"runner {i}" for i in range(1, num_runners + 1)])
    bottom.bar(iterations, [row["seconds"] for row in history], color="gray")
    bottom.set(ylabel="seconds", xlabel="training iteration",
               title="Seconds per iteration: the first one without the node waits for the restart")
    for ax in (top, bottom):
        ax.axvline(lost_after + 0.5, color="red", linestyle="--", label="node stopped")
    top.legend(loc="upper right", ncol=len(names) + 1)
    return finish(fig, show)
