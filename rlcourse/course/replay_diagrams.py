"""Lesson 09's pictures: a Q-table on the GridWorld, on- and off-policy data flow, the sum-tree,
n-step rows, Ape-X, and the plots of its measurements (learning curves, sampling frequencies,
overestimation, SAC's temperature)."""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from rlcourse.course.diagrams import BLUE, GREEN, GREY, RED, SAND, arrow, box, finish

PATH = "#d63031"  # the sum-tree's walk


def q_table(grid, q: np.ndarray, q_star: np.ndarray, returns: list[float],
            show: bool = True) -> Figure | None:
    """A GridWorld's learned table `q` beside the exact `q_star`: max_a Q(s, a) as colour and the
    greedy action as an arrow in every cell (none on pits and the goal); then the episodes' returns."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), gridspec_kw={"width_ratios": [1, 1, 1.3]})
    rows, cols = np.divmod(np.arange(grid.size**2), grid.size)
    shown = ~grid.pits[rows, cols] & ((rows, cols) != np.array(grid.goal)[:, None]).any(axis=0)
    arrows = np.array([[0, 1], [1, 0], [0, -1], [-1, 0]])  # (x, y) of up, right, down, left
    for ax, table, title in ((axes[0], q, "Q-learning's table"), (axes[1], q_star, "exact Q*")):
        values = np.ma.masked_array(table.max(axis=1), ~shown).reshape(grid.size, grid.size)
        image = ax.imshow(values, cmap="viridis", vmin=q_star[shown].max(axis=1).min() - 0.1,
                          vmax=1.0)
        ax.imshow(np.ma.masked_array(grid.pits, ~grid.pits), cmap="Blues", vmin=0, vmax=1.3)
        ax.text(*grid.goal[::-1], "goal", ha="center", va="center", fontsize=9)
        ax.quiver(cols[shown], rows[shown], *arrows[table[shown].argmax(axis=1)].T, pivot="middle",
                  color="white", scale=12)
        for row, col in zip(rows[shown], cols[shown], strict=True):
            ax.text(col, row + 0.33, f"{table[row * grid.size + col].max():.2f}", ha="center",
                    fontsize=7, color="white")
        ax.set(title=f"{title}: max$_a$ Q(s, a), greedy a", xticks=[], yticks=[])
    fig.colorbar(image, ax=axes[1], fraction=0.046)
    window = min(50, len(returns))
    axes[2].plot(np.convolve(returns, np.ones(window) / window, mode="valid"))
    axes[2].set(xlabel="episode", ylabel=f"return (mean of {window})",
                title="returns while epsilon falls")
    return finish(fig, show)


def on_off_policy(show: bool = True) -> Figure | None:
    """PPO's samples are learned from a few epochs, then dropped; DQN's go into a replay buffer that
    the learner draws from again and again, old steps and new."""
    fig, (ppo, dqn) = plt.subplots(2, 1, figsize=(10, 3.8))
    runner = box(ppo, 0, 0, "runners\n(current policy)", GREEN, 9)
    batch = box(ppo, 3.4, 0, "train batch\n(this policy's steps)", SAND, 9)
    learner = box(ppo, 6.8, 0, "learner\nnum_epochs passes", BLUE, 9)
    bin_ = box(ppo, 9.6, 0, "dropped", RED, 9)
    arrow(ppo, runner, batch)
    arrow(ppo, batch, learner)
    arrow(ppo, learner, bin_)
    arrow(ppo, learner, runner, "new weights: the next batch must be sampled again", rad=-0.3,
          offset=(0, -1.25))
    ppo.set_title("on-policy (PPO): learn from the current policy's steps, then throw them away",
                  fontsize=10)
    runner = box(dqn, 0, 0, "runners\n(epsilon-greedy)", GREEN, 9)
    buffer = box(dqn, 3.4, 0, "replay buffer\n(last capacity steps,\nany policy's)", SAND, 9)
    learner = box(dqn, 6.8, 0, "learner\none step per batch", BLUE, 9)
    arrow(dqn, runner, buffer, "add", offset=(0, 0.25))
    arrow(dqn, buffer, learner, "sample", rad=-0.25, offset=(0, 0.45))
    arrow(dqn, learner, buffer, "priorities", rad=-0.25, offset=(0, -0.45))
    arrow(dqn, learner, runner, "weights", rad=-0.3, offset=(0, -1.25))
    dqn.set_title("off-policy (DQN): every step is replayed many times (training_intensity)",
                  fontsize=10)
    for ax in (ppo, dqn):
        ax.set_xlim(-1.4, 10.8)
        ax.set_ylim(-1.8, 0.8)
        ax.axis("off")
    return finish(fig, show)


def learning_curves(curves: dict[str, np.ndarray], target: float | None = None,
                    show: bool = True) -> Figure | None:
    """Return against env steps and against wall time; `curves`: name -> rows of
    (seconds, env steps, return), one row per iteration."""
    fig, (steps_ax, time_ax) = plt.subplots(1, 2, figsize=(11, 3.4), sharey=True)
    for name, rows in curves.items():
        steps_ax.plot(rows[:, 1], rows[:, 2], label=name)
        time_ax.plot(rows[:, 0], rows[:, 2], label=name)
    for ax in (steps_ax, time_ax):
        if target is not None:
            ax.axhline(target, color=GREY, ls="--", lw=1)
        ax.legend()
    steps_ax.set(xlabel="env steps sampled", ylabel="mean return (last 100 episodes)",
                 title="per env step: sample efficiency")
    time_ax.set(xlabel="seconds on this machine", title="per second: wall time")
    return finish(fig, show)


def sum_tree(tree, u: float | None = None, show: bool = True) -> Figure | None:
    """A `SumTree` (rlcourse/utils/replay_buffers/prioritized_episode_replay_buffer.py) as drawn
    from its array: each node the sum of its children, the leaves the slots' priorities; with `u`,
    the walk that finds the slot for the prefix sum u (left if u < the left child's sum, else
    subtract it and go right)."""
    size, values = tree.size, tree.tree
    depth = int(np.log2(size))
    walk = {1}
    if u is not None:
        rest, node = float(u), 1
        while node < size:
            if rest < values[2 * node]:
                node = 2 * node
            else:
                rest, node = rest - values[2 * node], 2 * node + 1
            walk.add(node)

    def position(node: int) -> tuple[float, float]:
        level = int(np.log2(node))
        span = size >> level
        return (node - (1 << level) + 0.5) * span - 0.5, depth - level

    fig, ax = plt.subplots(figsize=(min(1.3 * size, 12), 0.9 * depth + 2.2))
    for node in range(2, 2 * size):
        (x0, y0), (x1, y1) = position(node // 2), position(node)
        on_walk = node in walk and node // 2 in walk
        ax.plot([x0, x1], [y0, y1], color=PATH if on_walk else GREY, lw=2.5 if on_walk else 1,
                zorder=0)
    for node in range(1, 2 * size):
        x, y = position(node)
        ax.text(x, y, f"{values[node]:.4g}", ha="center", va="center", fontsize=9,  # 0.5, not
                # 0.500001: stored priorities carry a tiny epsilon so that none is 0
                bbox=dict(boxstyle="round,pad=0.4", fc=RED if node in walk and u is not None
                          else (SAND if node >= size else BLUE), ec=GREY))
    for slot in range(size):
        ax.text(slot, -0.5, f"slot {slot}", ha="center", fontsize=8)
    title = f"sum-tree: root = total priority {tree.total:.4g}"
    if u is not None:
        title += f"; u = {u:.4g} walks down to slot {int(tree.find(np.array([u]))[0])}"
    ax.set_title(title, fontsize=10)
    ax.set_xlim(-0.8, size - 0.2)
    ax.set_ylim(-0.8, depth + 0.5)
    ax.axis("off")
    return finish(fig, show)


def sampling_frequencies(priorities: np.ndarray, slots: np.ndarray,
                         weights: dict[float, np.ndarray], show: bool = True) -> Figure | None:
    """How often each slot was drawn (`slots`) against priority / total, and the importance weights
    per slot for some values of beta (`weights`: beta -> one weight per slot)."""
    k = len(priorities)
    fig, (freq, weight) = plt.subplots(1, 2, figsize=(11, 3.2))
    x = np.arange(k)
    freq.bar(x - 0.2, priorities / priorities.sum(), 0.4, color=GREY, label="priority / total")
    freq.bar(x + 0.2, np.bincount(slots, minlength=k) / len(slots), 0.4, color="C1",
             label=f"drawn ({len(slots):,} samples)")
    freq.set(xlabel="slot", ylabel="probability", xticks=x, title="what the sum-tree samples")
    freq.legend(fontsize=8)
    for beta, w in weights.items():
        weight.plot(x, w, "o-", label=f"beta = {beta:g}")
    weight.set(xlabel="slot", ylabel="importance weight", xticks=x, ylim=(0, 1.05),
               title="importance weights $(N P(i))^{-\\beta}$ / max")
    weight.legend(fontsize=8)
    return finish(fig, show)


def n_step_rows(length: int, rows: list[tuple[int, int, bool]], ending: str,
                show: bool = True) -> Figure | None:
    """The n-step rows of one stored episode of `length` steps that ended by `ending`
    ("terminated" or "truncated"): each row (t, n, terminated) sums rewards r_t..r_{t+n-1} and
    bootstraps from s_{t+n}, unless it reached a termination."""
    fig, ax = plt.subplots(figsize=(1.2 * length + 4, 0.45 * len(rows) + 1.4))
    for i, (t, n, terminated) in enumerate(sorted(rows)):
        y = len(rows) - i
        ax.barh(y, n, left=t, height=0.55, color="C0", alpha=0.6)
        ax.text(t - 0.1, y, f"t={t}, n={n}", ha="right", va="center", fontsize=8)
        mark = "no bootstrap" if terminated else f"bootstrap Q(s_{t + n})"
        ax.text(t + n + 0.1, y, mark, va="center", fontsize=8, color=PATH if terminated else "black")
    ax.axvline(length, color=PATH if ending == "terminated" else GREY, ls="--")
    ax.text(length, len(rows) + 0.8, ending, ha="center", fontsize=9)
    ax.set(xlabel="step of the episode", xticks=range(length + 1), yticks=[],
           xlim=(-2.2, length + 3.2), ylim=(0.3, len(rows) + 1.2),
           title=f"{ending} episode of {length} steps: its n-step rows")
    return finish(fig, show)


def overestimation(num_actions: np.ndarray, single: np.ndarray, double: np.ndarray,
                   show: bool = True) -> Figure | None:
    """The bias of max_a over noisy Q estimates (all true values 0) against the number of actions:
    one estimator picks and values (max), two independent ones (double Q) do not overestimate."""
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    ax.plot(num_actions, single, "o-", color="C3", label="max_a Q(s', a): pick and value with one")
    ax.plot(num_actions, double, "s-", color="C0",
            label="Q_B(s', argmax_a Q_A(s', a)): pick with A, value with B")
    ax.axhline(0, color=GREY, lw=1, label="true value of every action")
    ax.set(xlabel="number of actions", ylabel="mean estimate of the best value",
           title="noisy estimates: the max is biased upwards")
    ax.legend(fontsize=8)
    return finish(fig, show)


def sac_temperature(steps: np.ndarray, returns: np.ndarray, alphas: np.ndarray,
                    show: bool = True) -> Figure | None:
    """SAC's return and its learned entropy temperature alpha against env steps."""
    fig, (ret, alpha) = plt.subplots(1, 2, figsize=(11, 3.2))
    ret.plot(steps, returns, ".-")
    ret.set(xlabel="env steps sampled", ylabel="mean return", title="SAC on Pendulum-v1: return")
    alpha.plot(steps, alphas, ".-", color="C2")
    alpha.set(xlabel="env steps sampled", ylabel="alpha", yscale="log",
              title="the learned entropy temperature alpha")
    return finish(fig, show)


def apex(num_runners: int = 2, num_shards: int = 1, show: bool = True) -> Figure | None:
    """Ape-X: runners (each its own epsilon) send samples straight to replay shards (actors); the
    learner draws batches from the shards, sends new priorities back and weights to the runners."""
    fig, ax = plt.subplots(figsize=(11, 1.3 * max(num_runners, num_shards) + 1.6))

    def column(count: int) -> list[float]:
        return list(1.3 * ((count - 1) / 2 - np.arange(count)))

    runners = [box(ax, 0, y, f"runner {i + 1}\nepsilon_{i + 1}, samples all the time", GREEN, 9)
               for i, y in enumerate(column(num_runners))]
    shards = [box(ax, 4.3, y, f"replay shard {j + 1} (actor)\nadd, sample, update priorities",
                  SAND, 9) for j, y in enumerate(column(num_shards))]
    learner = box(ax, 8.6, 0, "learner (driver)\nDQN's loss, one update per\nbatch of a ready request",
                  BLUE, 9)
    for i, runner in enumerate(runners):
        arrow(ax, runner, shards[i % num_shards], "episodes" if i == 0 else "", offset=(0, 0.3))
    for shard in shards:
        arrow(ax, shard, learner, "batches", rad=-0.2, offset=(0, 0.45))
        arrow(ax, learner, shard, "priorities", rad=-0.2, offset=(0, -0.45))
    # The weights go up from the learner, across, and down into the top runner (the others below
    # it get the same reference): a line that starts and ends on the boxes.
    top = max(column(num_runners)) + 1.0
    ax.annotate("", xy=(8.6, top), xytext=learner.get_position(),
                arrowprops=dict(arrowstyle="-", color=GREY, lw=1.2, patchA=learner.get_bbox_patch()))
    ax.plot([0, 8.6], [top, top], color=GREY, lw=1.2)
    ax.annotate("", xy=runners[0].get_position(), xytext=(0, top),
                arrowprops=dict(arrowstyle="-|>", color=GREY, lw=1.2,
                                patchB=runners[0].get_bbox_patch()))
    ax.text(4.3, top + 0.2, "weights to the runners (one ray.put), every so many updates",
            ha="center", fontsize=9)
    ax.text(4.3, min(column(max(num_runners, num_shards))) - 1.0,
            "every request stays in flight; one ray.wait says what is done: nobody waits",
            ha="center", fontsize=9, color=GREY)
    ax.set_xlim(-1.6, 10.3)
    ax.set_ylim(min(column(max(num_runners, num_shards))) - 1.3, top + 0.6)
    ax.axis("off")
    return finish(fig, show)


def throughput(rates: dict[str, float], show: bool = True) -> Figure | None:
    """Measured env steps/s per setup, as bars labelled with their values."""
    fig, ax = plt.subplots(figsize=(6, 3))
    bars = ax.bar(list(rates), list(rates.values()), color=["C0", "C1", "C2"][:len(rates)])
    ax.bar_label(bars, fmt="{:,.0f}")
    ax.set(ylabel="env steps sampled / s", title="measured on this machine")
    return finish(fig, show)
