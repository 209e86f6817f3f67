"""Writes lessons/13_offline_rl.ipynb (outputs stripped): python tools/make_lesson_13.py"""

from lesson_cells import code, concept_checks_cell, md, write_lesson

NAME = "13_offline_rl.ipynb"

CELLS = [
    md(r"""
# Lesson 13 — Offline RL: learning from recorded data with Ray Data

**By the end of this lesson you can**
1. say why offline RL exists (logs of a system you may not explore) and how it differs from
   on-policy and off-policy learning;
2. record what runners sample as Parquet with `config.offline_data(output=...)`, in RLlib's
   columns, and read the files with pyarrow and pandas;
3. train **BC** (behavior cloning) from an expert's recorded steps and evaluate it in the real env;
4. explain why **MARWIL** (advantage-weighted imitation) beats BC on data of mixed quality, and
   show it with numbers from a run;
5. judge a policy from the data alone with **weighted importance sampling**, beside its true
   return, and write that estimate yourself (the exercise).

**Time:** about 35 minutes of study (one exercise); the cells ran in one to two minutes on 2 cores
shared with other work (measured there).
Terms: see the [glossary](../docs/glossary.md).

The papers behind it are listed at the end.
"""),
    md(r"""
## 1. Why offline RL

Lessons 01-12 learn by acting: a runner tries actions and sees what happens. Many real systems do
not allow that: a recommender, a power plant or a treatment policy cannot try random actions to see
what they do. What they have are **logs**: the states, actions and rewards of whatever policy ran
them, the **behaviour policy** $\mu$. Offline RL learns a policy $\pi$ from such logs alone.

| | who sampled the data | may the learner act? | examples |
|---|---|---|---|
| on-policy | the current $\pi$ | yes, for every batch | PPO (lesson 02), IMPALA (05) |
| off-policy | older or exploring versions of $\pi$ | yes, data keeps coming | DQN, SAC (09) |
| **offline** | some $\mu$, once, before learning | **no**: the data is all there is | BC, MARWIL (this lesson), CQL |

Without acting, a learner cannot find out what an action the logs never show would have done: it
can only reweigh what $\mu$ did. The evaluation runs below use the real env to *check* the
result, as RLlib's offline algorithms do; they never feed the learner.
"""),
    code("""
import shutil
import tempfile
from pathlib import Path

import gymnasium as gym
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import ray
import torch
from IPython.display import display

import rlcourse
from rlcourse import BCConfig, MARWILConfig, PPOConfig
from rlcourse.offline.estimators import weighted_importance_sampling
from rlcourse.offline.offline_data import table_to_numpy
from rlcourse.offline.offline_data_checks import OfflineDataError, check_schema

ray.shutdown()  # a re-run starts from a clean slate
torch.set_num_threads(1)  # small networks: one torch thread is fastest (Binder has one CPU)
DATA = Path(tempfile.mkdtemp(prefix="rlcourse-offline-"))  # a fresh folder per run
# The course's tuned PPO expert (tuned_examples/ppo/cartpole_ppo.py), 5,000 of its steps recorded
# with config.offline_data(output=...) by tests/fixtures/record_cartpole_expert.py.
EXPERT = Path(rlcourse.__file__).resolve().parents[1] / "tests" / "fixtures" / "cartpole_ppo_expert"
"""),
    md("""
## 2. Recording experience

`config.offline_data(output=PATH)` makes every runner write what it samples as Parquet files, one
row per env step, in the columns RLlib 2.60 writes (`rlcourse/offline/offline_env_runner.py`,
`rlcourse/offline/columns.py`). Here the behaviour policy is an untrained PPO policy: its last layer
starts near zero, so it picks either action with probability close to 1/2. A poor policy, as the
logs of a real system often are. One runner in this process samples 10,000 steps; stopping the
algorithm writes the rows still buffered.
"""),
    code("""
recorder = (PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
            .offline_data(output=str(DATA / "random"), output_write_remaining_data=True)
            .debugging(seed=0))
with recorder.build_algo() as algo:
    algo.env_runner_group.sample(num_timesteps=10_000)
random_files = sorted((DATA / "random").rglob("*.parquet"))
for path in random_files:
    print(path.relative_to(DATA), f"{pq.read_metadata(path).num_rows:,} rows")
table = pq.read_table(random_files)
print(table.schema)
display(table.slice(0, 4).to_pandas())
"""),
    md(r"""
Each row is one step: `obs` $s_t$, `actions` $a_t$, `rewards` $r_t$, `new_obs` $s_{t+1}$, whether
the episode ended there (`terminateds`, `truncateds`), the episode's id `eps_id`, and what the
policy computed when it acted: `action_logp`, $\log \mu(a_t \mid s_t)$ (`agent_id` and
`module_id` are empty for a single agent, as in RLlib's files). Observations are tensor columns
(Ray Data's type), numbers a reader can check, not pickled objects. The episodes this policy played:
"""),
    code("""
random_rows = table_to_numpy(table)
ends = np.flatnonzero(random_rows["eps_id"][1:] != random_rows["eps_id"][:-1]) + 1
random_returns = [r.sum() for r in np.split(random_rows["rewards"], ends)]
print(f"{len(random_returns)} episodes, return {np.mean(random_returns):.1f} on average "
      f"(CartPole pays 1 per step, up to 500); mean probability of the action taken: "
      f"{np.exp(random_rows['action_logp']).mean():.3f}")
expert_table = pq.read_table(sorted(EXPERT.rglob("*.parquet")))
expert_rows = table_to_numpy(expert_table)
expert_ends = np.flatnonzero(expert_rows["eps_id"][1:] != expert_rows["eps_id"][:-1]) + 1
print(f"the expert's recording: {expert_table.num_rows:,} rows, episode returns "
      f"{[int(r.sum()) for r in np.split(expert_rows['rewards'], expert_ends)]}")
"""),
    md(r"""
## 3. BC: copy the expert

**Behavior cloning** (BC; Pomerleau 1991) is supervised learning of the recorded actions: it
minimizes $-\frac{1}{B}\sum_i \log \pi_\theta(a_i \mid s_i)$ over batches of recorded rows. It needs
no rewards at all, and it copies whatever $\mu$ did, good or bad. On the expert's 5,000 steps:
`offline_data(input_=...)` names the files; Ray Data reads them and an `OfflinePreLearner` turns
each batch of rows into the learner's batch (`rlcourse/offline/offline_data.py`); every iteration
takes `dataset_num_iters_per_learner` steps of 250 rows, then evaluates the greedy policy for 10
episodes in the real env.
"""),
    code("""
def offline_config(config_class, data, batch=250, steps=10, **training):
    \"\"\"An offline algorithm's config on the recorded `data`: `steps` steps of `batch` rows per
    iteration (None: one pass over the data).\"\"\"
    return (config_class().environment("CartPole-v1").env_runners(num_env_runners=0)
            .offline_data(input_=[str(p) for p in data], dataset_num_iters_per_learner=steps)
            .training(lr=3e-3, train_batch_size_per_learner=batch, **training)
            .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"})
            .evaluation(evaluation_interval=1, evaluation_duration=10)
            .debugging(seed=0))


def evaluation_returns(config, iterations, stop_at=None):
    \"\"\"Train `iterations` times (or until the evaluation return reaches `stop_at`).\"\"\"
    returns = []
    with config.build_algo() as algo:
        for _ in range(iterations):
            returns.append(algo.train()["evaluation"]["env_runners"]["episode_return_mean"])
            if stop_at is not None and returns[-1] >= stop_at:
                break
    return returns


expert_files = sorted(EXPERT.rglob("*.parquet"))
bc_expert = evaluation_returns(offline_config(BCConfig, expert_files), 10, stop_at=450)
print("BC on the expert's steps, evaluation return per iteration:", np.round(bc_expert, 1))
"""),
    md(r"""
BC comes close to the expert from 5,000 rows, and never touched the env to learn. (RLlib's own BC
example on CartPole asks for a return of 120.) Now the harder case: the logs of a real system are
rarely all expert. Mix the expert's 5,000 steps with the 10,000 near-random ones; each iteration
below is one pass over all 15,000 rows (`dataset_num_iters_per_learner=None`), in 15 steps of
1,000, so both algorithms see every row equally often.

## 4. MARWIL: weigh each action by its advantage

BC on the mix copies both policies: in the states where the two disagree it learns a blend, and
the coin-flipping dominates. **MARWIL** (Wang et al. 2018) weighs each recorded action by how much
better than usual it turned out:

$$L(\theta) = -\frac{1}{B}\sum_i \exp\!\Big(\beta \frac{A_i}{c}\Big) \log \pi_\theta(a_i \mid s_i)
\;+\; \text{vf\_coeff} \cdot \frac{1}{2B} \sum_i A_i^2,
\qquad A_i = R_i - V(s_i)$$

$R_i$ is the discounted return from row $i$ to the end of its episode in the batch (bootstrapped
from $V$ where the batch cuts an episode), $V$ a value network learned by the second term, and
$c^2$ a moving average of $A^2$ (RLlib's `moving_average_sqd_adv_norm_start=100`, moving at rate
`1e-8`). $\beta = 0$ makes every weight 1: the loss is BC's, and `BCConfig` is `MARWILConfig` with
`beta=0`, as in RLlib (`rlcourse/algorithms/marwil/marwil_learner.py`, `compute_loss`).
"""),
    code("""
mixed = random_files + expert_files  # 15,000 rows; an iteration is one pass, 15 steps of 1,000
runs = {"BC (beta=0)": evaluation_returns(
            offline_config(BCConfig, mixed, batch=1000, steps=None), 4),
        "MARWIL (beta=1)": evaluation_returns(
            offline_config(MARWILConfig, mixed, batch=1000, steps=None, beta=1.0), 4)}
runs_table = pd.DataFrame(runs, index=pd.RangeIndex(1, 5, name="iteration"))
display(runs_table.round(1))
fig, ax = plt.subplots(figsize=(6, 3))
for name, returns in {"BC on the expert only": bc_expert, **runs}.items():
    ax.plot(range(1, len(returns) + 1), returns, marker="o", label=name)
ax.set(xlabel="iteration", ylabel="evaluation return", ylim=(0, 520))
ax.legend(); plt.show()
"""),
    md(r"""
On the same rows and the same number of steps, MARWIL's weights pick the better actions out of
the noise, wherever they come from (a random action that happened to work counts too: the weights
are one step of policy improvement over $\mu$); BC's policy is mostly coin, as its data is.
MARWIL can only *reweigh* what is in the data: it would not find a better action that no recorded
episode took. That limit is what conservative methods such as CQL (Kumar et al. 2020) work
around, for actions the data never shows.

## 5. Judging a policy without running it: importance sampling

Before deploying a policy $\pi$ on a system you cannot explore, you want its return, and you only
have $\mu$'s logs. **Importance sampling** reweighs each recorded episode by how much likelier
$\pi$ makes it than $\mu$ did. Per decision, over $N$ recorded episodes (the data's
`action_logp` is $\log \mu(a_t \mid s_t)$):

$$p_t = \prod_{t' \le t} \frac{\pi(a_{t'} \mid s_{t'})}{\mu(a_{t'} \mid s_{t'})}, \qquad
w_t = \frac{1}{N}\sum_{\text{episodes}} p_t, \qquad
\hat V(\pi) = \frac{1}{N}\sum_{\text{episodes}} \sum_t \gamma^t \frac{p_t}{w_t} r_t$$

Dividing by $w_t$ (the **weighted** estimator; Precup et al. 2000) trades a little bias for far
less variance. An episode that ended keeps its last $p_t$ and earns 0, so $w_t$ counts it: that is
how the estimate learns that $\pi$'s episodes last longer. (RLlib's estimator averages $p_t$ over
the episodes still running at $t$ only; on CartPole, which pays 1 per step, that estimates every
policy at $\mu$'s return: `rlcourse/offline/estimators/weighted_importance_sampling.py` says more.)

## Exercise: the weighted importance-sampling estimate

Write `my_wis(rewards, behavior_logp, target_logp, gamma)`: each argument but `gamma` is a list
with one array per episode ($r_t$, $\log \mu(a_t \mid s_t)$, $\log \pi(a_t \mid s_t)$); return
$\hat V(\pi)$. The checker compares it with rlcourse's on episodes of its own and names the usual
mistakes. Stuck? `show_solution("weighted_importance_sampling")`.
"""),
    code("""
from rlcourse.course.exercises import check_wis, show_solution  # noqa: F401 (when stuck)


def my_wis(rewards, behavior_logp, target_logp, gamma):
    \"\"\"The weighted per-decision importance-sampling estimate of pi's return.\"\"\"
    # TODO: p_t = exp(cumsum(target_logp - behavior_logp)) per episode, kept at its last value after
    # the episode ends; w_t = mean of p_t over all episodes; return the mean over episodes of
    # sum_t gamma**t * p_t / w_t * r_t.
    raise NotImplementedError("TODO: write the weighted importance-sampling estimate")


wis = check_wis(my_wis)
"""),
    md(r"""
Now judge some policies from the near-random recording. The target policies push the cart the way
the pole is falling with probability `tilt` (`tilt=0.5` is a coin, like $\mu$); each one is also
run for 100 episodes in the real env for its true discounted return ($\gamma = 0.99$). The last
row judges $\mu$ itself, from its own `action_logp`: every ratio is 1, so the estimate is exactly
the recorded mean.
"""),
    code("""
GAMMA = 0.99
per_episode = lambda values: np.split(values, ends)  # noqa: E731 (the recording's episodes)


def p_right(obs, tilt):
    \"\"\"Probability of pushing right: `tilt` when the pole falls right, else 1 - tilt.\"\"\"
    falling_right = obs[..., 2] + 0.5 * obs[..., 3] > 0  # the pole's angle and angular velocity
    return np.where(falling_right, tilt, 1.0 - tilt)


def true_return(tilt, episodes=100, seed=1000):
    \"\"\"The policy's mean discounted return and episode length, by running it in CartPole.\"\"\"
    env, rng, returns, lengths = gym.make("CartPole-v1"), np.random.default_rng(seed), [], []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        total, discount, done, length = 0.0, 1.0, False, 0
        while not done:
            obs, reward, terminated, truncated, _ = env.step(int(rng.random() < p_right(obs, tilt)))
            total, discount, length = total + discount * reward, discount * GAMMA, length + 1
            done = terminated or truncated
        returns.append(total)
        lengths.append(length)
    return float(np.mean(returns)), float(np.mean(lengths))


rewards, behavior = per_episode(random_rows["rewards"]), per_episode(random_rows["action_logp"])
estimates = []
for tilt in (0.5, 0.6, 0.7):
    prob_right = p_right(random_rows["obs"], tilt)
    target = np.log(np.where(random_rows["actions"] == 1, prob_right, 1.0 - prob_right))
    run_return, run_length = true_return(tilt)
    estimate = wis(rewards, behavior, per_episode(target), GAMMA)
    recorded = weighted_importance_sampling(random_rows, target, GAMMA)["v_behavior"]
    estimates.append({"policy": f"tilt={tilt}", "episode length": run_length,
                      "true return (run)": run_return, "WIS estimate (data only)": estimate,
                      "recorded mean": recorded})
itself = weighted_importance_sampling(random_rows, random_rows["action_logp"], GAMMA)
estimates.append({"policy": "mu itself (recorded)", "episode length": np.mean(
    [len(r) for r in rewards]), "true return (run)": np.nan,
                  "WIS estimate (data only)": itself["v_target"],
                  "recorded mean": itself["v_behavior"]})
wis_table = pd.DataFrame(estimates).set_index("policy")
display(wis_table.round(1))
"""),
    md(r"""
Close to $\mu$ the estimate tracks the true return; the further $\pi$ moves from $\mu$, the more
it falls short. Compare the episode lengths: a policy whose episodes last several times longer
than $\mu$'s is judged from data in which few episodes get that far; the few recorded episodes
that happen to look like $\pi$'s carry almost all the weight, and steps no recorded episode
reaches count as nothing. Importance sampling can only see
what the data covers; check how far $\pi$ is from $\mu$ before trusting it.

## 6. Files RLlib reads, and what they never hold

RLlib 2.60 reads these files as they are: `tests/test_offline_rllib.py` trains RLlib's own BC on
the expert's recording (RLlib is imported only in lesson 15, as it takes seconds and memory). RLlib
*writes* by default something else: observation columns pickled and LZ4-compressed
(`output_compress_columns=["obs", "new_obs"]`), and whole episodes packed into one column
(`output_write_episodes=True`). Unpickling data can run any code, so rlcourse refuses such a
column, naming the RLlib settings that write plain ones, and never loads it:
"""),
    code("""
binary = [field.name for field in table.schema
          if pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type)]
print("columns holding bytes (pickles) in our recording:", binary)
pickled = pa.schema([("obs", pa.binary()), ("actions", pa.int64())])  # as RLlib's default writes
try:
    check_schema(pickled, ("obs", "actions"), "an RLlib recording with its defaults")
except OfflineDataError as error:
    print("refused:", error)
shutil.rmtree(DATA)
ray.shutdown()  # the offline algorithms started a small local Ray for Ray Data
"""),
    md("""
## Summary

- Offline RL learns from a fixed log of some behaviour policy $\\mu$, without acting; the env is
  used only to check the result.
- `config.offline_data(output=...)` records one row per step in RLlib's Parquet columns, plain
  numbers that RLlib reads too; `offline_data(input_=...)` streams them through Ray Data into the
  learner.
- BC copies the data's actions: excellent from an expert, a blend of everyone from mixed logs.
  MARWIL weighs each action by $\\exp(\\beta A / c)$ and picks the good actions out of mixed data;
  $\\beta = 0$ is BC.
- Weighted importance sampling judges a policy from the logs; it is trustworthy only near $\\mu$.

**Concept checks**: the questions at the end of this lesson, each choice with its explanation.

**Read next in the source**
- `rlcourse/algorithms/marwil/marwil_learner.py`: `value_targets`, `compute_loss`, the weights.
- `rlcourse/algorithms/marwil/marwil.py`: the offline `training_step`, and `bc/bc.py`, BC as beta=0.
- `rlcourse/offline/offline_data.py` and `rlcourse/offline/offline_prelearner.py`: rows to batches.
- `rlcourse/offline/estimators/weighted_importance_sampling.py`: the estimator.
"""),
    md("""
## Papers

- Pomerleau, *Efficient Training of Artificial Neural Networks for Autonomous Navigation*, Neural
  Computation 3, 1991 ([doi:10.1162/neco.1991.3.1.88](https://doi.org/10.1162/neco.1991.3.1.88)):
  behavior cloning, a network trained on a driver's recorded actions.
- Wang, Xiong, Zhang, Li, Zhang, Zhang, *Exponentially Weighted Imitation Learning for Batched
  Historical Data*, NeurIPS 2018
  ([proceedings](https://papers.nips.cc/paper/7866-exponentially-weighted-imitation-learning-for-batched-historical-data)):
  MARWIL, imitation weighted by exp(beta * advantage).
- Precup, Sutton, Singh, *Eligibility Traces for Off-Policy Policy Evaluation*, ICML 2000
  ([pdf](https://scholarworks.umass.edu/cs_faculty_pubs/80/)): per-decision importance sampling,
  plain and weighted.
- Levine, Kumar, Tucker, Fu, *Offline Reinforcement Learning: Tutorial, Review, and Perspectives
  on Open Problems*, 2020 ([arXiv:2005.01643](https://arxiv.org/abs/2005.01643)): why learning
  without acting is hard, and the methods (CQL among them) that address it.
- Kumar, Zhou, Tucker, Levine, *Conservative Q-Learning for Offline Reinforcement Learning*,
  NeurIPS 2020 ([arXiv:2006.04779](https://arxiv.org/abs/2006.04779)): CQL.

All the course's papers, and the lessons that use them: [docs/key_papers.md](../docs/key_papers.md).
"""),
    concept_checks_cell("13"),
    code("""
# Lesson check: BC copied the expert, MARWIL beat BC on the mixed data, the estimate of mu is its
# recorded return and a nearby policy's estimate is near its true return, the recording holds no
# pickled column, the exercise's answer is in, and nothing is left running.
assert max(bc_expert) >= 400, bc_expert
assert runs_table["MARWIL (beta=1)"].mean() > 1.5 * runs_table["BC (beta=0)"].mean(), runs_table
assert np.isclose(itself["v_target"], np.mean([np.sum(GAMMA ** np.arange(len(r)) * r)
                                               for r in rewards]))
near = wis_table.loc["tilt=0.6"]
assert abs(near["WIS estimate (data only)"] / near["true return (run)"] - 1) < 0.25, wis_table
assert not binary and not DATA.exists()
assert not ray.is_initialized()
print("Lesson 13 complete: BC learned from an expert's logs, MARWIL from mixed ones, and a policy "
      "was judged from data alone.")
"""),
]

if __name__ == "__main__":
    write_lesson(NAME, CELLS)
