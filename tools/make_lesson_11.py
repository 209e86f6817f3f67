"""Writes lessons/11_diagnosing_a_run.ipynb (outputs stripped): python tools/make_lesson_11.py"""

from lesson_cells import code, concept_checks_cell, md, write_lesson

NAME = "11_diagnosing_a_run.ipynb"

CELLS = [
    md(r"""
# Lesson 11 — Diagnosing a run: what PPO's metrics say, and runs broken on purpose

**By the end of this lesson you can**
1. say what each metric of a PPO result reports, under RLlib's names: **entropy**, the **KL**
   of an update (`mean_kl_loss`) and its coefficient (`curr_kl_coeff`), the policy and value
   losses, **`vf_explained_var`**, the gradient norm, the episode length, and the smoothed
   training return (with its lag) against the evaluation return;
2. recognize six common bugs from those metrics, each shown in a run broken on purpose beside a
   healthy one, and see the metric recover when the bug is fixed: a learning rate too high, a
   clipped value loss, no bootstrap at a time limit, unnormalized observations, a reward scale
   that swamps the value loss, and too few env steps per update;
3. read a run from its results folder: Ray Tune's `progress.csv` and `result.json` as a dataframe,
   and the TensorBoard event files without TensorBoard;
4. name the bugs of three runs from their metrics alone (the exercise).

**Time:** about 40 minutes of study (one exercise); the cells ran in 30 to 100 seconds
on 2 cores shared with other work (measured there; each run is 15,000 env steps, so the results do not
depend on the machine's speed, only the time does).
Terms: see the [glossary](../docs/glossary.md).

The papers behind it are listed at the end.
"""),
    code("""
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import ray
import torch
from IPython.display import display

from rlcourse import PPOConfig
from rlcourse.course import diagnosing
from rlcourse.course.diagnosing import (BUGS, METRICS, START_VALUE, TIME_LIMIT, break_config,
                                        column, compare, late, normalize_observations, record,
                                        summary)
from rlcourse.course.diagnosing_envs import broken_cartpole
from rlcourse.course.event_files import find_event_files, read_scalars

ray.shutdown()  # a re-run starts from a clean slate
torch.set_num_threads(1)  # small networks: one torch thread is fastest (Binder has one CPU)
pd.set_option("display.precision", 3)
ENV_STEPS = 15_000  # every run's budget: runs are compared at the same env steps, never seconds
"""),
    md("""
## 1. What a PPO result reports

A healthy run first: PPO on CartPole with the settings of `tuned_examples/ppo/cartpole_ppo.py`,
written out, with one runner in this process (`num_env_runners=0`). They differ from the tuned
example's in one setting: `use_kl_loss=True` with `kl_coeff=0.0` *measures* the KL of every
update (RLlib reports 0 when the KL loss is off) while its penalty, weighted by 0, changes
nothing. Every second iteration, `evaluation` plays 5 episodes with the greedy policy.

`record(config, env_steps)` (`rlcourse/course/diagnosing.py`) trains until the budget and keeps
each iteration's result flattened as Ray Tune flattens it, `learners/default_policy/entropy`: the
columns of the `progress.csv` that section 3 reads from disk.
"""),
    code("""
healthy_config = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
    .training(lr=3e-3, train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=6,
              gamma=0.99, lambda_=0.95, clip_param=0.2, vf_clip_param=1000.0, vf_loss_coeff=0.5,
              use_kl_loss=True, kl_coeff=0.0, grad_clip=0.5)
    .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh",
                             "vf_share_layers": False})
    .debugging(seed=0))

healthy = record(healthy_config.copy().evaluation(evaluation_interval=2, evaluation_duration=5),
                 ENV_STEPS)
rows = [{"metric": short, "result key": key, "first": column(healthy, short).dropna().iloc[0],
         "last": column(healthy, short).dropna().iloc[-1], "what it says": what}
        for short, (key, what) in METRICS.items()]
display(pd.DataFrame(rows).set_index("metric"))
"""),
    md(r"""
How to read them, with $\pi_\theta$ the policy and $V(s_t)$ the critic's value:

- **entropy** of $\pi_\theta(\cdot \mid s_t)$, averaged over the batch: CartPole's two actions
  start at $\ln 2 \approx 0.69$ (a coin flip) and it falls as the policy becomes sure. A slow fall
  is healthy; a fall to 0 within a few updates means the policy stopped exploring.
- **mean_kl_loss**: $\mathrm{KL}(\pi_{old} \,\|\, \pi_\theta)$, how far one update moved the
  policy; PPO's clipping (Schulman et al. 2017) keeps it small, in the hundredths on CartPole.
  **curr_kl_coeff** is the weight of RLlib's KL penalty: with `kl_coeff > 0` it grows 1.5x after
  an update whose KL exceeded twice `kl_target`, halves after one below half of it.
- **policy_loss**: minus the clipped surrogate. The advantages are normalized per batch, so it
  stays near 0 and says little by itself: a trend in it is not progress.
- **vf_loss**: the squared error of $V(s_t)$ against the GAE value targets (Schulman et al. 2016),
  each sample's error clipped at `vf_clip_param`; **vf_loss_unclipped** is the same unclipped. A
  gap between the two means the clip is cutting gradients.
- **vf_explained_var**: $1 - \mathrm{Var}(\text{target} - V) / \mathrm{Var}(\text{target})$: 1
  when the critic predicts its targets, 0 when it does no better than their mean.
- **gradients_default_optimizer_global_norm**: the gradient's norm before `grad_clip` scales it
  down; the value loss usually dominates it.
- **episode_len_mean** and **episode_return_mean**: means over the last 100 episodes
  (`metrics_num_episodes_for_smoothing`). Smoothing lags: early episodes are short, so 100 of them
  span several iterations, and the exploring policy's return trails the greedy one. The
  **evaluation** return (greedy, fresh episodes) shows where the policy is now:
"""),
    code("""
compare({"healthy: training (smoothed)": healthy}, ["return", "eval_return", "entropy", "kl"],
        title="the healthy run")
compare({"healthy": healthy}, ["vf_loss", "vf_explained_var", "grad_norm", "episode_len"])
evaluated = healthy.dropna(subset=[METRICS["eval_return"][0]])
ahead = (column(evaluated, "eval_return") - column(evaluated, "return")).to_numpy()
print(f"at the {len(evaluated)} evaluations, the greedy return was above the smoothed training "
      f"return {np.mean(ahead > 0):.0%} of the time, by {np.median(ahead):.0f} (median)")
"""),
    md("""
## 2. Runs broken on purpose

Each run below is the healthy one with one thing broken (`BUGS` in `diagnosing.py` says what;
`break_config` makes it), trained for the same env steps on the same seed. Each shows the symptom in
its metrics, then the fix and the metric recovering. One seed is one sample; each symptom here was
checked on seeds 0-2 when the lesson was written, and the final cell checks the direction of each
one, not its size.

### 2.1 A learning rate too high: entropy collapses, the KL spikes

With `lr=0.1` each update moves the policy so far that it becomes almost deterministic before it
has learned to balance: the entropy falls to about 0, and with it the exploration that could fix
it. A third run keeps the high `lr` but turns on RLlib's default KL penalty (`kl_coeff=0.2`): watch
`curr_kl_coeff` climb as the penalty fights the oversized steps. (Once a policy is deterministic its
updates no longer move it: the KL drops to 0, below the log-scale panel.) The fix is the healthy
`lr=3e-3`.
"""),
    code("""
print(BUGS["lr_too_high"].what)
runs = {"healthy": healthy}
runs["lr_too_high"] = record(break_config(healthy_config, "lr_too_high"), ENV_STEPS)
runs["lr_too_high, KL penalty on"] = record(
    break_config(healthy_config, "lr_too_high").training(kl_coeff=0.2), ENV_STEPS)
compare(runs, ["entropy", "kl", "kl_coeff", "return"], log=("kl",))
lowest = lambda metric: lambda run: column(run, metric).min()  # noqa: E731
highest = lambda metric: lambda run: column(run, metric).max()  # noqa: E731
lr_table = summary(runs, {"lowest entropy": lowest("entropy"), "highest KL": highest("kl"),
                         "highest curr_kl_coeff": highest("kl_coeff"),
                         "final return": lambda run: column(run, "return").iloc[-1]})
display(lr_table)
"""),
    md("""
### 2.2 The value loss clipped at 10: the critic learns slowly

RLlib's default `vf_clip_param=10` clips each sample's *squared* value error at 10. On CartPole
returns reach the hundreds, so most errors are above 10 and a clipped error has no gradient: the
critic learns only from the few samples it already predicts well. This is what held the course's
first CartPole settings back (`tuned_examples/ppo/cartpole_ppo.py` records the sweep that found
it). The symptom: `vf_loss` small and flat, near `vf_clip_param`, while `vf_loss_unclipped` is
many times larger, and a small gradient norm (the value loss, which dominates it, has lost most
of its gradient). `vf_explained_var` is often lower too, but not on every seed: it is measured on
the samples of one batch and is noisy, so read it beside the two losses. The fix is
`vf_clip_param=1000`, the healthy run's.
"""),
    code("""
print(BUGS["value_loss_clipped"].what)
runs = {"healthy": healthy,
        "value_loss_clipped": record(break_config(healthy_config, "value_loss_clipped"), ENV_STEPS)}
compare(runs, ["vf_loss", "vf_loss_unclipped", "vf_explained_var", "grad_norm"],
        log=("vf_loss", "vf_loss_unclipped"))
clip_table = summary(runs, {
    "vf_loss": lambda run: late(run, "vf_loss"),
    "vf_loss_unclipped": lambda run: late(run, "vf_loss_unclipped"),
    "unclipped / clipped": lambda run: late(run, "vf_loss_unclipped") / late(run, "vf_loss"),
    "vf_explained_var": lambda run: late(run, "vf_explained_var"),
    "grad_norm": lambda run: late(run, "grad_norm")})
display(clip_table)
print("(means over the second half of each run)")
"""),
    md(r"""
### 2.3 No bootstrap at a time limit: the critic's values biased low

gymnasium separates `terminated` (the MDP ended: the pole fell) from `truncated` (a time limit
cut the episode short). After a termination the value target of the last step is its reward
alone; after a truncation the learner must *bootstrap*, add $\gamma V(s_{T})$ for the state where
it was cut off, because the task would have gone on (Pardo et al. 2018). The classic bug is
`done = terminated or truncated`: here an env wrapper (`TruncationAsTermination` in
`rlcourse/course/diagnosing_envs.py`) reports the limit as a termination, on CartPole with a
100-step limit that the policy soon reaches. The engine is unchanged: rlcourse bootstraps
truncated episodes (`rlcourse/utils/postprocessing.py`, `compute_gae`), the env lied to it.

The observation does not show how many steps are left, so the same state gets a target near
$1/(1-\gamma) = 100$ early in an episode and near 1 at the limit: `vf_loss` stays high, and the
critic's value of the start states, $V(s_0)$, settles far below what a policy that keeps the pole
up collects. `record(..., probe_start_value=True)` adds $V(s_0)$, averaged over CartPole's start
states, to each row. The fix is the same env without the wrapper.
"""),
    code("""
print(BUGS["no_bootstrap_at_truncation"].what)
limited = healthy_config.copy().environment(broken_cartpole,
                                            env_config={"max_episode_steps": TIME_LIMIT})
runs = {"healthy (100-step limit)": record(limited, ENV_STEPS, probe_start_value=True),
        "no_bootstrap_at_truncation": record(break_config(healthy_config,
                                                          "no_bootstrap_at_truncation"),
                                             ENV_STEPS, probe_start_value=True)}
compare(runs, ["episode_len", "vf_loss", START_VALUE, "return"])
gamma = healthy_config.gamma
print(f"a policy that never drops the pole collects 1/(1-gamma) = {1 / (1 - gamma):.0f} in "
      f"discounted rewards from s_0 if the task goes on, {(1 - gamma**TIME_LIMIT) / (1 - gamma):.1f}"
      f" if it truly ended after {TIME_LIMIT} steps")
truncation_table = summary(runs, {
    "episode_len": lambda run: late(run, "episode_len"),
    "vf_loss": lambda run: late(run, "vf_loss"),
    "V(s_0) at the end": lambda run: column(run, START_VALUE).iloc[-1]})
display(truncation_table)
"""),
    md("""
### 2.4 Unnormalized observations: nothing is learned

Here the cart's encoder reports its position in millimetres from the track's left end and its
velocity in millimetres per second, while the pole's angle and angular velocity stay in radians.
The input that matters most is below 1 beside one in the thousands: the tanh units saturate, and
the network cannot see the pole. The metrics show *that* nothing is learned (a flat return,
`vf_explained_var` near 0); the observations themselves show *why*:
"""),
    code("""
print(BUGS["unnormalized_observations"].what)
env = broken_cartpole({"sensor_units": True})
env.action_space.seed(0)  # random actions, the same on a re-run
observations = [env.reset(seed=0)[0]]
for _ in range(500):
    obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
    observations.append(env.reset()[0] if terminated or truncated else obs)
observations = np.array(observations)
display(pd.DataFrame({"mean": observations.mean(0), "std": observations.std(0)},
                     index=["cart position (mm)", "cart velocity (mm/s)", "pole angle (rad)",
                            "pole angular velocity (rad/s)"]))
"""),
    md("""
The fix is a **MeanStdFilter** between the env and the module, RLlib's connector
(`rlcourse/connectors/env_to_module/mean_std_filter.py`): it keeps running means and standard
deviations of the observations and feeds the network $(o - \\mu) / \\sigma$, the same on every
runner. Andrychowicz et al. 2021 found observation normalization among the choices that matter
most.
"""),
    code("""
unnormalized = break_config(healthy_config, "unnormalized_observations")
runs = {"healthy": healthy,
        "unnormalized_observations": record(unnormalized, ENV_STEPS),
        "fixed: MeanStdFilter": record(normalize_observations(unnormalized), ENV_STEPS)}
compare(runs, ["return", "vf_explained_var", "entropy"])
observation_table = summary(runs, {"return": lambda run: late(run, "return"),
                                   "vf_explained_var": lambda run: late(run, "vf_explained_var")})
display(observation_table)
"""),
    md("""
### 2.5 A reward scale that swamps the value loss

Multiply every reward by 100 and the value targets reach the thousands: every squared error is
far above `vf_clip_param=1000`, the clipped value loss sits exactly at the clip with no gradient,
and the critic never learns. The return still rises, because PPO normalizes the advantages per
batch and the policy learns from Monte Carlo-like returns: **a healthy-looking return can hide a
dead critic.** The tells: the return per step of episode (CartPole pays 1), `vf_loss` pinned at
`vf_clip_param`, `vf_loss_unclipped` in the millions and `vf_explained_var` at 0. The fix is to put
the rewards back on a scale where returns are tens to hundreds (divide them in the env; on other
envs `config.environment(clip_rewards=...)` or normalized value targets): here that is the healthy
run.
"""),
    code("""
print(BUGS["reward_scale_too_large"].what)
runs = {"healthy": healthy,
        "reward_scale_too_large": record(break_config(healthy_config, "reward_scale_too_large"),
                                         ENV_STEPS)}
compare(runs, ["vf_loss", "vf_loss_unclipped", "vf_explained_var", "episode_len"],
        log=("vf_loss", "vf_loss_unclipped"))
reward_table = summary(runs, {
    "return per step": lambda run: late(run, "return") / late(run, "episode_len"),
    "vf_loss": lambda run: late(run, "vf_loss"),
    "vf_loss_unclipped": lambda run: late(run, "vf_loss_unclipped"),
    "vf_explained_var": lambda run: late(run, "vf_explained_var")})
display(reward_table)
"""),
    md("""
### 2.6 Too few env steps per update

With 64 env steps per update (16 per sub-env) instead of 1000, each batch holds less than one
episode and its advantages are estimated from a handful of steps: every update follows noise,
6 epochs on 64 samples fit that noise, and the policy drifts. It shows as an entropy that falls
early and KL values well above the healthy run's, with a return that climbs unevenly (Andrychowicz
et al. 2021 on batch sizes). Unlike a too-high lr it is not a collapse in a few updates; the
result's `env_runners/num_env_steps_sampled` says how many steps each iteration sampled. The fix is
the healthy batch of 1000 env steps.
"""),
    code("""
print(BUGS["too_few_env_steps_per_update"].what)
runs = {"healthy": healthy,
        "too_few_env_steps_per_update": record(break_config(healthy_config,
                                                            "too_few_env_steps_per_update"),
                                               ENV_STEPS)}
compare(runs, ["entropy", "kl", "return"], log=("kl",))
batch_table = summary(runs, {
    "env steps per iteration": lambda run: column(run, "env_runners/num_env_steps_sampled").mean(),
    "episodes per iteration": lambda run: column(run, "env_runners/num_episodes").mean(),
    "lowest entropy": lowest("entropy"), "highest KL": highest("kl"),
    "final return": lambda run: column(run, "return").iloc[-1]})
display(batch_table)
"""),
    md("""
## 3. Reading a run from its results folder

A run you did not watch is read from disk. Ray Tune writes, per trial, `params.json` (the
config), `result.json` (one JSON line per iteration, nested as the result dict), `progress.csv`
(the same, flattened: the columns `record` produced) and, because `tensorboardX` is installed, an
`events.out.tfevents.*` file for TensorBoard. Here the healthy config runs as one small Tune trial
(`PPO.as_trainable()`, lesson 07); Ray starts for it, small and local.
"""),
    code("""
from ray import tune  # Tune's import costs about a second: only now

from rlcourse.algorithms.ppo.ppo import PPO

STORAGE = Path(tempfile.mkdtemp(prefix="rlcourse-diagnosing-"))  # a fresh folder per run
trainable = PPO.as_trainable()  # starts the course's small Ray if none runs
grid = tune.Tuner(
    trainable,
    param_space=healthy_config.copy().resources(num_cpus_for_main_process=1),
    run_config=tune.RunConfig(name="healthy", storage_path=str(STORAGE), verbose=0,
                              stop={"num_env_steps_sampled_lifetime": 8000}),
).fit()
trial_dir = Path(grid[0].path)
for path in sorted(trial_dir.iterdir()):
    print(f"{path.name:48} {'folder' if path.is_dir() else f'{path.stat().st_size:,} bytes'}")
"""),
    code("""
progress = pd.read_csv(trial_dir / "progress.csv")
with open(trial_dir / "result.json") as file:
    results = [json.loads(line) for line in file]
print(f"progress.csv: {progress.shape[0]} rows x {progress.shape[1]} columns; result.json: "
      f"{len(results)} lines, nested: results[-1]['learners']['default_policy']['entropy'] = "
      f"{results[-1]['learners']['default_policy']['entropy']:.3f}")
display(progress[[diagnosing.STEPS] + [METRICS[m][0] for m in
                                       ("return", "entropy", "kl", "vf_explained_var")]].tail(4))
in_process = column(healthy, "return").to_numpy()[:len(progress)]
print("the trial's returns are the in-process healthy run's (same config, same seed):",
      np.allclose(column(progress, "return").to_numpy(), in_process))
"""),
    md("""
TensorBoard is not installed here, and need not be: an event file is a list of records, each a
length, a checksum and one protocol buffer, and `tensorboardX` ships the protocol buffer's
definition. `rlcourse/course/event_files.py` reads them in about twenty lines; Tune prefixes each
flattened key with `ray/tune/`.
"""),
    code("""
event_file, = find_event_files(trial_dir)
scalars = read_scalars(event_file)
print(f"{event_file.name}: {len(scalars)} scalar tags, e.g. {sorted(scalars)[:3]}")
from_events = pd.DataFrame({tag.removeprefix("ray/tune/"): dict(points)
                            for tag, points in scalars.items()})
compare({"healthy, read from the event file": from_events},
        ["return", "entropy", "vf_explained_var"])
same = np.allclose(column(from_events, "return").to_numpy(), column(progress, "return").to_numpy())
print("the event file's returns are progress.csv's:", same)
ray.shutdown()
"""),
    md("""
## 4. Exercise: name the bugs

Three more runs, A, B and C, each the healthy config with one of the six bugs of section 2, on
another seed. Only their metrics are shown. Write `diagnose(runs)` returning `{"A": bug, "B": bug,
"C": bug}` with names from `BUGS`. A wrong name gets a hint: the run's own numbers for the metric
that tells its bug apart. Stuck? `show_solution("diagnose_runs")`.
"""),
    code("""
mystery = diagnosing.mystery_runs(healthy_config, ENV_STEPS, seed=1)
compare(mystery, ["return", "episode_len", "entropy", "kl"], log=("kl",))
compare(mystery, ["vf_loss", "vf_loss_unclipped", "vf_explained_var", START_VALUE],
        log=("vf_loss", "vf_loss_unclipped"))
display(summary(mystery, {
    "env steps per iteration": lambda run: column(run, "env_runners/num_env_steps_sampled").mean(),
    "return": lambda run: late(run, "return"), "episode_len": lambda run: late(run, "episode_len"),
    "lowest entropy": lowest("entropy"), "highest KL": highest("kl"),
    "vf_loss": lambda run: late(run, "vf_loss"),
    "vf_loss_unclipped": lambda run: late(run, "vf_loss_unclipped"),
    "vf_explained_var": lambda run: late(run, "vf_explained_var"),
    "V(s_0)": lambda run: late(run, START_VALUE)}))
print("the bugs:", sorted(BUGS))
"""),
    code("""
from rlcourse.course.exercises import check_diagnosis, show_solution  # noqa: F401 (when stuck)


def diagnose(runs):
    \"\"\"{run name: bug} for runs A, B and C (names from BUGS), read from their metrics.\"\"\"
    # TODO: compare the tables and plots above with section 2's, and return e.g.
    # {"A": "lr_too_high", "B": ..., "C": ...}
    raise NotImplementedError("TODO: name each run's bug")


diagnosis = check_diagnosis(diagnose, mystery)
"""),
    md("""
## Summary

- Read a run in pairs of metrics: entropy with KL (how far and how fast the policy moves),
  `vf_loss` with `vf_loss_unclipped` and `vf_explained_var` (whether the critic learns), the
  return with the episode length (the reward's scale, a time limit) and the smoothed training
  return with the greedy evaluation return (the lag).
- Each bug has a tell: a too-high lr collapses the entropy; a clipped value loss opens a gap
  between `vf_loss` and `vf_loss_unclipped` at CartPole's scale; a missing bootstrap biases the
  critic low where episodes end at the limit; unnormalized observations show in the observations;
  a large reward scale in the return per step; a small batch in the steps per iteration.
- A healthy return is not a healthy run: a dead critic can hide behind normalized advantages.
- Everything a run reports is on disk: `progress.csv`, `result.json`, and event files that a
  few lines read.

**Concept checks**: the questions at the end of this lesson, each choice with its explanation.

**Read next in the source**
- `rlcourse/algorithms/ppo/ppo_learner.py`: where each learner metric is computed (`compute_loss`,
  `explained_variance`) and how `curr_kl_coeff` adapts (`update`).
- `rlcourse/utils/postprocessing.py`, `compute_gae`: terminated against truncated, the bootstrap.
- `rlcourse/connectors/env_to_module/mean_std_filter.py`: the running statistics and their merge.
- `rlcourse/course/event_files.py`: an event file, record by record.
"""),
    md("""
## Papers

- Schulman, Wolski, Dhariwal, Radford, Klimov, *Proximal Policy Optimization Algorithms*, 2017
  ([arXiv:1707.06347](https://arxiv.org/abs/1707.06347)): the clipped loss whose entropy, KL,
  policy and value terms the metrics report.
- Schulman, Moritz, Levine, Jordan, Abbeel, *High-Dimensional Continuous Control Using Generalized
  Advantage Estimation*, ICLR 2016 ([arXiv:1506.02438](https://arxiv.org/abs/1506.02438)): the
  value targets and advantages that `vf_loss` and `vf_explained_var` measure the critic against.
- Andrychowicz et al., *What Matters in On-Policy Reinforcement Learning? A Large-Scale Empirical
  Study*, ICLR 2021 ([arXiv:2006.05990](https://arxiv.org/abs/2006.05990)): which of PPO's
  choices matter, observation normalization, batch sizes and value-loss clipping among them.
- Engstrom, Ilyas, Santurkar, Tsipras, Janoos, Rudolph, Madry, *Implementation Matters in Deep
  Policy Gradients: A Case Study on PPO and TRPO*, ICLR 2020
  ([arXiv:2005.12729](https://arxiv.org/abs/2005.12729)): reward scaling, value clipping and other
  code-level details that change PPO's results.
- Pardo, Tavakoli, Levdik, Kormushev, *Time Limits in Reinforcement Learning*, ICML 2018
  ([arXiv:1712.00378](https://arxiv.org/abs/1712.00378)): bootstrapping at a time limit, and the
  bias of treating it as a termination (section 2.3).

All the course's papers, and the lessons that use them: [docs/key_papers.md](../docs/key_papers.md).
"""),
    concept_checks_cell("11"),
    code("""
# Lesson check: each broken run's tell moved from its healthy run's in the expected direction (the
# sizes differ from machine to machine), the fixes brought it back, the results read from disk
# agree, the exercise's answer is in, and nothing is left running.
lr, clip, limit = lr_table.loc, clip_table.loc, truncation_table.loc
assert lr["lr_too_high", "lowest entropy"] < 0.5 * lr["healthy", "lowest entropy"], lr_table
assert lr["lr_too_high", "highest KL"] > 5 * lr["healthy", "highest KL"], lr_table
assert lr["lr_too_high, KL penalty on", "highest curr_kl_coeff"] > 0.2, lr_table  # it climbed
assert clip["value_loss_clipped", "unclipped / clipped"] > 2 * clip["healthy", "unclipped / clipped"]
assert clip["value_loss_clipped", "grad_norm"] < clip["healthy", "grad_norm"], clip_table
assert (limit["no_bootstrap_at_truncation", "V(s_0) at the end"]
        < limit["healthy (100-step limit)", "V(s_0) at the end"] - 5), truncation_table
assert limit["no_bootstrap_at_truncation", "vf_loss"] > limit["healthy (100-step limit)", "vf_loss"]
seen = observation_table.loc
assert seen["unnormalized_observations", "return"] < 0.7 * seen["fixed: MeanStdFilter", "return"]
assert seen["fixed: MeanStdFilter", "vf_explained_var"] > seen["unnormalized_observations",
                                                               "vf_explained_var"] + 0.2
scaled = reward_table.loc
assert np.isclose(scaled["reward_scale_too_large", "return per step"],
                  100 * scaled["healthy", "return per step"]), reward_table
assert scaled["reward_scale_too_large", "vf_loss"] >= 0.99 * healthy_config.vf_clip_param
assert scaled["reward_scale_too_large", "vf_explained_var"] < scaled["healthy", "vf_explained_var"]
small = batch_table.loc
assert small["too_few_env_steps_per_update", "lowest entropy"] < small["healthy", "lowest entropy"]
assert small["too_few_env_steps_per_update", "highest KL"] > 2 * small["healthy", "highest KL"]
assert same, "the event file and progress.csv disagree"
assert diagnosis == diagnosing.MYSTERY, diagnosis
assert not ray.is_initialized()
print("Lesson 11 complete: six bugs, each seen in its metrics and fixed; a run read from disk.")
"""),
]

if __name__ == "__main__":
    write_lesson(NAME, CELLS)
