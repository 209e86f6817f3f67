"""Writes lessons/07_ray_tune.ipynb (outputs stripped): python tools/make_lesson_07.py"""

from lesson_cells import code, concept_checks_cell, md, write_lesson

NAME = "07_ray_tune.ipynb"

CELLS = [
    md("""
# Lesson 07 — Experiments with Ray Tune: sweeps, seeds, schedulers

**By the end of this lesson you can**
1. explain why the return of one seed says little about a config, and show it with a plot;
2. run a sweep with Ray Tune: a **search space** over `lr` x seeds, **trials** sized to this
   machine's CPUs, a stop criterion whose key is checked, results read back from the **ResultGrid**;
3. let **ASHA** stop the trials that trail, and count the compute it saved;
4. read **Population Based Training**'s schedule: which trial copied which, and when `lr` changed;
5. pick the best config robustly (exercise), load its checkpoint and evaluate it.

The lesson teaches Tune, not CartPole: every trial trains PPO for a few seconds (1000 env steps
per iteration), far from solving the task, which is enough to see what a sweep shows and hides.

**Time:** about 40 minutes of study (one exercise); the cells run in one to two minutes on 2 idle
cores (measured there; longer on a busy or 1-CPU machine).
Terms: see the [glossary](../docs/glossary.md).
"""),
    md("""
## 1. A sweep in one cell

Tune runs a **Trainable** many times, each run a **trial** with its own settings. The settings
come from a **search space**: `tune.grid_search([...])` tries every value, and two grids multiply.
You write it where the setting lives, in the config's setters, as in RLlib:

```python
PPOConfig().training(lr=tune.grid_search([1e-4, 1e-3, 1e-2])).debugging(seed=tune.grid_search([0, 1, 2]))
```

One spelling differs from RLlib: `tune.Tuner(PPO.as_trainable(), ...)` instead of `tune.Tuner(PPO, ...)`,
because an rlcourse Algorithm is not itself a Tune Trainable (that would make every process that
imports PPO import Tune: +1.1 s and +133 MB, measured on a 2-core Linux machine;
`rlcourse/tune/trainable.py` explains).

Each trial reserves one **placement group** for everything it starts. Here every trial runs its
runner inside its own process (`num_env_runners=0`), and reserves `num_cpus_for_main_process`
CPUs, sized so that at most two trials run at once: each trial's process imports torch and Tune
(about 340 MB each, measured on a 2-core Linux machine), and two fit Binder's 2 GiB beside this
kernel and Ray's own processes (the whole lesson peaked at about 1.5 GiB there; CI measures it on
every run). On a 1-CPU machine trials run one
after another.
"""),
    code("""
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

import ray
from ray import tune
from ray.tune.schedulers import ASHAScheduler, PopulationBasedTraining

from rlcourse import PPOConfig
from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.ppo.ppo import PPO
from rlcourse.course import tune_plots
from rlcourse.course.tune_progress import TuneProgress
from rlcourse.course.tuned_example import result_keys

os.environ["TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S"] = "0"  # tiny trials save often
logging.getLogger("ray.tune.logger").setLevel(logging.ERROR)  # PBT's restores look for files not yet written
trainable = PPO.as_trainable()  # starts the course's small Ray if none runs
cpus = ray.cluster_resources()["CPU"]
concurrent = int(min(2, cpus))  # two trial processes at most: memory, not CPUs, is the limit
STORAGE = Path(tempfile.mkdtemp(prefix="rlcourse-tune-"))  # a fresh results folder per run
METRIC = "env_runners/episode_return_mean"


def small_ppo():
    \"\"\"PPO on CartPole, small and quick: one iteration = 1000 env steps. The settings of
    tuned_examples/ppo/cartpole_ppo.py (PPOConfig's own defaults are RLlib's, sized for large
    problems) but for num_epochs=4 instead of 6, which makes the many short trials quicker; each
    sweep below sets its own lr.\"\"\"
    return (PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
            .resources(num_cpus_for_main_process=cpus / concurrent)
            .training(lr=3e-3, train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=4,
                      lambda_=0.95, clip_param=0.2, vf_clip_param=1000.0, vf_loss_coeff=0.5,
                      use_kl_loss=False, grad_clip=0.5)
            .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False}))


print(f"Ray has {cpus:g} CPUs: each trial reserves {cpus / concurrent:g}, so up to {concurrent} "
      f"run at once | results go to {STORAGE}")
"""),
    md("""
**Stop criteria are keys of the results.** Tune only *warns* about a stop key that no result has,
and then never stops on it: a misspelt key (or the old API's `episode_reward_mean`) runs a sweep
forever. `result_keys(config)` lists the keys rlcourse reports, flattened as Tune flattens them,
so check the stop dict before you start:
"""),
    code("""
grid_space = small_ppo().training(lr=tune.grid_search([1e-4, 3e-3, 1e-2])).debugging(
    seed=tune.grid_search([0, 1, 2]))
grid_stop = {"training_iteration": 8}

valid = result_keys(small_ppo())
print("'episode_reward_mean' (old API) is a result key:", "episode_reward_mean" in valid)
print(f"'{METRIC}' is a result key:", METRIC in valid)
assert set(grid_stop) <= valid, set(grid_stop) - valid
"""),
    md("""
Now the sweep: 3 learning rates x 3 seeds = 9 trials of 8 iterations. `TuneConfig` names the
metric to compare trials by; `reuse_actors=True` lets a finished trial's process run the next trial
(no new torch import); `RunConfig` says when to stop, where results go, and which checkpoints to keep.
The line below updates as results arrive (`TuneProgress`, a small Tune callback; `verbose=1`
would print Tune's own tables instead). The trial processes keep their own info lines to
themselves (`rlcourse/tune/trainable.py`); warnings and errors still come through, prefixed with
`(PPO pid=...)`.
"""),
    code("""
start, grid_progress = time.perf_counter(), TuneProgress("grid")
grid = tune.Tuner(
    trainable,
    param_space=grid_space,
    tune_config=tune.TuneConfig(metric=METRIC, mode="max", reuse_actors=True),
    run_config=tune.RunConfig(
        name="grid", storage_path=str(STORAGE), stop=grid_stop, verbose=0,
        callbacks=[grid_progress],
        checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True, num_to_keep=1)),
).fit()
grid_seconds = time.perf_counter() - start
grid_concurrent = grid_progress.max_running
processes = grid.get_dataframe()["pid"].nunique()
print(f"{len(grid)} trials, {grid.num_errors} errors, in {grid_seconds:.1f} s; at most "
      f"{grid_concurrent} ran at the same time, in {processes} trial processes (reuse_actors)")
"""),
    md("""
## 2. Why one seed lies

`grid.get_dataframe()` has one row per trial: its last reported result, its settings as
`config/...` columns. Each dot below is one seed's final return; each bar the mean of a
learning rate's seeds.
"""),
    code("""
grid_df = grid.get_dataframe()
tune_plots.final_returns_by_seed(grid_df)
finals = grid_df.pivot_table(index="config/seed", columns="config/lr", values=METRIC)
print(finals.round(1).to_string())
for seed, row in finals.iterrows():
    print(f"seed {seed} alone would rank the lrs: {' > '.join(f'{lr:g}' for lr in row.sort_values(ascending=False).index)}")
spread = (finals.max() - finals.min()).max()
print(f"seeds of one lr differ by up to {spread:.1f} in final return")
# Two configs compared with one run each (any seed of one against any seed of the other):
second, first = finals.mean().sort_values().index[-2:]
wrong = int((finals[second].to_numpy()[:, None] > finals[first].to_numpy()[None, :]).sum())
print(f"lr={first:g} beats lr={second:g} on the mean by {finals[first].mean() - finals[second].mean():.1f}; "
      f"{wrong} of {finals[first].size * finals[second].size} one-run-each comparisons pick lr={second:g}")
"""),
    md("""
The seed changes the network's first weights, the episodes' starts and every sampled action. RL
learning curves are noisy, and the noise is not small beside the differences between settings:
the last line above counts how often a comparison of one run per config (as in a sweep without
seeds) picks the config that is worse on the mean. Read the numbers above: a poor lr falls behind
on every seed; between two good ones, set the gap of their means against the spread of the seeds. Papers and sweeps that report one seed per
config are ranking partly by luck (Henderson et al., *Deep RL that matters*, 2018). Compare configs
by the **mean over several seeds**, and look at the spread.

## 3. The trial curves, from the ResultGrid

Each result in the grid also holds its trial's whole history, `result.metrics_dataframe` (one row
per iteration), and its folder on disk, `result.path`, with `progress.csv`, `result.json` and
TensorBoard event files (`tensorboard --logdir` on the experiment's folder shows every trial).
The thick lines are seed 0: what a one-seed sweep would have seen.
"""),
    code("""
tune_plots.trial_curves(grid, color_by="config/lr", highlight_seed=0,
                        title="9 trials: 3 learning rates x 3 seeds (thick: seed 0)")
print("one trial's folder:", sorted(p.name for p in Path(grid[0].path).iterdir()))
"""),
    md("""
## 4. ASHA: stop the trials that trail

A grid spends the same budget on hopeless settings as on good ones. **ASHA** (asynchronous
successive halving) checks every trial at *rungs* (here after 4 and 8 iterations: `grace_period=4`, then x
`reduction_factor=2`) and stops a trial whose return is not in the top half of the results
recorded at that rung so far. It never waits for other trials (it is asynchronous), so the first
trials to reach a rung have nobody to be compared with and always go on.

Six learning rates, one seed each, up to 12 iterations:
"""),
    code("""
MAX_T = 12
asha_lrs = [1e-3, 3e-3, 1e-2, 1e-4, 3e-5, 1e-5]
start = time.perf_counter()
asha = tune.Tuner(
    trainable,
    param_space=small_ppo().training(lr=tune.grid_search(asha_lrs)),
    tune_config=tune.TuneConfig(metric=METRIC, mode="max", reuse_actors=True, scheduler=ASHAScheduler(
        time_attr="training_iteration", max_t=MAX_T, grace_period=4, reduction_factor=2)),
    run_config=tune.RunConfig(name="asha", storage_path=str(STORAGE), verbose=0,
                              stop={"training_iteration": MAX_T}, callbacks=[TuneProgress("asha")]),
).fit()
asha_seconds = time.perf_counter() - start
asha_df = asha.get_dataframe()
used, full = int(asha_df["training_iteration"].sum()), len(asha_df) * MAX_T
stopped_early = int((asha_df["training_iteration"] < MAX_T).sum())
print(f"ASHA stopped {stopped_early} of {len(asha_df)} trials early: {used} iterations "
      f"({used * 1000:,} env steps) instead of {full} ({full * 1000:,}) for a full run of every trial, "
      f"{1 - used / full:.0%} saved | {asha_seconds:.1f} s")
tune_plots.asha_curves(asha, max_t=MAX_T)
"""),
    md("""
ASHA's bet: a trial that trails early keeps trailing. For RL that is only roughly true: in the
first iterations every lr returns about 20 (random play) and the ranking is noise, and some good
settings start slowly (section 6's exercise has one). Keep `grace_period` long enough for learning
to begin; with `grace_period=2` a first try of this lesson stopped every trial but the first at
iteration 2, on noise.

## 5. Population Based Training: a schedule, not a setting

**PBT** trains a *population* of trials at once and, every `perturbation_interval` iterations,
lets a trial in the bottom half **exploit** one in the top half (`quantile_fraction=0.5`): it loads that trial's
checkpoint (weights, optimizer, everything) and goes on from there, then **explores**: it
perturbs the copied `lr` (x0.8 or x1.2, or sometimes a fresh sample from
`hyperparam_mutations`). The result is a *schedule* of `lr` over training, found while training.

`synch=True` makes each perturbation point a meeting: trials that reach it wait (paused) until the
whole population has, so exploits never depend on which trial a busy machine happened to start
first. PBT needs exact save and restore: the trainable saves a checkpoint when PBT asks for one, and the
donor's checkpoint must still be on disk when another trial copies it, so keep all checkpoints here
(`num_to_keep=1` could delete a donor's checkpoint before it is copied).
"""),
    code("""
pbt_scheduler = PopulationBasedTraining(
    time_attr="training_iteration", perturbation_interval=3, quantile_fraction=0.5, synch=True,
    hyperparam_mutations={"lr": tune.loguniform(1e-5, 1e-2)})
start = time.perf_counter()
pbt = tune.Tuner(
    trainable,
    param_space=small_ppo().training(lr=tune.grid_search([1e-5, 1e-4, 1e-3, 3e-3])),
    tune_config=tune.TuneConfig(metric=METRIC, mode="max", reuse_actors=True, scheduler=pbt_scheduler),
    run_config=tune.RunConfig(name="pbt", storage_path=str(STORAGE), verbose=0,
                              stop={"training_iteration": 9}, callbacks=[TuneProgress("pbt")],
                              checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True)),
).fit()
pbt_seconds = time.perf_counter() - start
exploits = tune_plots.pbt_exploits(pbt.experiment_path)
for e in exploits:
    print(f"trial {e['trial']} at iteration {e['at']} copied trial {e['copied']} "
          f"(its iteration {e['donor_at']}) and went on with lr={e['new_lr']:.2g}")
print(f"{len(exploits)} exploits | {pbt.num_errors} errors | {pbt_seconds:.1f} s")
tune_plots.pbt_schedule(pbt)
"""),
    md("""
The top plot is the lr each trial's optimizer used
(`learners/default_policy/default_optimizer_learning_rate`, RLlib's key, from the trial's `progress.csv`). Read it from left to right: the trial that started with a tiny `lr` trails, so at a
perturbation point it jumps (star) to a copy of a leader with that leader's `lr` perturbed, and
its return jumps with it: it now has the leader's weights, and goes on from the leader's iteration
(its own history since is drawn dashed: it was abandoned). Exploring can also land on a poor `lr`
(a fresh sample from `hyperparam_mutations`); the next perturbation point can correct it. PBT's log is `pbt_global.txt` in the
experiment's folder. With more trials than CPUs, PBT pauses the trials that are ahead so that the
others catch up: pausing is a checkpoint, resuming a restore.

## 6. Picking the best config robustly

`grid.get_best_result(metric, mode)` returns the trial with the best **last** result of `metric`
(`scope="last"`, the default). That is one seed, and with 3 seeds per config it is often the
luckiest seed, not the best config. Instead: take each trial's last reported return, average each
config's seeds, pick the best mean.

### Exercise: `pick_best_config`

Write `pick_best_config(df, varied)`. `df` has every reported iteration of every trial (the
`metrics_dataframe`s of a ResultGrid, one after another; columns `trial_id`, `training_iteration`,
`env_runners/episode_return_mean` and the `config/...` settings); rows may come in any order.
`varied` lists the columns that define a config, e.g. `["config/lr"]`. Return a dict
`{column: value}` of the config whose trials have the best **mean last reported return**,
leaving out trials whose last return is NaN (errored); a trial stopped early counts with its last
report. The checker builds its own sweeps, each
with a trap. Stuck? `show_solution("pick_best_config")`.
"""),
    code("""
from rlcourse.course.exercises import check_pick_best_config, show_solution


def pick_best_config(df, varied):
    \"\"\"{column: value} of the config (the `varied` columns) whose trials have the best mean last
    reported env_runners/episode_return_mean; errored trials (NaN) left out.\"\"\"
    # TODO: each trial's last iteration -> drop NaN -> mean per config -> the best; delete the raise.
    raise NotImplementedError("TODO: pick the best config")


pick_best_config = check_pick_best_config(pick_best_config)
"""),
    md("""
Now on the grid of section 1: the robust pick, and what the one-lucky-trial pick would have said.
Among the chosen config's seeds we load the checkpoint of the one with the best final return (the
config was chosen by its mean; any of its checkpoints is a fair representative, and this one is
the one you would ship).
"""),
    code("""
iterations = tune_plots.all_iterations(grid)
best = pick_best_config(iterations, ["config/lr"])
lucky = grid.get_best_result(metric=METRIC, mode="max")
means = grid_df.groupby("config/lr")[METRIC].mean()
print(f"robust pick: lr={best['config/lr']:g} (mean over seeds {means[best['config/lr']]:.1f})")
lucky_return = lucky.metrics["env_runners"]["episode_return_mean"]  # metrics: nested, as reported
print(f"get_best_result: lr={lucky.config['lr']:g}, seed {lucky.config['seed']} "
      f"(that trial {lucky_return:.1f}; its lr's mean {means[lucky.config['lr']]:.1f})")

chosen = [r for r in grid if r.config["lr"] == best["config/lr"]]
result = max(chosen, key=lambda r: r.metrics["env_runners"]["episode_return_mean"])
print("checkpoint:", result.checkpoint.path)
reported = result.metrics["env_runners"]["episode_return_mean"]
evaluations = {}
for explore in (True, False):  # actions sampled as in training, then greedy (evaluate()'s default)
    algo = Algorithm.from_checkpoint(result.checkpoint.path)
    algo.config.evaluation(evaluation_config={"explore": explore}, evaluation_duration=20)
    evaluations[explore] = algo.evaluate()["env_runners"]["episode_return_mean"]
    algo.stop()
print(f"the trial reported {reported:.1f} (its last 100 training episodes, actions sampled)")
print(f"the loaded checkpoint, 20 episodes: {evaluations[True]:.1f} sampling its actions, "
      f"{evaluations[False]:.1f} acting greedily")
"""),
    md("""
Compare the two lines above. Sampling its actions as in training, the loaded policy usually gets
about what its trial reported or more (20 episodes are a noisy measure, so the lesson's check only
asks for 70% of it): the reported mean is over the trial's last 100 episodes, most of them played in
earlier iterations by weaker policies (with episodes this short, 100 span several iterations).
Acting greedily (`explore=False`, the default of `evaluate()`) it gets more again: the most likely
action is usually the better one. So a checkpoint's evaluation is not its trial's reported
return; compare like with like. The same checkpoint evaluates from the
command line too: `rlcourse evaluate <checkpoint> --episodes 20`.

## Summary

- One seed lies: RL curves are noisy, so compare configs by the mean over seeds, and look at the
  spread before trusting a difference.
- A sweep is `tune.Tuner(PPO.as_trainable(), param_space=config_with_search_spaces, tune_config=...,
  run_config=...)`; each trial reserves a placement group, so trials never oversubscribe the CPUs.
  Check stop keys against `result_keys(config)`: Tune only warns about unknown ones.
- The ResultGrid holds the last result per trial (`get_dataframe()`), each trial's history
  (`metrics_dataframe`), its folder (TensorBoard files) and its checkpoint.
- ASHA stops trailing trials at rungs and saves compute; PBT copies leaders and perturbs their
  settings, producing a schedule.
- Pick by a robust metric (mean over seeds of the last reported return), then load the checkpoint
  with `Algorithm.from_checkpoint` and evaluate it.

**Read next in the source**
- `rlcourse/tune/trainable.py`: the Trainable around an Algorithm: `default_resource_request` (one
  placement group), `step`, `save_checkpoint`/`load_checkpoint` (what PBT calls), `reset_config`
  (`reuse_actors`).
- `rlcourse/tune/search_space.py`: how search spaces inside setters are found and checked before any
  trial starts; `rlcourse/utils/resources.py`, `trial_bundles`: what a trial reserves.
- `rlcourse/course/tune_job.py` and `tuned_examples/ppo/cartpole_ppo_lr_sweep.py`: the same sweep
  from the command line, `rlcourse tune tuned_examples/ppo/cartpole_ppo_lr_sweep.py --scheduler asha`.
- `rlcourse/course/tune_plots.py`: how this lesson's plots read the ResultGrid.
"""),
    md("""
## Papers

- Liaw et al., *Tune: A Research Platform for Distributed Model Selection and Training*, 2018
  ([arXiv:1807.05118](https://arxiv.org/abs/1807.05118)): trials, trainables and schedulers.
- Henderson, Islam, Bachman, Pineau, Precup, Meger, *Deep Reinforcement Learning that Matters*,
  AAAI 2018 ([arXiv:1709.06560](https://arxiv.org/abs/1709.06560)): why one seed lies, section 2.
- Li, Jamieson, Rostamizadeh, Gonina, Hardt, Recht, Talwalkar, *A System for Massively Parallel
  Hyperparameter Tuning*, MLSys 2020 ([arXiv:1810.05934](https://arxiv.org/abs/1810.05934)):
  ASHA, section 4.
- Jaderberg et al., *Population Based Training of Neural Networks*, 2017
  ([arXiv:1711.09846](https://arxiv.org/abs/1711.09846)): PBT, section 5.

All the course's papers, and the lessons that use them: [docs/key_papers.md](../docs/key_papers.md).
"""),
    concept_checks_cell("07"),
    code("""
# Lesson check: the sweeps ran without errors, the robust pick's mean beats the worst config's,
# ASHA stopped a trial early, PBT exploited, and the checkpoint evaluates near its trial's return.
assert grid.num_errors == asha.num_errors == pbt.num_errors == 0
assert len(grid) == 9 and 1 <= grid_concurrent <= concurrent, grid_concurrent
assert means[best["config/lr"]] == means.max() > means.min(), means
assert stopped_early >= 1 and used < full, (used, full)
assert len(exploits) >= 1, exploits
assert evaluations[True] >= 0.7 * reported and evaluations[False] >= 0.7 * reported, (evaluations, reported)
ray.shutdown()
shutil.rmtree(STORAGE, ignore_errors=True)
print("Lesson 07 complete.")
"""),
]

if __name__ == "__main__":
    print(write_lesson(NAME, CELLS))
