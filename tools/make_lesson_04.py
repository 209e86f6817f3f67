"""Writes lessons/04_scaling.ipynb from the cells below (outputs stripped)."""

from lesson_cells import code, concept_checks_cell, md, write_lesson

NAME = "04_scaling.ipynb"

CELLS = [
    md("""# Lesson 04 — Scaling: more runners, more sub-envs, more learners

**By the end of this lesson you can**
1. name the three axes an RLlib-style algorithm scales along (`num_env_runners`,
   `num_envs_per_env_runner`, `num_learners`) and what each one costs;
2. measure sampling throughput, speed-up and scaling efficiency, and explain why a CPU-bound env stops
   gaining at the number of cores while an env that waits keeps gaining;
3. choose between `SYNC` and `ASYNC` sub-env vectorization;
4. run data-parallel learners and say what their all-reduce does;
5. read the GPU settings, and the error you get when you ask for a GPU the machine does not have.

**Time:** about 45 minutes of study (two exercises); the cells run in a minute or two on 2 idle
cores (measured there; longer on a busy or 1-CPU machine), most of it measuring. Terms: see the [glossary](../docs/glossary.md)."""),
    md("""## 1. Three axes

```
this notebook (the driver): Algorithm
 ├── EnvRunner actor 1 ── sub-env 1, sub-env 2, ...    num_env_runners x num_envs_per_env_runner
 ├── EnvRunner actor 2 ── sub-env 1, sub-env 2, ...        (sampling: the episodes)
 ├── ...
 ├── Learner actor 1 ─┐                                num_learners
 └── Learner actor 2 ─┴─ all-reduce of the gradients      (learning: the updates)
```

| axis | setting | what it buys | what it costs |
|---|---|---|---|
| more runners | `.env_runners(num_env_runners=N)` | N processes step envs in parallel | a process each (measured below: some 60 MB of its own), a CPU share |
| more sub-envs | `.env_runners(num_envs_per_env_runner=M)` | one forward pass acts for M envs at once | nothing extra with `SYNC`; a process per sub-env with `ASYNC` |
| more learners | `.learners(num_learners=K)` | each learner updates on 1/K of the batch | a torch process each (~180 MB private memory, `benchmarks/startup_memory.py`), an all-reduce per step |

Every actor also says what it **reserves**: `num_cpus_per_env_runner`, `num_cpus_per_learner`,
`num_gpus_per_...`. A reservation is bookkeeping for Ray's scheduler, not a limit: a runner that
reserved 0.25 CPU still uses a whole core when it can. Fractions are how 8 runners fit into the 2 CPUs this lesson gives Ray."""),
    code("""import time

import matplotlib.pyplot as plt
import numpy as np
import ray

from rlcourse import PPOConfig
from rlcourse.utils.resources import init_ray

init_ray(num_cpus=2)

config = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=4, num_envs_per_env_runner=8, num_cpus_per_env_runner=0.25)
    .learners(num_learners=2, num_cpus_per_learner=0.5)
)
sub_envs = config.num_env_runners * config.num_envs_per_env_runner
reserved = (config.num_env_runners * config.num_cpus_per_env_runner
            + config.num_learners * config.num_cpus_per_learner)
print(f"{sub_envs} sub-envs in all; a train batch of {config.total_train_batch_size} steps takes "
      f"{config.get_rollout_fragment_length()} steps from each")
print(f"{config.num_learners} learners each update on {config.train_batch_size_per_learner} of them")
print(f"CPUs reserved: {reserved:g} of the cluster's {ray.cluster_resources()['CPU']:g}")"""),
    md("""What does one runner process cost? Start one EnvRunner actor (a CartPole and the NumPy policy)
and ask the operating system: **USS** is the memory only this process uses, **PSS** adds its share
of pages it shares with other processes (libraries)."""),
    code("""import os

import psutil

from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner

probe = PPOConfig().environment("CartPole-v1")
runner = ray.remote(SingleAgentEnvRunner).options(num_cpus=0.25).remote(
    probe, probe.get_env_creator(), worker_index=1)
memory = psutil.Process(ray.get(runner.__ray_call__.remote(lambda self: os.getpid()))).memory_full_info()
runner_mb = memory.pss / 2**20
print(f"one runner process: USS {memory.uss / 2**20:.0f} MB, PSS {runner_mb:.0f} MB "
      f"(Python, NumPy, gymnasium and Ray's worker; no torch)")
ray.kill(runner)"""),
    md("""## 2. The scaling lab: where do the cores run out?

The lab measures **env steps per second** that an `EnvRunnerGroup` of real runner actors samples,
for several numbers of runners. Each measurement builds the runners, gives them the weights of a
freshly built network (two layers of 64, the size the lessons train on CartPole), and times the
runners' `sample()` requests, sent to N runners at once as `EnvRunnerGroup.sample()` sends them in
PPO's training step (start-up is not timed). One sweep starts its largest number of runners once and
times the first 1, 2, 4, ... of them: a runner that is not asked to sample waits and uses no CPU. From the
rates it computes

- **speed-up** = throughput with N runners / throughput with 1 runner, and
- **scaling efficiency** = speed-up / N (1.0: every runner added a full runner's worth).

The lab's env menu has three kinds:
- **CPU-bound CartPole**: a step is some tens of microseconds of Python and NumPy; the runner's core is
  busy all the time.
- **Latency-bound CartPole** (`rlcourse.course.envs.LatencyBoundCartPole`): the same CartPole, but each
  step first *waits* 5 ms, like an env that talks to a slow simulator, a game engine or a robot.
  Waiting needs no core.
- **Continuous-action Pendulum-v1**: actions are real numbers (a `Box`), so the runners sample a
  Gaussian and clip it into the torque limits. CPU-bound too; lesson 09 trains SAC on it.

Pick settings and press **Run** (each run is added to the chart, so you can compare). Try 1, 2, 4
and 8 runners with each env kind, then more sub-envs per runner."""),
    code("""from rlcourse.course.scaling_lab import ScalingLab

lab = ScalingLab(workers=(1, 2, 4, 8), duration_s=1.5)
lab.display()"""),
    md("""The cells below run the same two sweeps from code: `lab.run(...)` is what the Run button
calls, with the controls set to these values. Its progress shows in the lab above and here."""),
    code("""cpu_rows = lab.run(env_kind="cpu_bound", workers=(1, 2, 4, 8), num_envs_per_env_runner=1,
                  gym_env_vectorize_mode="SYNC")"""),
    code("""latency_rows = lab.run(env_kind="latency_bound")"""),
    code("""lab.plot()
plt.show()"""),
    md("""**Reading the chart.** Both axes of the throughput chart are logarithmic: every ideal line
is a diagonal of the same slope, and a flat line means that runners stopped adding anything.
A CPU-bound env gains runners only up to the number of cores: C cores run C busy processes, more
runners only take turns on them, and the driver also needs CPU to receive their episodes. Its
efficiency then falls like C/N. The latency-bound env stays close to its ideal line: while one
runner waits, the others step. What this machine measured:"""),
    code("""from rlcourse.course.doctor import usable_cpus

cores = usable_cpus()
cpu_best = max(cpu_rows, key=lambda row: row["env_steps_per_s"])
latency_best = max(latency_rows, key=lambda row: row["env_steps_per_s"])
print(f"This machine gives the lesson {cores:g} CPU core(s) (Ray schedules {ray.cluster_resources()['CPU']:g}).")
print(f"CPU-bound: the most env steps/s with {cpu_best['workers']} runner(s), {cpu_best['speedup']:.2f}x "
      f"over 1 runner; with {cpu_rows[-1]['workers']} runners {cpu_rows[-1]['speedup']:.2f}x.")
print(f"Latency-bound: {latency_rows[-1]['speedup']:.2f}x with {latency_rows[-1]['workers']} runners "
      f"(efficiency {latency_rows[-1]['efficiency']:.0%}).")
if cpu_best["speedup"] < 0.75 * min(cores, cpu_best["workers"]):
    print("The CPU-bound speed-up is below what the cores allow: the driver, and any other program "
          "on this machine, used CPU during the measurement.")"""),
    md("""

The lesson for a real project: measure what your env's step spends its time on. If it computes,
runners beyond your core count buy nothing (use a bigger machine or cluster, lesson 06). If it
waits (a simulator in another process, a remote service, a rendering pipeline), runners are cheap
and many of them pay off even on a laptop."""),
    md("""### Exercise 1: speed-up and efficiency

Write `speedup_and_efficiency(throughputs)`: from env steps/s by number of runners, return the
speed-up over 1 runner and the scaling efficiency for every runner count, as two dicts keyed by the
count. The checker calls it on your CPU-bound measurements and on tables of its own (so compute, do
not type numbers). Stuck? `show_solution("scaling_table")`."""),
    code("""from rlcourse.course.exercises import check_scaling_table, show_solution

throughputs = {row["workers"]: row["env_steps_per_s"] for row in cpu_rows}


def speedup_and_efficiency(throughputs):
    \"\"\"Return (speedups, efficiencies), two dicts keyed by runner count like `throughputs`.

    Hints: speed-up = throughput with N runners / throughput with 1 runner;
    efficiency = speed-up / N (1.0: every runner added a full runner's worth).
    \"\"\"
    # TODO: two dict comprehensions, then delete the raise.
    raise NotImplementedError("TODO: speed-up and efficiency")


speedup_and_efficiency = check_scaling_table(speedup_and_efficiency, throughputs)
speedups, efficiencies = speedup_and_efficiency(throughputs)
print({n: f"{speedups[n]:.2f}x, {efficiencies[n]:.0%}" for n in speedups})"""),
    md("""## 3. Sub-envs: SYNC or ASYNC?

A runner with M sub-envs steps them as one *vector env* and computes all M actions in one forward
pass. `gym_env_vectorize_mode` decides how the sub-envs step:
- `"SYNC"`: one after another, in the runner's own process. No extra processes, no copying.
- `"ASYNC"`: each sub-env in its own subprocess; the runner sends the M actions through pipes and
  the sub-envs step **at the same time**, then it collects the M results.

### Exercise 2: predict before you measure

One runner has `num_envs` sub-envs of the latency-bound env, each step waits `step_latency_s`, and
everything else is free. Write `predict_steps_per_s(num_envs, step_latency_s, mode)`: how many env
steps per second do you expect with `"SYNC"`, and with `"ASYNC"`? The checker tries several
settings; below we measure 4 sub-envs waiting 5 ms. Stuck? `show_solution("vectorize_prediction")`."""),
    code("""from rlcourse.course.exercises import check_vectorize_prediction


def predict_steps_per_s(num_envs, step_latency_s, mode):
    \"\"\"Env steps per second of one runner; mode is "SYNC" or "ASYNC".

    Hint: how long does one vector step (one step of every sub-env) take, and how many env steps
    does it give?
    \"\"\"
    # TODO: two cases, then delete the raise.
    raise NotImplementedError("TODO: predict SYNC and ASYNC")


predict_steps_per_s = check_vectorize_prediction(predict_steps_per_s)
sync_prediction = predict_steps_per_s(4, 0.005, "SYNC")
async_prediction = predict_steps_per_s(4, 0.005, "ASYNC")"""),
    md("""Now measure it: one runner with 4 sub-envs, both env kinds, both modes."""),
    code("""from rlcourse.course.scaling_diagrams import throughput_bars
from rlcourse.course.scaling import ENV_KINDS, measure_throughput, scaling_config

vectorize = {}
for kind in ("cpu_bound", "latency_bound"):
    for mode in ("SYNC", "ASYNC"):
        config = scaling_config(1, num_envs_per_env_runner=4, env_kind=kind,
                                gym_env_vectorize_mode=mode, num_cpus_per_env_runner=1)
        vectorize[kind, mode] = measure_throughput(config, duration_s=1.0)
        print(f"{kind:>13} {mode:>5}: {vectorize[kind, mode]:8,.0f} env steps/s", flush=True)

throughput_bars({(ENV_KINDS[kind].label, mode): rate for (kind, mode), rate in vectorize.items()},
                predictions=(ENV_KINDS["latency_bound"].label,
                             {"SYNC": sync_prediction, "ASYNC": async_prediction}))"""),
    md("""`ASYNC` wins when a step takes long compared with sending it through a pipe to another
process (here about a millisecond): slow simulators, envs that wait, heavy physics. `SYNC` wins for
cheap steps like CartPole's, where the pipes cost far more than the step itself. The measured rates
stay below your predictions by exactly those overheads: a 5 ms sleep takes a little longer, and each
ASYNC vector step pays its round trip through the pipes."""),
    md("""## 4. Data-parallel learners

With `num_learners=K`, K Learner actors each hold a copy of the network. The batch is split into
K shards; each learner computes the gradient of the loss on its own shard, and then they
**all-reduce**: every learner sends its gradient and receives the sum of all of them, so every
learner takes the same, averaged step and the copies stay identical. (`rlcourse` weights each
shard's gradient by its size, so the average equals the gradient of the whole batch.)"""),
    code("""from rlcourse.course.scaling_diagrams import all_reduce

all_reduce()"""),
    md("""
Here is the arithmetic on a small least-squares problem, with two uneven shards:"""),
    code("""rng = np.random.default_rng(0)
x, y, w = rng.normal(size=(300, 3)), rng.normal(size=300), np.zeros(3)


def gradient(xs, ys, w):
    return 2 * xs.T @ (xs @ w - ys) / len(xs)   # of the mean squared error


shards = [(x[:180], y[:180]), (x[180:], y[180:])]                       # learner 0, learner 1
sent = [np.append(gradient(xs, ys, w) * len(xs), len(xs)) for xs, ys in shards]
received = sent[0] + sent[1]                                            # the all-reduce (a sum)
averaged = received[:-1] / received[-1]                                 # what each learner applies
print("gradient of the whole batch:", gradient(x, y, w).round(4))
print("after the all-reduce:       ", averaged.round(4))"""),
    md("""`Learner.apply_gradients` does exactly this with `torch.distributed.all_reduce` (gloo)
after each backward pass. Now train PPO with two learner actors (half a core each) and two runners,
following it on a `TrainingDashboard`, and then ask both learners for their weights. The
`.training(...)` and `.rl_module(...)` settings are those of `tuned_examples/ppo/cartpole_ppo.py`
(PPOConfig's defaults are RLlib's, which suit large problems) with one change, `num_epochs=4`
instead of 6: these four iterations only show that the two learners stay identical, and fewer
epochs make each iteration quicker."""),
    code("""from rlcourse.course.dashboard import TrainingDashboard, train

config = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=2, num_envs_per_env_runner=4, num_cpus_per_env_runner=0.25)
    .learners(num_learners=2, num_cpus_per_learner=0.5)
    .training(lr=3e-3, train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=4,
              lambda_=0.95, clip_param=0.2, vf_clip_param=1000.0, vf_loss_coeff=0.5,
              use_kl_loss=False, grad_clip=0.5)
    .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False})
    .debugging(seed=0)
)
dashboard = TrainingDashboard(max_iterations=4, title="PPO with 2 data-parallel learners")
dashboard.display()
with config.build_algo() as algo:
    learner_results = train(algo, dashboard)
    learner_weights = algo.learner_group.foreach_learner("get_weights")

identical = all(np.array_equal(learner_weights[0][name], learner_weights[1][name])
                for name in learner_weights[0])
print(f"{len(learner_weights)} learners, {len(learner_weights[0])} weight tensors each; "
      f"identical after {len(learner_results)} iterations: {identical}")
print("env steps trained per iteration (both shards):",
      learner_results[-1]["learners"]["__all_modules__"]["num_env_steps_trained"])"""),
    md("""Here both learners share the same few cores (this machine's count is printed above), so two
learners are not faster than one: they take turns on the cores and add an all-reduce per step. Data-parallel learning pays off when each learner has its own GPU or machine
and the batch is large.

## 5. GPUs

- `.learners(num_gpus_per_learner=1)`: each Learner actor reserves a GPU from Ray's scheduler
  (with `num_learners=0`, the learner in the driver asks for the local one) and computes on it, as
  RLlib's does: its module, optimizer state and batches live on that CUDA device (`Learner.device`).
  Learners with a GPU each all-reduce with NCCL; two with 0.5 GPU share one, and use gloo. The
  course's networks are tiny and often as fast on the CPU: `benchmarks/gpu_learner.py` measures both.
- `.env_runners(num_gpus_per_env_runner=0.25)`: runners reserve (a fraction of) a GPU, for envs that
  render or simulate on it, or for a large torch policy network (a custom module runs there). The
  default policy stays in NumPy: small networks like ours are faster on the runner's CPU.

Ray waits forever for an actor whose resources no node has. `rlcourse` checks the request against
the cluster when the algorithm is built, and fails at once, naming the setting and the fix:"""),
    code("""from rlcourse.utils.validation import ConfigError

has_gpu = ray.cluster_resources().get("GPU", 0) >= 1
gpu_error = None
start = time.perf_counter()
try:
    gpu_algo = (PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
                .learners(num_learners=1, num_gpus_per_learner=1).build_algo())
except ConfigError as e:
    gpu_error = e
    print(f"ConfigError after {time.perf_counter() - start:.1f} s:\\n{e}")
else:
    print("This machine has a GPU: Ray reserved it for the learner actor.")
    gpu_algo.stop()"""),
    md("""## Summary

- Three axes: **runners** (parallel sampling processes), **sub-envs per runner** (batched acting),
  **learners** (data-parallel updates joined by an all-reduce of gradients).
- `num_cpus_...` and `num_gpus_...` are reservations for Ray's scheduler; fractions let many actors
  share a core.
- A CPU-bound env saturates at the number of cores; an env that waits keeps scaling with runners.
- A runner is a process of some 60 MB (measured above); a torch learner costs more.
  Measure speed-up and efficiency before buying runners.
- `SYNC` for cheap steps, `ASYNC` for slow or waiting ones.

**Read next in the source**
- `rlcourse/env/env_runner_group.py`, `EnvRunnerGroup.sample`: how a batch is split over the runners,
  and `sync_weights`: one `ray.put` for all of them.
- `rlcourse/core/learner/learner.py`, `Learner.apply_gradients`: the all-reduce of the gradients.
- `rlcourse/course/scaling.py`, `measure_throughput`: how the lab measures.
- `rlcourse/course/envs.py`: the latency-bound env, a wrapper of ten lines."""),
    md("""
## Papers

- Moritz et al., *Ray: A Distributed Framework for Emerging AI Applications*, OSDI 2018
  ([arXiv:1712.05889](https://arxiv.org/abs/1712.05889)): actors with resource requests, the scheduler that places them by what they reserve.
- Liang et al., *RLlib: Abstractions for Distributed Reinforcement Learning*, ICML 2018
  ([arXiv:1712.09381](https://arxiv.org/abs/1712.09381)): scaling RL by adding sampling workers (EnvRunners) around one learning step.
- Li et al., *PyTorch Distributed: Experiences on Accelerating Data Parallel Training*, VLDB 2020
  ([arXiv:2006.15704](https://arxiv.org/abs/2006.15704)): data-parallel training by an all-reduce of
  the gradients, as the Learner actors of section 4 do with `torch.distributed`.

All the course's papers, and the lessons that use them: [docs/key_papers.md](../docs/key_papers.md).
"""),
    concept_checks_cell("04"),
    code("""# Lesson check: every scaling row and both vectorization modes were measured (how much they
# scale depends on the machine and how busy it is: the tables above say what this one did), and
# data-parallel learning gave the same weights as one learner.
assert all(row["env_steps_per_s"] > 0 for row in cpu_rows + latency_rows), (cpu_rows, latency_rows)
assert all(rate > 0 for rate in vectorize.values()), vectorize
assert identical and len(learner_results) == 4
assert has_gpu or gpu_error.setting == "num_gpus_per_learner"
ray.shutdown()
print("Lesson 04 complete.")"""),
]

if __name__ == "__main__":
    print(write_lesson(NAME, CELLS))
