"""Writes lessons/15_graduating_to_rllib.ipynb (outputs stripped): python tools/make_lesson_15.py"""

from lesson_cells import code, concept_checks_cell, md, write_lesson

NAME = "15_graduating_to_rllib.ipynb"

CELLS = [
    md(r"""
# Lesson 15 — Graduating to RLlib: the same experiments, side by side

**By the end of this lesson you can**
1. take a config written for rlcourse to RLlib by changing its **import** line, and say which
   settings you must write out because the **defaults** (RLlib's, in both) are made for big runs;
2. run PPO on CartPole, IMPALA, and a **custom env** in both libraries on this machine, and read
   both learning curves against env steps and against wall time;
3. compute when a run first reached a return (the exercise) and the **wall-time ratio** between
   the two libraries from it;
4. find any rlcourse file's counterpart in RLlib's source, with its settings and result keys, and
   say what RLlib has that the course leaves out.

**Time:** about 30 minutes of study (one exercise); the cells run in about 90 seconds on 2 idle
cores (measured there; longer on a busy or 1-CPU machine).
Terms: see the [glossary](../docs/glossary.md).
"""),
    code("""
import time

import numpy as np
import ray
import torch
from IPython.display import Markdown, display

from rlcourse.course import side_by_side
from rlcourse.course.doctor import usable_cpus
from rlcourse.utils.resources import init_ray

ray.shutdown()  # a re-run starts from a clean slate
torch.set_num_threads(1)  # small networks: one torch thread is fastest (Binder has one CPU)
start = time.perf_counter()
import ray.rllib.algorithms.ppo  # timed: what importing RLlib costs a kernel

rllib_import_s = time.perf_counter() - start
init_ray()  # one small local Ray (loopback, no dashboard) for both libraries: RLlib joins it
print(f"this machine: {usable_cpus():g} usable CPUs; Ray {ray.__version__}; "
      f"importing RLlib's PPO took {rllib_import_s:.1f} s in this kernel")
"""),
    md("""
## 1. What stays the same

rlcourse was built with RLlib's names, so most of a program does not change:

- the config: `PPOConfig()`, `IMPALAConfig()`, and the fluent setters `environment()`,
  `env_runners()`, `learners()`, `training()`, `rl_module()`, `evaluation()`, `callbacks()`,
  `multi_agent()`, `debugging()`, each returning the config;
- the algorithm: `config.build_algo()`, `algo.train()` (one iteration, a result dict),
  `algo.evaluate()`, `algo.save_to_path()` / `Algorithm.from_checkpoint()`, `algo.stop()`;
- envs: gymnasium ids, `gymnasium.Env` classes, and names given to `register_env(name, creator)`
  with the creator getting `env_config`;
- the result keys lessons read: `result["env_runners"]["episode_return_mean"]`,
  `result["num_env_steps_sampled_lifetime"]`, `result["learners"]["default_policy"]["policy_loss"]`.

Below, every experiment is a function that builds a config from the classes it takes as
parameters. `side_by_side.run(fn, "rlcourse")` passes rlcourse's `PPOConfig`,
`side_by_side.run(fn, "ray.rllib")` passes RLlib's, so both libraries train *the same code*.
`side_by_side.program(fn, package)` prints the program a learner would write for each, and the diff
between the two is the proof that only the import differs:
"""),
    code("""
def ppo_cartpole(PPOConfig):
    return (PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
            .learners(num_learners=0)
            .training(lr=3e-3, train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=6,
                      gamma=0.99, lambda_=0.95, clip_param=0.2, vf_clip_param=1000.0,
                      vf_loss_coeff=0.5, entropy_coeff=0.0, use_kl_loss=False, grad_clip=0.5)
            .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"})
            .reporting(metrics_num_episodes_for_smoothing=20)
            .debugging(seed=0))


print(side_by_side.program(ppo_cartpole, "ray.rllib"))
ppo_diff = side_by_side.code_diff(ppo_cartpole)
display(Markdown(side_by_side.diff_markdown(ppo_cartpole)))
"""),
    md("""
## 2. Write out the settings that matter: the defaults are for big runs

Why so many settings in a CartPole config? Because a setting left out takes the library's
**default**, and RLlib's defaults are chosen for large runs on many machines: a small learning
rate, big batches, many epochs, two 256 x 256 networks. rlcourse's `PPOConfig` and `IMPALAConfig`
take the same defaults as RLlib 2.60, so an RLlib example runs here with only its import changed
(`tests/test_rllib_drift.py` compares them with RLlib's on every CI run). On CartPole those
defaults learn slowly; `ppo_cartpole` writes out the course's CartPole settings (found with the
sweeps described in `tuned_examples/ppo/cartpole_ppo.py`). The table is read from fresh configs of
both libraries, here and now, beside what `ppo_cartpole` sets:
"""),
    code("""
import dataclasses

from ray.rllib.algorithms.ppo import PPOConfig as RLlibPPOConfig
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

from rlcourse import PPOConfig

PPO_SETTINGS = ["lr", "train_batch_size_per_learner", "minibatch_size", "num_epochs", "gamma",
                "lambda_", "clip_param", "vf_clip_param", "vf_loss_coeff", "entropy_coeff",
                "use_kl_loss", "grad_clip", "metrics_num_episodes_for_smoothing"]
ppo_defaults = side_by_side.defaults("PPOConfig", PPO_SETTINGS)
ours_for_cartpole = ppo_cartpole(PPOConfig)
rows = [f"| `{name}` | {ours} | {theirs} | {getattr(ours_for_cartpole, name)} |"
        for name, ours, theirs in ppo_defaults]
rllib_model = {**dataclasses.asdict(DefaultModelConfig()), **RLlibPPOConfig().model_config}
for key in ("fcnet_hiddens", "vf_share_layers"):
    rows.append(f"| `model_config['{key}']` | {PPOConfig().model_config[key]} | {rllib_model[key]} | "
                f"{ours_for_cartpole.model_config[key]} |")
display(Markdown("| PPOConfig setting | rlcourse default | RLlib default | `ppo_cartpole` |\\n"
                 "|---|---|---|---|\\n" + "\\n".join(rows)))
different = [name for name, ours, theirs in ppo_defaults if ours != theirs]
print("defaults that differ between the two libraries:", different or "none")
"""),
    md("""
`ppo_cartpole` sets every one of them (and the network), so both libraries train the same algorithm
with the same settings and the same network shape: separate 64 x 64 policy and value networks
(`vf_share_layers=False`, PPO's default in both; RLlib's `DefaultModelConfig` and IMPALA share one
encoder between the two heads). What cannot be made the same: the two libraries draw different
random numbers from the same seed.

One result key has the same name and the same default window but not the same meaning:
`episode_return_mean`. rlcourse's is the mean of the last `metrics_num_episodes_for_smoothing`
episodes (100 by default), however many iterations back they go. RLlib 2.60's follows the episodes
of the latest iteration, so its curve changes little with the window. With 100, rlcourse's mean
trails several iterations behind RLlib's, so rlcourse would "reach" a target later with a policy
no worse. `ppo_cartpole` therefore sets the window to 20 in both, a few iterations of CartPole
episodes at these returns (a 1,000-step iteration holds 5 to 10 episodes of 100 to 200 steps).

Both runs use `num_env_runners=0` (the env runs in this process) and `num_learners=0` (one Learner
in this process): the size of Binder's one CPU and 2 GiB, for both libraries alike.

## 3. PPO on CartPole, side by side

Each library trains until the mean return reaches **200** (of CartPole's 500), or 40,000 env steps
pass: a budget in env steps, not seconds, so a slow machine takes longer but learns the same.
The target is 200 rather than 450 to keep the lesson within its two minutes; both curves keep
rising past it. The clock starts just before `build_algo()` (building is part of the cost) and
after Ray has started (both share it).
"""),
    code("""
TARGET = 200.0
line = display("starting...", display_id=True)
ppo_runs = {package: side_by_side.run(ppo_cartpole, package, target_return=TARGET,
                                      max_env_steps=40_000, progress=line.update)
            for package in side_by_side.PACKAGES}
side_by_side.plot_runs(list(ppo_runs.values()), target=TARGET, title="PPO on CartPole-v1")
"""),
    md("""
Left: return against env steps, how much each library learns from the same data. Right: return
against wall seconds, how fast each gets there on this machine. To turn the curves into one number
you need the moment each run first reached the target.

### Exercise: when did a run first reach a return?

Write `time_to_return(rows, target)`. `rows` is a NumPy array with one row per iteration:
(env steps so far, wall seconds so far, mean return), as `ppo_runs["rlcourse"].rows`. Return the
env steps and seconds of the **first** row whose return is at least `target`, as a tuple, or
`None` if no row reaches it. Mind the first rows: before any episode ends the return is NaN. Until
you write it, `check_time_to_return` reports it as not attempted and the lesson uses rlcourse's.
Stuck? `show_solution("time_to_return")`.
"""),
    code("""
from rlcourse.course.exercises import check_time_to_return, show_solution


def time_to_return(rows, target):
    raise NotImplementedError("TODO: (env steps, seconds) of the first row at the target, or None")


time_to_return = check_time_to_return(time_to_return)  # yours if right, rlcourse's while not attempted
"""),
    code("""
def compare(runs, target):
    \"\"\"Print when each run reached `target`, and RLlib's wall time over rlcourse's.\"\"\"
    reached = {package: time_to_return(one.rows, target) for package, one in runs.items()}
    for package, one in runs.items():
        at = reached[package]
        where = (f"reached {target:g} at {at[0]:,} env steps, {at[1]:.1f} s" if at else
                 f"did not reach {target:g}: {one.env_steps[-1]:,.0f} env steps, "
                 f"return {one.returns[-1]:.2f} after {one.seconds[-1]:.1f} s")
        timers = {name: one.last_result["timers"].get(key) for name, key in (
            ("sampling", "env_runner_sampling_timer"), ("learner update", "learner_update_timer"))}
        print(f"{package:>9}: {where}; build {one.build_seconds:.2f} s, "
              f"{one.env_steps[-1] / one.seconds[-1]:,.0f} env steps/s over the run"
              + "".join(f"; {name} {s:.3f} s per iteration" for name, s in timers.items() if s))
    if reached["rlcourse"] and reached["ray.rllib"]:
        ratio = reached["ray.rllib"][1] / reached["rlcourse"][1]
        print(f"wall time to {target:g}, RLlib / rlcourse: {ratio:.1f}x (this run, this machine)")
        return ratio
    return None


ppo_ratio = compare(ppo_runs, TARGET)
"""),
    md("""
The lines above are this run's measurement, on this machine; the ratio is what it printed, not
a promise. Where does the time go? Per iteration both libraries do the same work: sample 1,000 env
steps, then 6 epochs of 4 minibatches; both report it under the same `timers` keys, printed above
(RLlib's are smoothed over recent iterations, rlcourse's are the last one). Read which of the two,
sampling or the learner update, makes the difference in this run. RLlib runs each env step through
its **connector pipelines** (env-to-module, module-to-env; then learner connectors that build the
batch and compute GAE), general pieces that handle every case it supports (multi-agent, recurrent
state, frame stacking, ...), a torch module forward pass and many more metrics; rlcourse runs only
what the course needs, with its default network in NumPy. The ratio is of wall time to the same
return, so it also carries how many env steps each library needed: the left plot shows that, and
the env steps per second printed above show the cost per step alone. With the same settings the
two still differ in their random numbers and in details of their implementations, so they need
not need the same number of env steps; one seed is one sample (lesson 07 says why).
`benchmarks/rllib_side_by_side.py` runs this config for several seeds and prints, per seed, both
libraries' env steps and wall time to the target and the ratio.

## 4. IMPALA

The same function with `IMPALAConfig`. Again the course's CartPole settings are written out
(`tuned_examples/impala/cartpole_impala.py`), the network included: IMPALA's default model, in both
libraries, shares one encoder between the policy and the value head.
"""),
    code("""
def impala_cartpole(IMPALAConfig):
    return (IMPALAConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=0, num_envs_per_env_runner=4, rollout_fragment_length=50,
                         max_requests_in_flight_per_env_runner=2)
            .learners(num_learners=0)
            .training(lr=1e-3, train_batch_size_per_learner=500, gamma=0.99, grad_clip=40.0,
                      vtrace=True, vf_loss_coeff=0.5, entropy_coeff=0.01, learner_queue_size=4,
                      broadcast_interval=1)
            .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh",
                                     "vf_share_layers": False})
            .debugging(seed=0))


impala_diff = side_by_side.code_diff(impala_cartpole)
display(Markdown(side_by_side.diff_markdown(impala_cartpole)))
IMPALA_SETTINGS = ["lr", "learner_queue_size", "max_requests_in_flight_per_env_runner",
                   "min_time_s_per_iteration"]
for name, ours, theirs in side_by_side.defaults("IMPALAConfig", IMPALA_SETTINGS):
    print(f"{name:>38}: rlcourse {ours!s:>22} | RLlib {theirs}")
"""),
    md("""
One RLlib setting has no rlcourse counterpart: `min_time_s_per_iteration`. RLlib's IMPALA
makes each `train()` last at least 10 s (it collects results over that time); rlcourse's returns
after each learner update. The shared code cannot set it (rlcourse refuses a setting it does not
have), so RLlib reports once per 10 s, and the time at which it reached a target is known only to
within 10 s. So IMPALA gets a **budget** rather than a ratio alone: rlcourse until the mean return
reaches 150 (or 150,000 env steps), RLlib until 150 or 20 s (two of its iterations), and then we compare what
each did in its time: env steps per second, and the return reached.
"""),
    code("""
IMPALA_TARGET = 150.0
line = display("starting...", display_id=True)
impala_runs = {
    "rlcourse": side_by_side.run(impala_cartpole, "rlcourse", target_return=IMPALA_TARGET,
                                 max_env_steps=150_000, progress=line.update),
    "ray.rllib": side_by_side.run(impala_cartpole, "ray.rllib", target_return=IMPALA_TARGET,
                                  max_seconds=20, progress=line.update)}
side_by_side.plot_runs(list(impala_runs.values()), target=IMPALA_TARGET, title="IMPALA on CartPole-v1")
impala_ratio = compare(impala_runs, IMPALA_TARGET)
for package, one in impala_runs.items():
    learner = one.last_result["learners"]["default_policy"]
    # rlcourse's vf_loss is a mean over the batch; RLlib's IMPALA logs a sum, its mean is mean_vf_loss
    vf_loss = learner.get("mean_vf_loss", learner["vf_loss"])
    print(f"{package:>9}: last learner update: policy entropy {float(learner['entropy']):.3f} "
          f"(a uniform policy over CartPole's 2 actions: {np.log(2):.3f}), "
          f"mean value loss {float(vf_loss):.1f}")
"""),
    md(r"""
Read the printed lines: the env steps per second of each library, where each got in its budget,
and the policy's entropy at the end (near $\ln 2$ means the policy still picks both actions about
equally, as an untrained one does). With `num_env_runners=0` IMPALA loses what makes it IMPALA
(runners sampling while the learner learns, lesson 05): both libraries here sample and learn in
turn in one process, the Binder-sized setting. RLlib's 20 s are two of its 10-second iterations,
so it may not reach the target in its budget even where it learns at the same rate per env step;
compare the returns at equal env steps in the left plot.

`"vf_share_layers": False` matters here. Left out, RLlib's IMPALA shares one encoder between the
two heads (its default model) while `impala_cartpole` asks for two networks, and the two libraries
no longer train the same network: one 20 s run of RLlib's without it stayed below a return of 30. A default you did not write down can change what you compare.
Note also a result key with the same name and another meaning: RLlib's IMPALA logs `vf_loss` summed
over the batch (its mean is `mean_vf_loss`, and the policy loss is `pi_loss`), rlcourse's is the mean.

## 5. A custom env

Your own env works in both, given as a class or registered by name. The observation of lesson 03's
`GridWorld` is a cell number (`Discrete`). Neither library's default network takes it: both refuse
a non-`Box` observation and want the `FlattenObservations` connector (lesson 03), which one-hot
encodes the cell before the forward pass. RLlib calls the connector function as
`fn(env, spaces, device)`, so the function below takes those three names, and rlcourse calls it the
same way. `register_env` and `FlattenObservations` come from `rlcourse` in one program and from
`ray.tune.registry` and `ray.rllib.connectors.env_to_module` in the other: only import lines differ.
"""),
    code("""
from rlcourse.course.envs import GridWorld


def grid_world_ppo(PPOConfig, register_env, FlattenObservations):
    register_env("GridWorld", lambda env_config: GridWorld(env_config))
    return (PPOConfig()
            .environment("GridWorld", env_config={"size": 5})
            .env_runners(num_env_runners=0, num_envs_per_env_runner=4,
                         env_to_module_connector=lambda env, spaces, device: FlattenObservations())
            .learners(num_learners=0)
            .training(lr=1e-3, train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=6,
                      gamma=0.99, lambda_=0.95, clip_param=0.2, vf_clip_param=10.0,
                      vf_loss_coeff=0.5, entropy_coeff=0.01, use_kl_loss=False, grad_clip=0.5)
            .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"})
            .debugging(seed=0))


grid_diff = side_by_side.code_diff(grid_world_ppo)
display(Markdown(side_by_side.diff_markdown(grid_world_ppo)))
GRID_TARGET = 0.9  # the goal, reached in a few steps from most starting cells (1 - 0.01 per step)
line = display("starting...", display_id=True)
grid_runs = {package: side_by_side.run(grid_world_ppo, package, target_return=GRID_TARGET,
                                       max_env_steps=40_000, progress=line.update)
             for package in side_by_side.PACKAGES}
side_by_side.plot_runs(list(grid_runs.values()), target=GRID_TARGET, title="PPO on a custom GridWorld")
grid_ratio = compare(grid_runs, GRID_TARGET)
"""),
    md("""
## 6. The result keys, checked

The lessons read a handful of result keys. Both libraries' last PPO results are here, so the
check is direct: every key the course reads, present (or not) in each.
"""),
    code("""
COURSE_KEYS = ["env_runners/episode_return_mean", "env_runners/episode_len_mean",
               "env_runners/num_episodes", "num_env_steps_sampled_lifetime",
               "learners/default_policy/policy_loss", "learners/default_policy/vf_loss",
               "learners/default_policy/entropy", "training_iteration"]


def has_key(result, path):
    for part in path.split("/"):
        if not isinstance(result, dict) or part not in result:
            return False
        result = result[part]
    return True


key_table = {key: {package: has_key(one.last_result, key) for package, one in ppo_runs.items()}
             for key in COURSE_KEYS}
for key, present in key_table.items():
    print(f"{key:>38}: " + ", ".join(f"{p} {'yes' if ok else 'NO'}" for p, ok in present.items()))
only_rllib = sorted(set(ppo_runs["ray.rllib"].last_result) - set(ppo_runs["rlcourse"].last_result))
print("top-level keys only RLlib reports:", ", ".join(only_rllib))
"""),
    md("""
## 7. The name map: rlcourse file → RLlib file

Paths in RLlib are under `ray/rllib/` in the installed package (or `rllib/` in Ray's repository).

| rlcourse | RLlib | notes |
|---|---|---|
| `rlcourse/algorithms/algorithm_config.py` | `algorithms/algorithm_config.py` | same setters and setting names; RLlib has many more settings |
| `rlcourse/algorithms/algorithm.py`, `evaluation.py`, `trained_module.py`, `algorithm_state.py` | `algorithms/algorithm.py` | RLlib's `Algorithm` *is* a Tune `Trainable`; rlcourse builds one on demand (`rlcourse/tune/`); RLlib writes evaluation, `get_module` and `get_state` in that one file |
| `rlcourse/algorithms/checkpointable.py` | `utils/checkpoints.py` (`Checkpointable`) | the same base class: `get_state` / `set_state` to write, `save_to_path`, `restore_from_path`, `from_checkpoint` given |
| `rlcourse/core/__init__.py` | `core/__init__.py` | `DEFAULT_MODULE_ID`, `ALL_MODULES` |
| `rlcourse/algorithms/ppo/ppo.py`, `ppo_learner.py` | `algorithms/ppo/ppo.py`, `ppo/torch/ppo_torch_learner.py` | same loss terms and settings |
| `rlcourse/utils/postprocessing.py` (GAE) | `connectors/learner/general_advantage_estimation.py` | a function here, a learner connector there |
| `rlcourse/algorithms/impala/impala.py`, `learner_thread.py` | `algorithms/impala/impala.py`, `impala_learner.py` | RLlib: aggregator actors, a circular buffer, `min_time_s_per_iteration` |
| `rlcourse/algorithms/impala/vtrace.py` | `algorithms/impala/torch/vtrace_torch_v2.py` | the same V-trace |
| `rlcourse/algorithms/dqn/dqn.py`, `rlcourse/algorithms/sac/sac.py` | `algorithms/dqn/dqn.py`, `algorithms/sac/sac.py` | |
| `rlcourse/algorithms/apex_dqn/apex_dqn.py` | none in the new API stack | Ape-X was RLlib's old-stack algorithm |
| `rlcourse/env/env_runner.py`, `rlcourse/env/single_agent_env_runner.py` | `env/env_runner.py`, `env/single_agent_env_runner.py` | RLlib's runs torch modules and connector pipelines |
| `rlcourse/env/env_runner_group.py`, `async_sampling.py` | `env/env_runner_group.py` | |
| `rlcourse/env/single_agent_episode.py`, `rlcourse/env/multi_agent_episode.py` | `env/single_agent_episode.py`, `env/multi_agent_episode.py` | |
| `rlcourse/env/registry.py` (`register_env`) | Ray Tune's `ray/tune/registry.py` (`register_env`) | outside RLlib: Tune's registry |
| `rlcourse/core/rl_module/rl_module.py` | `core/rl_module/rl_module.py`, `algorithms/ppo/default_ppo_rl_module.py` | rlcourse's runners use `numpy_mlp.py` instead of torch |
| `rlcourse/core/learner/learner.py`, `learner_group.py` | `core/learner/learner.py`, `learner_group.py` | |
| `rlcourse/connectors/env_to_module/` | `connectors/env_to_module/` | a list of callables here; pipelines with many more pieces there |
| `rlcourse/utils/replay_buffers/` | `utils/replay_buffers/episode_replay_buffer.py`, `prioritized_episode_buffer.py` | |
| `rlcourse/callbacks/callbacks.py` | `callbacks/callbacks.py` | same hook names |
| `rlcourse/utils/metrics/metrics_logger.py` | `utils/metrics/metrics_logger.py` | |
| `rlcourse/utils/checkpoints.py` | `utils/checkpoints.py` | rlcourse's checkpoints are not RLlib's and do not load there |

**Settings** keep their names (section 2 read both libraries' values of the same names), with
these exceptions met in this course: RLlib's `min_time_s_per_iteration`,
`circular_buffer_num_batches` / `circular_buffer_iterations_per_batch` (IMPALA),
and `num_aggregator_actors_per_learner` have no rlcourse counterpart (rlcourse refuses them by
name). RLlib's old names fail in rlcourse with the new name to use; RLlib 2.60
itself refuses some (`num_rollout_workers`, `sgd_minibatch_size`) but only warns about others and
goes on (`num_sgd_iter`). **Result keys**: section 6
printed them; the course reads only keys RLlib also reports, at the same paths (IMPALA's learner
keys aside: RLlib's `pi_loss`, `vf_loss` summed and `mean_vf_loss`, against rlcourse's
`policy_loss` and `vf_loss` as means). RLlib also reports what Tune reads (`time_total_s`,
`time_this_iter_s`, `done`, `trial_id`, ...): for rlcourse, Tune adds them when it runs an
algorithm as a trainable (`rlcourse/tune/`).

## 8. What RLlib has that the course leaves out

rlcourse is a teaching copy of the new API stack's core loop. RLlib also has:

- the **old API stack** (`Policy`, `RolloutWorker`, `SampleBatch`, `ModelV2`), still in many
  tutorials and in `api_stack(enable_rl_module_and_learner=False, ...)`;
- **TensorFlow** (old stack) and JAX pieces; rlcourse is PyTorch only;
- **offline RL** beyond lesson 13's BC, MARWIL and CQL: IQL, packed episodes, compressed columns,
  and learners that each read their own split of the data;
- the **connector pipelines** in full: prev. actions and rewards, agent-to-module mapping, and
  connectors for the off-policy algorithms (lesson 12 showed frame stacking and recurrent state);
- **many more algorithms**: DreamerV3, TQC, IQL, and more (rlcourse has PPO, IMPALA, APPO, DQN,
  Ape-X, SAC, BC, MARWIL and CQL);
- **Tune integration** details: `Algorithm` as a `Trainable` directly, `tune.Tuner(PPO, ...)`,
  its own checkpoint format (`Checkpointable`), Tune's loggers and callbacks;
- **several GPUs per learner** and aggregator actors (lesson 04 showed GPU learners joined by NCCL
  and `num_gpus_per_env_runner`);
- `PettingZoo` / `OpenSpiel` wrappers, attention models, LSTMs for IMPALA/APPO and multi-agent
  modules (lesson 12 showed PPO with an LSTM; lesson 14, simulators connected over TCP).

## Summary

- A config written for rlcourse runs on RLlib with only its imports changed: the diffs above.
- Section 2 compares PPO's defaults in both libraries live (the course keeps them equal, and a test
  fails if they drift); the settings that make CartPole learn fast are not the defaults, so write
  out every setting that matters.
- On this machine, in this run, the printed lines give each library's time to the same return
  and their ratio; the curves show both the per-step and the per-second picture.

**Read next in the source**
- `rlcourse/course/side_by_side.py`: how the same function runs on either library.
- RLlib's `algorithms/ppo/ppo.py` (`training_step`) beside `rlcourse/algorithms/ppo/ppo.py`.
- RLlib's `env/single_agent_env_runner.py` (`_sample`) beside `rlcourse/env/env_runner.py`.
"""),
    concept_checks_cell("15"),
    code("""
# Lesson check: every diff changed imports only; both libraries reached the PPO target on CartPole
# and on the custom env, and the wall-time ratio was measured; every course key is in both results.
for diff in (ppo_diff, impala_diff, grid_diff):
    changed = [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed and all(" import " in line for line in changed), diff
for runs, target in ((ppo_runs, TARGET), (grid_runs, GRID_TARGET)):
    assert all(time_to_return(one.rows, target) for one in runs.values()), runs
assert ppo_ratio is not None and grid_ratio is not None
assert time_to_return(impala_runs["rlcourse"].rows, IMPALA_TARGET), impala_runs["rlcourse"].rows[-1]
assert all(all(present.values()) for present in key_table.values()), key_table
ray.shutdown()
impala_line = (f"IMPALA {impala_ratio:.1f}x, " if impala_ratio else
               "IMPALA: RLlib did not reach the target in its budget, ")
print(f"Lesson 15 complete: RLlib / rlcourse wall time to the same return: PPO CartPole "
      f"{ppo_ratio:.1f}x, {impala_line}custom env {grid_ratio:.1f}x (this run).")
"""),
]

if __name__ == "__main__":
    write_lesson(NAME, CELLS)
