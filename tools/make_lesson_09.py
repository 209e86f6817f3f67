"""Writes lessons/09_off_policy.ipynb (outputs stripped): python tools/make_lesson_09.py"""

from lesson_cells import code, concept_checks_cell, md, write_lesson

NAME = "09_off_policy.ipynb"

CELLS = [
    md(r"""
# Lesson 09 — Off-policy learning: Q-learning, replay buffers, DQN, SAC and Ape-X

**By the end of this lesson you can**
1. state the **Bellman equation** for $Q$, learn the GridWorld's $Q$-table with **tabular
   Q-learning** and an **epsilon-greedy** schedule, and say why a network in place of the table
   needs a **target network** and **replay**;
2. say what makes an algorithm **on-policy** or **off-policy**, and show what it costs and buys
   with PPO and DQN on CartPole, per env step and per second;
3. read a **replay buffer**: what a **sum-tree** samples under **prioritized replay**, what the
   **importance weights** undo, and how **n-step** rows end at an episode's end;
4. write DQN's **n-step double-Q target** (the exercise) and explain, with a picture, why the
   online network picks the action and the **target network** values it;
5. train **SAC** on Pendulum and read its learned **entropy temperature** $\alpha$;
6. draw **Ape-X**'s runners, replay shard and learner, and measure its throughput against DQN's.

**Time:** about 60 minutes of study (one exercise); the cells run in about 90 seconds on 2 idle
cores and about two minutes on one (measured there; longer on a busy machine).
Notation as in the earlier lessons ($s_t, a_t, r_t, \gamma$); $Q(s, a)$ is the return expected
after taking $a$ in $s$ (section 1). Terms: see the [glossary](../docs/glossary.md).
"""),
    code("""
import time

import numpy as np
import ray
import torch
from IPython.display import display

from rlcourse import PPOConfig
from rlcourse.algorithms.dqn import DQNConfig
from rlcourse.course import replay_diagrams
from rlcourse.course.doctor import usable_cpus
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.replay_buffers import EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer

ray.shutdown()  # a re-run starts from a clean slate
# The networks of this lesson are small: one torch thread is faster than two that wait for each
# other, most of all on a busy machine (binder/start does the same on Binder's 1 CPU).
torch.set_num_threads(1)
cores = usable_cpus()  # the CPUs this kernel may use (Binder: 1)
print(f"this machine: {cores:g} usable CPUs")


def race(config, budget_s, target=450.0):
    \"\"\"Train until the mean return reaches `target`, or for `budget_s` seconds; return the algorithm,
    one row (seconds, env steps sampled, mean return) per iteration, and the last result.\"\"\"
    algo, rows = config.build_algo(), []
    line, start = display("building...", display_id=True), time.perf_counter()
    while time.perf_counter() - start < budget_s:
        result = algo.train()
        rows.append((time.perf_counter() - start, result["num_env_steps_sampled_lifetime"],
                     result["env_runners"]["episode_return_mean"]))
        line.update(f"{type(algo).__name__}: {rows[-1][0]:5.1f} s | {rows[-1][1]:7,d} env steps | "
                    f"return {rows[-1][2]:6.1f}")
        if rows[-1][2] >= target:
            break
    return algo, np.array(rows), result
"""),
    md(r"""
## 1. The Bellman equation, and Q-learning with a table

First the idea DQN is built on, on a problem small enough to write down: the course's GridWorld
(lesson 03), 25 cells, a row of pits with one gap, the goal in the bottom-right corner, $-0.01$ a
step, $+1$ at the goal and $-1$ in a pit (both end the episode). Let $Q^*(s, a)$ be the return
expected after taking $a$ in $s$ and acting as well as possible afterwards. It satisfies the
**Bellman optimality equation**: the reward now, plus the discounted value of acting best from
the next state,

$$Q^*(s_t, a_t) = \mathbb{E}\Big[r_t + \gamma\, (1 - \text{terminated})\, \max_{a'} Q^*(s_{t+1}, a')\Big].$$

Knowing the grid's moves, we could solve it by applying it to every entry again and again (value
iteration: `optimal_q` does that, to check our answer). Without a model of the env, **Q-learning**
(Watkins and Dayan, 1992) keeps a table $Q(s, a)$ and, after every step, moves the one entry it
visited a step $\eta$ (the learning rate, `lr`) toward a sample of the right-hand side:

$$Q(s_t, a_t) \leftarrow Q(s_t, a_t) + \eta\, \Big(r_t + \gamma\, (1 - \text{terminated})\,
\max_{a'} Q(s_{t+1}, a') - Q(s_t, a_t)\Big).$$

The target takes the **max** over the next actions, whatever the agent will really do next: it
learns the values of the greedy policy while acting in another way, which is what **off-policy**
means. How it acts is **epsilon-greedy**: with probability $\epsilon$, the **exploration rate**, a
random action, otherwise the greedy one, $\arg\max_a Q(s_t, a)$ (this $\epsilon$ is not PPO's clip
$\epsilon_{\text{clip}}$). A **schedule** lowers $\epsilon$ as the table fills: here from 1.0 (every
action is tried) in a straight line to 0.05 over the first 5,000 of 10,000 steps
(`linear_epsilon`). `rlcourse/course/tabular.py` is this page of math as plain functions.
"""),
    code("""
from rlcourse.course import tabular
from rlcourse.course.envs import GridWorld

grid = GridWorld()
start = time.perf_counter()
q_table, grid_returns = tabular.q_learning(grid, num_steps=10_000, gamma=0.99, lr=0.5,
                                           epsilon=(1.0, 0.05, 5_000), seed=0)
q_seconds = time.perf_counter() - start
q_star = tabular.optimal_q(grid, gamma=0.99)  # value iteration, from the grid's known moves
start_cells = np.array([row * grid.size + col for row, col in grid.start_cells])
greedy_optimal = tabular.greedy_is_optimal(q_table, q_star, start_cells)
value_gap = np.abs(q_table.max(axis=1) - q_star.max(axis=1))[start_cells].max()
replay_diagrams.q_table(grid, q_table, q_star, grid_returns)
print(f"10,000 steps, {len(grid_returns)} episodes, in {q_seconds:.2f} s; epsilon at steps 0, 2,500, "
      f"5,000: {[tabular.linear_epsilon(step, 1.0, 0.05, 5_000) for step in (0, 2_500, 5_000)]}")
print(f"greedy action of the table is optimal in {greedy_optimal.sum()} of {len(start_cells)} cells; "
      f"largest |max_a Q - max_a Q*|: {value_gap:.3f}")
"""),
    md(r"""
Left, the table after 10,000 steps; middle, the exact answer. Each cell shows its value
$\max_a Q(s, a)$ and its greedy action: the values fall by about 0.02 a step away from the goal
($\gamma$ = 0.99 and the step cost of 0.01), and the arrows lead through the gap. Right: while
$\epsilon$ is high the agent often walks into a pit; as it falls, the returns approach those of
the greedy policy.

**From a table to a network.** The table has one entry per (cell, action), 100 here. CartPole's
state is four real numbers: no table can list them, and no state comes back exactly. **DQN** (Mnih
et al., 2015) replaces the table by a network $Q_\theta(s, a)$ and the update by a regression of
$Q_\theta(s_t, a_t)$ on the same target. Two things that were harmless with a table then break:

- **The target moves.** Changing one table entry changes nothing else; a gradient step on $\theta$
  changes $Q$ everywhere, including $Q(s_{t+1}, \cdot)$ inside the target, so the regression
  chases its own output and errors can feed on themselves. DQN computes targets with a **target
  network**, a copy of $Q_\theta$ refreshed only now and then, so that for a while they stand
  still (section 4).
- **Consecutive steps are alike.** The table does not care in which order it sees steps; a network
  trained on one episode's steps in order fits that stretch of states and forgets the rest (SGD
  assumes independent samples). DQN keeps steps in a **replay buffer** and trains on random
  batches from it, mixing many episodes and reusing every step many times (sections 2 and 3).
"""),
    md("""
## 2. On-policy and off-policy

PPO (lessons 01-04) is **on-policy**: its loss is an expectation under the policy being trained, so
each batch must come from the current weights. It makes a few passes over a batch (`num_epochs`),
then throws the batch away and samples a new one. **Off-policy** algorithms learn from steps that
*any* policy took, as the table of section 1 did. DQN's runners act **epsilon-greedily**, as
there; `DQNConfig`'s `epsilon` schedule lowers $\\epsilon$ from 1.0 to 0.02 over the first 10,000
env steps. DQN keeps the last `capacity` env steps in a **replay buffer** and learns from
batches drawn from it: every step is learned from many times (`training_intensity=8`: 8 env steps
trained per env step sampled), long after the weights that sampled it are gone.
"""),
    code("""
replay_diagrams.on_off_policy()
"""),
    md("""
What does that buy, and what does it cost? PPO with the course's CartPole settings (`tuned_examples/ppo/cartpole_ppo.py`; its own
defaults are RLlib's, made for larger problems) and DQN with its defaults, each with one runner in
this process (PPO's with 4 sub-envs), for 15 seconds of this machine or until the mean return of
the last 100 episodes reaches 450:
"""),
    code("""
ppo_config = (PPOConfig().environment("CartPole-v1").debugging(seed=0)
              .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
              .training(lr=3e-3, train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=6,
                        lambda_=0.95, clip_param=0.2, vf_clip_param=1000.0, vf_loss_coeff=0.5,
                        use_kl_loss=False, grad_clip=0.5)
              .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False}))
ppo, ppo_curve, _ = race(ppo_config, budget_s=15)
ppo.stop()
dqn_config = DQNConfig().environment("CartPole-v1").env_runners(num_env_runners=0).debugging(seed=0)
dqn, dqn_curve, dqn_result = race(dqn_config, budget_s=15)  # stopped in section 4, which uses it
curves = {"PPO": ppo_curve, "DQN": dqn_curve}
replay_diagrams.learning_curves(curves, target=450)
rates = {name: rows[-1, 1] / rows[-1, 0] for name, rows in curves.items()}
steps = dqn_curve[-1, 1]  # PPO's return when it had sampled as many env steps as DQN did in all
ppo_at_steps = np.interp(steps, ppo_curve[:, 1], ppo_curve[:, 2])
for name, rows in curves.items():
    print(f"{name}: {rows[-1, 1]:8,.0f} env steps in {rows[-1, 0]:4.1f} s ({rates[name]:6,.0f} env "
          f"steps/s, learning included), last return {rows[-1, 2]:5.1f}")
print(f"after {steps:,.0f} env steps: DQN's return {dqn_curve[-1, 2]:.1f}, PPO's {ppo_at_steps:.1f}; "
      f"DQN's exploration rate epsilon was still {dqn_result['env_runners']['epsilon']:.2f}")
"""),
    md("""
Read the two panels and the lines under them, measured on this machine just now. **Per env step**
(left) they compare **only the start** of learning: the env steps DQN sampled in its 15 seconds
(printed above), a small part of the 72-94k it takes to reach 450, and DQN is still exploring a lot
(its epsilon, printed above). The last line says which was ahead after as many env steps as DQN
sampled. Both squeeze a lot out of each step, DQN by replaying every stored step 8 times on average
(`training_intensity`), PPO by 6 passes over each batch (`num_epochs`). **Per second** (right; the
rates printed above were measured just now): CartPole's
steps cost microseconds, so what costs time is learning, and DQN makes a gradient step (32 rows) for
every 4 env steps, PPO 24 (250 rows each) for every 1000, so PPO gets through many more env steps in
a second. What off-policy learning buys is freedom over where the data comes
from: older policies, exploring ones, many runners with different epsilons (section 6), logged
data; and every step keeps serving as long as it is in the buffer. When env steps are expensive (a
robot, a slow simulator), that reuse is what counts; when they cost microseconds, sampling more is
cheaper. `benchmarks/dqn_cartpole.py` runs DQN to a return of 450 (72-94k env steps, seeds 0-4, as
`DQNConfig`'s docstring says), the comparison of whole runs that a lesson has no time for.

## 3. The replay buffer and prioritization

rlcourse's buffers keep **whole episodes** (RLlib's new stack does too): a chunk cut between two
`sample()` calls joins its episode, and the oldest episodes are evicted when `capacity` env steps
are exceeded. Each stored step has a slot. **Prioritized replay** (Schaul et al., 2016) draws slot
$i$ with probability $P(i) = p_i^{\\alpha_{\\text{PER}}} / \\sum_k p_k^{\\alpha_{\\text{PER}}}$, where
$p_i$ is its last $|$TD error$|$: the steps the network predicts worst are replayed most. The
exponent $\\alpha_{\\text{PER}}$ (the buffer's `alpha`) sets how much: 0 is uniform sampling. It is
not SAC's temperature $\\alpha$ of section 5.

Drawing from such a distribution fast is the job of a **sum-tree**: each node holds the sum of its
two children, the root the total. Draw $u$ uniformly in [0, total) and walk down: left if $u$ is
below the left child's sum, else subtract that sum and go right. The leaf reached is slot $i$ with
probability $p_i$/total, in $\\log_2$(capacity) steps, and a new priority updates one leaf and its
ancestors. Here is the tree inside a real `PrioritizedEpisodeReplayBuffer` of 8 slots, one episode
stored, with priorities set from made-up TD errors ($\\alpha_{\\text{PER}}$ = `alpha=1`, so
$P(i) = p_i$/total):
"""),
    code("""
def toy_episode(length, terminated):
    \"\"\"An episode whose observation at step t is t (so a row shows where it starts); reward 1.\"\"\"
    return SingleAgentEpisode(np.arange(length + 1, dtype=np.float32)[:, None], np.zeros(length, np.int64),
                              np.ones(length, np.float32), is_terminated=terminated,
                              is_truncated=not terminated)

buffer = PrioritizedEpisodeReplayBuffer(capacity=8, alpha=1.0, seed=0)
buffer.add([toy_episode(8, terminated=True)])
td_errors = np.array([1.0, 4.0, 2.0, 0.5, 3.0, 1.0, 6.0, 0.5])
buffer.update_priorities(np.arange(8), td_errors)  # the slots, 0-7, and their new |TD errors|
replay_diagrams.sum_tree(buffer.tree, u=11.0)
"""),
    md(r"""
Draw many rows and count how often each slot comes up. Sampling by priority changes the
distribution the loss averages over, so the updates are **biased** toward high-priority steps. The
**importance weight** of a row, $w_i = (N \cdot P(i))^{-\beta}$, divided by the largest weight so that
weights only scale updates down, undoes that: fully at $\beta = 1$, partly below (DQN's default
in both libraries is $\beta = 0.4$; the course's SAC settings, RLlib's tuned Pendulum example's, use
$\beta = 0$). The loss is $\text{mean}_i\, w_i \cdot \text{huber}(\text{TD}_i)$.
"""),
    code("""
draws = {beta: buffer.sample(10_000, n_step=1, beta=beta) for beta in (0.0, 0.4, 1.0)}
slots = draws[0.4]["indices"]
frequency = np.bincount(slots, minlength=8) / len(slots)
probability = td_errors / td_errors.sum()
weights = {}
for beta, rows in draws.items():
    weights[beta] = np.zeros(8)
    weights[beta][rows["indices"]] = rows["weights"]  # every row of a slot has the same weight
replay_diagrams.sampling_frequencies(td_errors, slots, weights)
print("drawn / expected, per slot:", (frequency / probability).round(2))
print("weights at beta=1 times P(i) (constant: the bias undone):", (weights[1.0] * probability).round(4))
"""),
    md("""
**n-step rows.** A row starting at step $t$ sums $n$ discounted rewards,
$G_t^{(n)} = r_t + \\gamma r_{t+1} + \\dots + \\gamma^{n-1} r_{t+n-1}$ (the return $G_t$ of the
earlier lessons, cut after $n$ rewards), and bootstraps from $s_{t+n}$. At an
episode's end fewer steps are left: the buffer uses $n = \\min(3, T - t)$, and marks the rows that
reach a **termination** `terminateds=True` (no future, no bootstrap). A **truncated** episode ends
on a time limit: its last state still had a future, so its rows bootstrap from it like any other.
Below, rows drawn from a terminated episode of 5 steps and a truncated one of 4 (each toy
observation is its step $t$, so `obs` shows where a row starts):
"""),
    code("""
episodes = {"terminated": toy_episode(5, terminated=True), "truncated": toy_episode(4, terminated=False)}
gamma, row_sets, sums_right = 0.9, {}, True
for ending, episode in episodes.items():
    one_episode = EpisodeReplayBuffer(capacity=100, seed=0)
    one_episode.add([episode])
    rows = one_episode.sample(200, n_step=3, gamma=gamma)  # 200 draws: every start t, several times
    row_sets[ending] = set(zip(rows["obs"][:, 0].astype(int).tolist(), rows["n_step"].tolist(),
                               rows["terminateds"].tolist()))
    # Rewards of 1: G_t^(n) = 1 + gamma + ... + gamma^(n-1), and s' is n steps after s.
    sums_right &= bool(np.allclose(rows["rewards"], (1 - gamma ** rows["n_step"]) / (1 - gamma))
                       and np.array_equal(rows["new_obs"][:, 0], rows["obs"][:, 0] + rows["n_step"]))
    replay_diagrams.n_step_rows(len(episode), sorted(row_sets[ending]), ending)
print("(t, n, terminated) of the terminated episode's rows:", sorted(row_sets["terminated"]))
"""),
    md(r"""
## 4. DQN's target, and why double Q

DQN learns $Q(s, a)$ by regression on a **target** built from the next state:

$$y = G_t^{(n)} + \gamma^n (1 - \text{terminated})\, Q_{\text{target}}(s', a^*)$$

Two networks are involved. The **online** network $Q$ is trained; the **target network** is a copy
of it, refreshed every `target_network_update_freq` env steps (rlcourse copies it, `tau=1`), so that
the regression target does not move at every gradient step. Plain DQN uses
$a^* = \arg\max_a Q_{\text{target}}(s', a)$: the same numbers **pick** the action and **value** it.
With noisy estimates, the action that looks best is often one whose noise is positive, so the max
is biased upward, and the bias is fed back into every target. Here every action's true value is 0
and the estimates are noisy:
"""),
    code("""
rng = np.random.default_rng(0)
num_actions = np.array([2, 4, 8, 16, 32])
single, double = [], []
for k in num_actions:
    estimate_a, estimate_b = rng.normal(0.0, 1.0, (2, 20_000, k))  # two noisy estimates of Q(s', .) = 0
    single.append(estimate_a.max(axis=1).mean())  # pick and value with the same estimate
    double.append(estimate_b[np.arange(20_000), estimate_a.argmax(axis=1)].mean())  # pick with A, value with B
single, double = np.array(single), np.array(double)
replay_diagrams.overestimation(num_actions, single, double)
print("bias of the max:   ", single.round(2))
print("bias of double Q:  ", double.round(3))
"""),
    md(r"""
**Double DQN** (van Hasselt et al., 2016) picks with one network and values with the other:
$a^* = \arg\max_a Q_{\text{online}}(s', a)$, valued by $Q_{\text{target}}(s', a^*)$. The two
networks are not independent like estimates A and B above, but their errors differ enough to
remove most of the bias. rlcourse's `DQNConfig` has `double_q=True` by default, as RLlib's does.

**Dueling heads.** `DQNConfig` also has `dueling=True` by default, as RLlib's does (Wang et al.,
2016): the network ends in two heads, a state value $V(s)$ and one advantage $A(s, a)$ per action,
and combines them as $Q(s, a) = V(s) + A(s, a) - \text{mean}_{a'} A(s, a')$. In most states the
actions' Q-values move together (how good the state is matters more than which action), and
$V(s)$ learns that from every update, whichever action the row took, while $A$ learns only how
the actions differ. Subtracting the mean makes the split unique: otherwise any constant could move
from $V$ to $A$. `rlcourse/algorithms/dqn/dqn_rl_module.py` has the two heads.

### Exercise: the n-step double-DQN target

Write `my_dqn_target(batch, q_online, q_target, gamma)`, one target $y$ per row:

$$y = G_t^{(n)} + \gamma^{n} (1 - \text{terminated})\, Q_{\text{target}}\big(s', \arg\max_a Q_{\text{online}}(s', a)\big)$$

on torch tensors, as `DQNLearner.compute_loss` does (`rlcourse/algorithms/dqn/dqn_learner.py`).
Each row has its own $n$ (section 3: rows end early at an episode's end). The checker calls your
function on batches of its own, with terminated, truncated and short rows, and compares it with
the target inside rlcourse's `DQNLearner`; a wrong answer gets a hint naming the mistake. Until you
write it, it is reported as not attempted. Stuck? `show_solution("dqn_target")`.
"""),
    code("""
from rlcourse.course.exercises import check_dqn_target, show_solution


def my_dqn_target(batch, q_online, q_target, gamma):
    \"\"\"The n-step double-DQN target y, one per row of `batch` (torch tensors, B rows):

    batch["rewards"]      G_t^(n): the row's n rewards, discounted and summed, [B]
    batch["new_obs"]      s': the observation n steps after s, [B, obs_dim]
    batch["terminateds"]  True where those n steps reached a termination, [B]
    batch["truncateds"]   True where they reached a time limit, [B]
    batch["n_step"]       n: the steps the row summed (fewer at an episode's end), [B]
    (batch["obs"] and batch["actions"] are s and a: the loss needs them, the target does not)
    q_online(obs), q_target(obs): the Q-values of every action, [B, num_actions]
    \"\"\"
    # TODO: about 4 lines (torch: .argmax(dim=1), .gather(1, index[:, None]).squeeze(1), torch.no_grad()),
    # then delete the raise.
    raise NotImplementedError("TODO: the n-step double-DQN target")


my_dqn_target = check_dqn_target(my_dqn_target)  # yours if right, rlcourse's while not attempted
"""),
    md("""
The same target inside the real learner: a batch from the replay buffer of section 2's DQN, its
Q-networks as they are after 15 seconds of training, and `DQNLearner.compute_loss`, which returns
each row's TD error $Q(s, a) - y$. The buffer's rows do not record truncations, and need not: a
truncated row bootstraps like any other.
"""),
    code("""
learner = dqn.learner_group.local_learner
replay = dqn.replay_buffer.sample(256, n_step=dqn_config.n_step, gamma=dqn_config.gamma)
batch = {key: torch.as_tensor(replay[key])
         for key in ("obs", "actions", "rewards", "new_obs", "terminateds", "n_step", "weights")}
module = learner.module
y_yours = my_dqn_target({**batch, "truncateds": torch.zeros_like(batch["terminateds"])},
                        module.compute_q_values, module.compute_target_q_values, dqn_config.gamma)
loss, metrics = learner.compute_loss(batch)
with torch.no_grad():
    q_taken = module.compute_q_values(batch["obs"]).gather(1, batch["actions"][:, None]).squeeze(1)
y_learner = q_taken - metrics["td_error"]
print(f"256 replayed rows, {int(batch['terminateds'].sum())} of them terminated; rows with n = 1, 2, 3: "
      f"{np.bincount(replay['n_step'], minlength=4)[1:].tolist()}; loss {float(loss.detach()):.4f}")
print("largest |your y - the learner's y|:", float((y_yours - y_learner).abs().max()))
dqn.stop()
"""),
    md(r"""
## 5. SAC: off-policy with continuous actions and an entropy temperature

DQN needs a finite set of actions to take a max over. **SAC** (soft actor-critic, Haarnoja et al.,
2018) learns from the same kind of replay buffer with **continuous** actions: a policy network
outputs a Gaussian (squashed by tanh into the action bounds), twin Q-networks value its actions,
and the objective adds the policy's entropy to the return, weighted by a **temperature** $\alpha$
(SAC's $\alpha$; section 3's prioritized-replay exponent is written $\alpha_{\text{PER}}$):

$$\max_\pi\ \mathbb{E}\Big[\sum_t \gamma^t \big(r_t + \alpha\, \mathcal{H}(\pi(\cdot \mid s_t))\big)\Big]$$

A large $\alpha$ rewards acting randomly (exploring), a small one acting well. SAC *learns*
$\alpha$: a loss pushes the policy's entropy toward a target (minus the number of action
dimensions, by default), so $\alpha$ falls while the policy is more random than that, and rises if
it becomes too sure too soon. Pendulum-v1 has one continuous action, the torque, and returns from
about -1,500 (random) to about -150 (swung up and held). A short run, on this machine:
"""),
    code("""
from rlcourse.algorithms.sac import SACConfig

sac = SACConfig().environment("Pendulum-v1").debugging(seed=0).build_algo()
sac_rows, line, start = [], display("SAC: building...", display_id=True), time.perf_counter()
while time.perf_counter() - start < 15:
    result = sac.train()
    learner_stats = result["learners"]["default_policy"]
    sac_rows.append((result["num_env_steps_sampled_lifetime"],
                     result["env_runners"]["episode_return_mean"], learner_stats["alpha_value"]))
    line.update(f"SAC: {time.perf_counter() - start:4.1f} s | {sac_rows[-1][0]:6,d} env steps | "
                f"return {sac_rows[-1][1]:8.1f} | alpha {sac_rows[-1][2]:.3f}")
sac.stop()
sac_rows = np.array(sac_rows)
replay_diagrams.sac_temperature(*sac_rows.T)
print(f"alpha went from {sac_rows[0, 2]:.3f} to {sac_rows[-1, 2]:.3f} in {sac_rows[-1, 0]:,.0f} env steps; "
      f"losses of the last iteration: " + ", ".join(f"{key} {learner_stats[key]:.3f}"
                                                     for key in ("qf_loss", "policy_loss", "alpha_loss")))
returns = sac_rows[np.isfinite(sac_rows[:, 1]), 1]
print(f"return (mean of the last 5 episodes): first {returns[0]:.0f}, lowest {returns.min():.0f}, "
      f"last {returns[-1]:.0f}")
"""),
    md("""
Fifteen seconds is the start of learning, not the end: read the curve of $\\alpha$, which falls
from its start at 1.0 while the policy's entropy is above the target (each update moves
$\\log \\alpha$ by about `alpha_lr`, Adam's step). The return often gets **worse** before it gets
better, as the last printed line shows for this run. The first episodes are played by the
untrained policy, whose pushes are random and mostly cancel out. Then the policy learns from
critics that have seen only a few hundred steps: it commits to pushing hard, the pendulum spins,
and Pendulum's cost grows with the angle, the speed and the torque. Only once the twin
Q-networks have learned what swinging up is worth does the return climb. With 5 episodes in each
mean (see below), every point is also noisy. The full run was measured elsewhere, not in this
lesson: `SACConfig`'s defaults are RLlib's tuned Pendulum example's (with a smaller network and
3-step returns), and its docstring records seeds 0-4 reaching RLlib's pass mark, a return of -250,
at 3,600-4,000 env steps; `benchmarks/sac_pendulum.py` measures env steps and wall time to -250 per
seed. One difference from the rest of the course: SAC's `episode_return_mean` averages its last 5
episodes, not 100 (`SACConfig` sets `metrics_num_episodes_for_smoothing=5`, as RLlib's tuned
Pendulum example does: a Pendulum episode is 200 steps, so 100 of them would span the whole run).

## 6. Ape-X: many runners, a replay shard, one learner

In DQN's `training_step` the runners and the learner take turns: sample, store, replay, update,
sync. Off-policy learning does not need that: the learner can train on whatever is in the buffer
while runners keep adding to it. **Ape-X** (Horgan et al., 2018) does exactly that. Runners sample
all the time, each with an epsilon of its own (from much exploration on runner 1 to almost greedy
on the last), and send their episodes straight to **replay shards**, actors that each hold a part
of the buffer. The learner draws batches from the shards, sends the new priorities back and, every
so often, the weights to the runners. Every request stays in flight and one `ray.wait` says what
is done: nobody waits.
"""),
    code("""
replay_diagrams.apex(num_runners=2, num_shards=1)
"""),
    md("""
Two runners and one shard, for 15 seconds (Ray starts first: the runners and the shard are actors).
The baseline is section 2's DQN: one runner in this process, taking turns with its learner. Parallel
runners need cores to run on: with one core (Binder's), two runners and a learner take turns on it,
and Ape-X cannot sample faster than DQN's single loop; the bars below say what this machine did.
"""),
    code("""
from rlcourse.algorithms.apex_dqn import ApexDQNConfig
from rlcourse.utils.resources import init_ray

init_ray(num_cpus=2)
apex_config = (ApexDQNConfig().environment("CartPole-v1").debugging(seed=0)
               .env_runners(num_env_runners=2, num_cpus_per_env_runner=0.5))
apex, apex_curve, apex_result = race(apex_config, budget_s=15)
apex.stop()
rates["Ape-X"] = apex_curve[-1, 1] / apex_curve[-1, 0]
trained = {name: result["learners"]["__all_modules__"]["num_env_steps_trained_lifetime"]
           for name, result in (("DQN", dqn_result), ("Ape-X", apex_result))}
print(f"runners' epsilons: {np.round(apex_result['env_runners']['epsilons'], 4).tolist()}")
for name, rows in (("DQN", dqn_curve), ("Ape-X", apex_curve)):
    print(f"{name:5s}: {rows[-1, 1]:7,.0f} env steps sampled, {trained[name]:7,d} replayed rows trained "
          f"on, in {rows[-1, 0]:4.1f} s; return {rows[-1, 2]:5.1f}")
print(f"on {cores:g} usable CPUs, Ape-X sampled {rates['Ape-X'] / rates['DQN']:.1f}x the env steps per "
      "second of DQN's single runner")
replay_diagrams.throughput({"DQN, 1 local runner\\n(section 2)": rates["DQN"],
                            "Ape-X, 2 runners\\n+ 1 replay shard": rates["Ape-X"]})
ray.shutdown()
"""),
    md("""
The bars are what this machine measured, with the same definition for both: env steps sampled
over the seconds of the run, learning included. Ape-X's runners do not wait for the learner, so its
throughput grows with runners until the machine's cores are busy. Sampling more is not learning
more: compare the replayed rows each learner trained on (printed above). Ape-X's learner shares
the cores with runners that never pause, and on a machine with fewer cores than runners + 1 it gets
little CPU, while DQN's loop stops sampling whenever it learns. Ape-X caps its replay ratio at
`training_intensity` but does not hold the runners back unless told to
(`throttle_sampling_to_training_intensity=True`). Ape-X's return is low for the same reason, and
one more: the runner with the smallest epsilon plays the barely trained network almost greedily,
and its short episodes weigh in the mean. Its design pays off when env steps are what
limits you and cores are many (the paper ran 360 actors); `benchmarks/apex_throughput.py` measures
env steps/s and updates/s of DQN against Ape-X with 1 and 2 runners.

## Summary

- The Bellman optimality equation says $Q^*(s, a)$ is the reward plus the discounted best value of
  the next state; tabular Q-learning moves one entry at a time toward a sample of it, acting
  epsilon-greedily, and here found the grid's best action in every cell. A network in place of
  the table needs a target network (the target would move) and replay (consecutive steps are alike).
- On-policy methods (PPO) learn from the current policy's steps once; off-policy methods (DQN, SAC)
  keep a replay buffer and learn from every step many times: fewer env steps, more compute each.
- A sum-tree samples slot $i$ with probability $p_i$/total in log time; importance weights
  $(N P(i))^{-\\beta}$ undo the bias of prioritized sampling. n-step rows shorten at an episode's
  end; only terminations stop the bootstrap.
- DQN's target $y = G_t^{(n)} + \\gamma^n (1 - \\text{terminated}) Q_{\\text{target}}(s', a^*)$; double Q
  picks $a^*$ with the online network and values it with the target network, because a max over
  noisy estimates is biased upward.
- SAC learns continuous actions off-policy, with an entropy bonus whose temperature $\\alpha$ it
  learns.
- Ape-X decouples sampling and learning: runners, replay shards and a learner, all asynchronous.

**Read next in the source**
- `rlcourse/course/tabular.py`: Q-learning, epsilon-greedy and value iteration, one page.
- `rlcourse/algorithms/dqn/dqn.py`, `DQN.training_step`: sample, store, replay
  (`training_intensity`), priorities, sync; `rlcourse/algorithms/dqn/dqn_learner.py`,
  `compute_loss`: the target of the exercise, the Huber loss, the importance weights.
- `rlcourse/utils/replay_buffers/prioritized_episode_replay_buffer.py` (`SumTree`, the walk of
  section 3; priorities, weights) and
  `rlcourse/utils/replay_buffers/episode_replay_buffer.py`, `_n_step_transitions` (n-step rows).
- `rlcourse/algorithms/sac/sac_learner.py`: the twin critics, the policy loss and the loss of
  $\\alpha$.
- `rlcourse/algorithms/apex_dqn/apex_dqn.py` (the asynchronous `training_step`) and
  `rlcourse/algorithms/apex_dqn/replay_actor.py` (a replay shard); `benchmarks/dqn_cartpole.py`.
"""),
    md("""
## Papers

- Watkins, Dayan, *Q-learning*, Machine Learning 8, 1992
  ([doi:10.1007/BF00992698](https://doi.org/10.1007/BF00992698)): tabular Q-learning, section 1.
- Sutton, Barto, *Reinforcement Learning: An Introduction*, 2nd edition, MIT Press, 2018
  ([the book's site](http://incompleteideas.net/book/the-book-2nd.html)): the Bellman equations,
  epsilon-greedy, n-step returns.
- Mnih et al., *Human-level control through deep reinforcement learning*, Nature 518, 2015
  ([doi:10.1038/nature14236](https://doi.org/10.1038/nature14236)): DQN, its replay buffer and
  target network.
- van Hasselt, Guez, Silver, *Deep Reinforcement Learning with Double Q-learning*, AAAI 2016
  ([arXiv:1509.06461](https://arxiv.org/abs/1509.06461)): double Q, section 4.
- Schaul, Quan, Antonoglou, Silver, *Prioritized Experience Replay*, ICLR 2016
  ([arXiv:1511.05952](https://arxiv.org/abs/1511.05952)): priorities and importance weights, section 3.
- Wang, Schaul, Hessel, van Hasselt, Lanctot, de Freitas, *Dueling Network Architectures for Deep
  Reinforcement Learning*, ICML 2016 ([arXiv:1511.06581](https://arxiv.org/abs/1511.06581)):
  dueling heads, section 4.
- Haarnoja, Zhou, Abbeel, Levine, *Soft Actor-Critic: Off-Policy Maximum Entropy Deep Reinforcement
  Learning with a Stochastic Actor*, ICML 2018 ([arXiv:1801.01290](https://arxiv.org/abs/1801.01290)),
  and Haarnoja et al., *Soft Actor-Critic Algorithms and Applications*, 2018
  ([arXiv:1812.05905](https://arxiv.org/abs/1812.05905)): SAC and its learned temperature, section 5.
- Horgan, Quan, Budden, Barth-Maron, Hessel, van Hasselt, Silver, *Distributed Prioritized
  Experience Replay*, ICLR 2018 ([arXiv:1803.00933](https://arxiv.org/abs/1803.00933)): Ape-X,
  section 6.

All the course's papers, and the lessons that use them: [docs/key_papers.md](../docs/key_papers.md).
"""),
    concept_checks_cell("09"),
    code("""
# Lesson check: the Q-table's greedy policy is optimal; both algorithms trained; the sum-tree sampled in proportion to priority
# and the weights undid it; n-step rows stopped only at the termination; double Q removed the max's
# bias and your target is the learner's; SAC's alpha fell; Ape-X trained. (Env steps per second
# depend on the machine and how busy it is: the printed rates say what this one did.)
assert greedy_optimal.all() and value_gap < 0.05, (greedy_optimal, value_gap)
assert dqn_result["replay_buffer"]["num_env_steps_stored"] > 0 and np.isfinite(ppo_curve[:, 2]).any()
assert np.allclose(frequency, probability, atol=0.015), (frequency, probability)
assert np.allclose(weights[1.0] * probability, (weights[1.0] * probability)[0]) and weights[0.0].min() == 1.0
assert row_sets["terminated"] == {(0, 3, False), (1, 3, False), (2, 3, True), (3, 2, True), (4, 1, True)}
assert row_sets["truncated"] == {(0, 3, False), (1, 3, False), (2, 2, False), (3, 1, False)} and sums_right
assert single[1] > 0.9 and np.all(np.diff(single) > 0) and np.abs(double).max() < 0.05, (single, double)
assert torch.allclose(y_yours, y_learner, atol=1e-5)
assert sac_rows[-1, 2] < sac_rows[0, 2] - 0.05 and np.isfinite(sac_rows[:, 2]).all(), sac_rows[[0, -1]]
assert trained["Ape-X"] > 0 and all(rate > 0 for rate in rates.values()), (cores, rates, trained)
assert not ray.is_initialized()
print("Lesson 09 complete.")
"""),
]

if __name__ == "__main__":
    print(write_lesson(NAME, CELLS))
