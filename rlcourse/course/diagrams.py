"""The course's pictures: each lesson cell calls one function here instead of plotting by hand.

Every function draws one idea and shows it (`show=True`, for notebooks) or returns the figure
(`show=False`, for tests and export). Notation as in docs/glossary.md: s_t, a_t, r_t, gamma, lambda,
V(s_t), A_t, pi_theta.
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text

BLUE, SAND, GREEN, RED, GREY = "#e6eefc", "#fdf0d5", "#e3f4e1", "#fbe3e1", "#4a6fa5"


def finish(fig: Figure, show: bool) -> Figure | None:
    """Lay `fig` out; show it (notebooks) or return it (tests). Every picture ends here."""
    fig.tight_layout()
    if show:
        plt.show()
        return None
    return fig


def box(ax: Axes, x: float, y: float, text: str, color: str = BLUE, size: int = 10) -> Text:
    """A rounded box of `text` centred at (x, y): the pictures' nodes."""
    return ax.text(x, y, text, ha="center", va="center", fontsize=size,
                   bbox=dict(boxstyle="round,pad=0.6", fc=color, ec=GREY))


def arrow(ax: Axes, start: Text, end: Text, text: str = "", color: str = GREY, rad: float = 0.0,
          offset: tuple[float, float] = (0.0, 0.0)) -> None:
    """An arrow from box `start` to box `end`, labelled with `text` at its middle (+ `offset`)."""
    ax.annotate("", xy=end.get_position(), xytext=start.get_position(),
                arrowprops=dict(arrowstyle="-|>", color=color, lw=1.6, patchA=start.get_bbox_patch(),
                                patchB=end.get_bbox_patch(), connectionstyle=f"arc3,rad={rad}"))
    if text:
        (x0, y0), (x1, y1) = start.get_position(), end.get_position()
        ax.text((x0 + x1) / 2 + offset[0], (y0 + y1) / 2 + offset[1], text, ha="center",
                va="center", fontsize=10)


def rl_loop(show: bool = True) -> Figure | None:
    """The agent-environment loop: the policy picks a_t from s_t, the env answers r_t and s_{t+1}."""
    fig, ax = plt.subplots(figsize=(9, 3.2))
    agent = box(ax, 0, 0, "agent\npolicy $\\pi_\\theta(a_t \\mid s_t)$\nvalue $V(s_t)$")
    env = box(ax, 6, 0, "environment\n(e.g. CartPole)", GREEN)
    arrow(ax, agent, env, "action $a_t$", rad=-0.35, offset=(0, 1.05))
    arrow(ax, env, agent, "reward $r_t$, next state $s_{t+1}$,\nterminated / truncated",
           rad=-0.35, offset=(0, -1.15))
    ax.text(3, -2.1, "return $G_t = r_t + \\gamma r_{t+1} + \\gamma^2 r_{t+2} + \\dots$: "
            "what the agent learns to make large", ha="center", fontsize=10)
    ax.set_xlim(-2, 8)
    ax.set_ylim(-2.4, 1.9)
    ax.axis("off")
    return finish(fig, show)


def discounting(gammas=(0.9, 0.99), horizon: int = 100, show: bool = True) -> Figure | None:
    """How much a reward k steps ahead counts today: gamma ** k."""
    fig, ax = plt.subplots(figsize=(6, 2.6))
    k = np.arange(horizon)
    for gamma in gammas:
        ax.plot(k, gamma ** k, label=f"$\\gamma$ = {gamma} (half weight after "
                f"{np.log(0.5) / np.log(gamma):.0f} steps)")
    ax.set_xlabel("k, steps ahead")
    ax.set_ylabel("$\\gamma^k$")
    ax.set_title("weight of a reward k steps ahead")
    ax.legend(fontsize=8)
    return finish(fig, show)


def episode_chunk(n: int = 4, ending: str = "cut", show: bool = True) -> Figure | None:
    """An episode chunk of n steps: n+1 observations s_0 .. s_n, n actions and rewards, and how it
    ended ("terminated", "truncated" or "cut")."""
    fig, ax = plt.subplots(figsize=(1.9 * n + 2.5, 2.4))
    for t in range(n + 1):
        last = t == n
        ax.text(2 * t, 1, f"$s_{{{t}}}$", ha="center",
                va="center", fontsize=12, bbox=dict(boxstyle="circle,pad=0.3",
                                                    fc=SAND if last else BLUE, ec=GREY))
        if last:
            ax.text(2 * t, 0.5, "last obs.", ha="center", fontsize=9)
        else:
            ax.annotate("", xy=(2 * t + 1.6, 1), xytext=(2 * t + 0.4, 1),
                        arrowprops=dict(arrowstyle="-|>", color=GREY))
            ax.text(2 * t + 1, 1.45, f"$a_{{{t}}}$", ha="center", fontsize=11)
            ax.text(2 * t + 1, 0.5, f"$r_{{{t}}}$", ha="center", fontsize=11)
    what = {"terminated": "terminated: no future,\nV counts as 0 after it",
            "truncated": "truncated (time limit):\nbootstrap from $V(s_n)$",
            "cut": "cut by sample(): the episode goes on;\nbootstrap from $V(s_n)$"}[ending]
    ax.text(2 * n + 0.9, 1, what, va="center", fontsize=9)
    ax.text(n, -0.15, f"{n} steps: {n + 1} observations, {n} actions, {n} rewards, {n} action_logp",
            ha="center", fontsize=10)
    ax.set_xlim(-0.8, 2 * n + 4.5)
    ax.set_ylim(-0.5, 1.9)
    ax.axis("off")
    return finish(fig, show)


def clipped_objective(clip_param: float = 0.2, show: bool = True) -> Figure | None:
    """PPO's clipped surrogate min(r A, clip(r, 1 - eps_clip, 1 + eps_clip) A) against the
    probability ratio r_t(theta) = pi_theta / pi_old, for A > 0 and A < 0."""
    ratio = np.linspace(0.0, 2.0, 401)
    r, eps = "r_t(\\theta)", "\\epsilon_{\\mathrm{clip}}"  # the lessons' and glossary's notation
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), sharey=True)
    for ax, adv in zip(axes, (1.0, -1.0), strict=True):
        unclipped = ratio * adv
        clipped = np.clip(ratio, 1 - clip_param, 1 + clip_param) * adv
        ax.plot(ratio, unclipped, ":", color="gray", label=f"${r} A_t$ (unclipped)")
        ax.plot(ratio, np.minimum(unclipped, clipped), lw=2.5, color="C0",
                label=f"$\\min({r} A_t,\\ \\mathrm{{clip}}({r}, 1-{eps}, 1+{eps}) A_t)$")
        ax.axvspan(1 - clip_param, 1 + clip_param, color="C2", alpha=0.12,
                   label=f"$1 \\pm {eps}$, ${eps}$ = {clip_param}")
        ax.axvline(1, color="k", lw=0.5)
        flat = f"${r} > 1+{eps}$: flat, no gradient" if adv > 0 else \
            f"${r} < 1-{eps}$: flat, no gradient"
        ax.set_title(f"A_t {'> 0: a good action' if adv > 0 else '< 0: a bad action'}\n{flat}",
                     fontsize=10)
        ax.set_xlabel(f"probability ratio ${r} = \\pi_\\theta(a_t|s_t) / \\pi_{{old}}(a_t|s_t)$")
    axes[0].set_ylabel("objective (PPO maximizes it)")
    axes[1].legend(fontsize=8, loc="lower left")
    return finish(fig, show)


def data_walk(show: bool = True) -> Figure | None:
    """One PPO iteration as a loop of functions, each with its file in rlcourse/."""
    loop = [("EnvRunnerGroup.sample", "env/env_runner_group.py", (0, 2)),
            ("SingleAgentEnvRunner.sample\n(in each runner actor)",
             "env/env_runner.py\nenv/single_agent_env_runner.py", (1, 2)),
            ("episodes\n(SingleAgentEpisode)", "env/single_agent_episode.py", (2, 2)),
            ("LearnerGroup.update", "core/learner/learner_group.py", (2, 1)),
            ("Learner.update\n(build_batch, compute_loss)",
             "core/learner/learner.py\nalgorithms/ppo/ppo_learner.py", (2, 0)),
            ("weights: Learner.get_weights\n(inference_only=True)", "core/learner/learner.py",
             (1, 0)),
            ("Algorithm.sync_env_runner_weights\nEnvRunnerGroup.sync_weights",
             "algorithms/algorithm.py\nenv/env_runner_group.py", (0, 0))]
    fig, ax = plt.subplots(figsize=(12, 5))
    boxes = [box(ax, 3.6 * col, 1.6 * row, f"{label}\n{source}", size=9)
             for label, source, (col, row) in loop]
    setup = box(ax, -3.6, 3.2, "config (algorithm_config.py)\n↓\nAlgorithm.setup (algorithm.py)\n"
                 "builds the loop once", SAND, size=9)
    for start, end in [*zip(boxes, boxes[1:] + boxes[:1], strict=True), (setup, boxes[0])]:
        arrow(ax, start, end)
    ax.text(3.6, 1.6, "algo.train():\none turn of the loop", ha="center", va="center", fontsize=12)
    ax.set_xlim(-5.4, 8.8)
    ax.set_ylim(-0.7, 3.9)
    ax.axis("off")
    return finish(fig, show)


def chunk_advantages(chunks, show: bool = True) -> Figure | None:
    """Rewards r_t, values V(s_0..s_n) and advantages A_t along episode chunks, side by side.

    `chunks`: (title, episode, values, advantages) per chunk; a chunk that did not terminate gets
    a dot at its bootstrap value V(s_n)."""
    fig, axes = plt.subplots(1, len(chunks), figsize=(6 * len(chunks), 3.8), sharey=True,
                             squeeze=False)
    for ax, (title, episode, values, advantages) in zip(axes[0], chunks, strict=True):
        steps = np.arange(len(episode))
        ax.plot(steps, episode.rewards, label="reward $r_t$")
        ax.plot(np.arange(len(episode) + 1), values, label="value $V(s_t)$")
        ax.plot(steps, advantages, label="advantage $A_t$")
        if not episode.is_terminated:
            ax.plot(len(episode), values[-1], "o", color="C1", label="bootstrap $V(s_n)$")
        ax.axhline(0, color="gray", lw=0.5)
        ax.set_title(f"{title}: {len(episode)} steps")
        ax.set_xlabel("step t in the chunk")
    axes[0][0].legend()
    return finish(fig, show)


def animation_html(frames, interval_ms: int = 80) -> str:
    """An HTML/JavaScript player for a list of RGB frames (show it with IPython's HTML)."""
    from matplotlib import animation

    fig, ax = plt.subplots(figsize=(4, 2.7), dpi=60)
    ax.axis("off")
    image = ax.imshow(frames[0])
    movie = animation.FuncAnimation(fig, lambda i: [image.set_data(frames[i])],
                                    frames=len(frames), interval=interval_ms)
    plt.close(fig)
    return movie.to_jshtml(default_mode="once")


def gridworld_policy(grid, greedy_actions, path, episode_return: float,
                     show: bool = True) -> Figure | None:
    """A GridWorld (rlcourse.course.envs, made with render_mode="rgb_array") twice: the greedy action
    in each cell as an arrow (`greedy_actions[cell]`: 0 up, 1 right, 2 down, 3 left), and one
    episode's `path` of (row, col) cells."""
    cells = np.arange(grid.size * grid.size)
    rows, cols = np.divmod(cells, grid.size)
    shown = ~grid.pits[rows, cols] & (cells != cells[-1])  # no arrows on pits and the goal
    # Arrows in image coordinates (x to the right, y downwards) for up, right, down, left.
    arrows = np.array([[0, -1], [1, 0], [0, 1], [-1, 0]])[np.asarray(greedy_actions)]

    def pixel(row_col):  # centre of a cell in the rendered image, as (x, y)
        return (np.asarray(row_col)[..., ::-1] + 0.5) * 32

    fig, axes = plt.subplots(1, 2, figsize=(9, 4.3))
    image = grid.render()
    axes[0].imshow(image)
    axes[0].quiver(*pixel(np.c_[rows, cols][shown]).T, *arrows[shown].T, angles="xy",
                   scale_units="xy", scale=1 / 12, pivot="middle", color="black")
    axes[0].set_title("greedy action in each cell")
    axes[1].imshow(image)
    axes[1].plot(*pixel(path).T, "-o", color="#d63031", markersize=4)
    axes[1].set_title(f"one greedy episode: {len(path) - 1} steps, return {episode_return:.2f}")
    for ax in axes:
        ax.axis("off")
    return finish(fig, show)


def gradient_variance(estimates: dict, show: bool = True) -> Figure | None:
    """Per-episode policy-gradient estimates (`estimates`: label -> array [episodes, parameters])
    compared: the total variance of one episode's estimate (the sum over parameters), and the spread
    of the estimates along the direction of their common mean."""
    labels = list(estimates)
    direction = np.mean([e.mean(axis=0) for e in estimates.values()], axis=0)
    direction /= np.linalg.norm(direction)
    colors = ["C0", "C2", "C1"][:len(labels)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    left.bar(labels, [e.var(axis=0).sum() for e in estimates.values()], color=colors)
    left.set_title("variance of one episode's gradient estimate")
    left.set_ylabel("sum over the weights")
    bins = np.histogram_bin_edges(np.concatenate([e @ direction for e in estimates.values()]), 40)
    for i, (label, e) in enumerate(estimates.items()):
        projected = e @ direction
        right.hist(projected, bins=bins, alpha=0.55, color=colors[i], label=label)
        right.axvline(projected.mean(), color=colors[i], ls="--")
    right.set_title("estimates along their mean's direction (dashed: means)")
    right.set_xlabel("component of the estimate")
    right.legend()
    return finish(fig, show)
