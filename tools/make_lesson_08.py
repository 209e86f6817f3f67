"""Writes lessons/08_serving_a_policy.ipynb (outputs stripped): python tools/make_lesson_08.py"""

from lesson_cells import code, concept_checks_cell, md, write_lesson

NAME = "08_serving_a_policy.ipynb"

CELLS = [
    md("""
# Lesson 08 — From a trained policy to a served one

**By the end of this lesson you can**
1. write **callbacks** with RLlib's hooks and log a **custom metric** from the EnvRunners, reduced
   across them into `train()`'s results (exercise);
2. train with **evaluation on its own runners**, in parallel with training, and keep the **best
   checkpoint** beside the latest;
3. survive a crash: resume from the latest checkpoint and continue **exactly** where the run was;
4. act **without an Algorithm**: `RLModule.from_checkpoint` and `forward_inference`, then export
   the policy to one file that runs with torch alone;
5. **serve** it with Ray Serve over HTTP, act from a client-side env loop, and load-test it.

**Time:** about 45 minutes of study (one exercise); the cells run in about two minutes on 2 idle
cores (measured there; longer on a busy or 1-CPU machine).
Terms: see the [glossary](../docs/glossary.md).
"""),
    code("""
import os
import shutil
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import matplotlib.pyplot as plt
import numpy as np
import psutil
import ray
import torch

from rlcourse import PPOConfig
from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.core.rl_module.export import export_policy
from rlcourse.core.rl_module.rl_module import RLModule
from rlcourse.course import serving_diagrams
from rlcourse.course.load_test import run_in_process, run_load
from rlcourse.serve import app as serve_app
from rlcourse.serve.client import PolicyClient, ServeRequestError, run_episode
from rlcourse.utils.checkpoint_keeper import CheckpointKeeper

ray.shutdown()  # a re-run starts from a clean slate
WORKDIR = Path(tempfile.mkdtemp(prefix="lesson08_"))
print(f"this machine: {os.cpu_count()} CPUs, {psutil.virtual_memory().total / 2**30:.1f} GiB of memory")
"""),
    md("""
## 1. A custom metric from the runners (exercise)

`train()` reports what every algorithm measures: returns, episode lengths, steps. What *your*
problem cares about is yours to add, with **callbacks**: a subclass of `Callbacks` whose hooks
rlcourse calls at fixed points, with RLlib's names:

| hook | runs in | when |
|---|---|---|
| `on_episode_start`, `on_episode_step`, `on_episode_end` | each EnvRunner | an episode resets, steps, ends |
| `on_sample_end` | each EnvRunner | after every `sample()` |
| `on_train_result`, `on_evaluate_start/end`, `on_checkpoint_loaded` | the driver | after `train()`, around evaluation, after a restore |

Episode hooks run inside the runner actors, other processes: they cannot append to a list in
this notebook. They log instead: `metrics_logger.log_value(key, value, reduce="mean")`. What each
runner logs travels back with its samples, and the Algorithm reduces the values of all runners
into `result["env_runners"][key]` (`reduce`: `"mean"`, `"max"`, `"min"` over a `window` of values,
or `"sum"`, a running total).

### Exercise: `PoleWobble`

Log, once per finished CartPole episode, how much the pole **wobbled**: the mean |pole angle|
(observation index 2) over the episode's steps, under the key `"pole_wobble"`, so that each
result's `pole_wobble` is the mean over that iteration's episodes. A good policy keeps
the pole still, so the wobble should fall as the policy learns.

Two facts make this harder than it looks, as in RLlib:
- `on_episode_end` receives the episode's **last chunk** only: an episode often spans several
  `sample()` calls. `episode.t` still counts every step since the reset.
- One `Callbacks` object serves all sub-envs of a runner, whose episodes run at the same time.
  `episode.custom_data` is a dict that belongs to one episode, from `on_episode_start` to
  `on_episode_end`; in `on_episode_step`, `episode.get_observations(-1)` is the newest observation.

The checker runs your class on an EnvRunner with 4 sub-envs and short fragments, and compares every
value you log with the truth. Stuck? `show_solution("pole_wobble")`.
"""),
    code("""
from rlcourse.callbacks import Callbacks
from rlcourse.course.exercises import check_pole_wobble_callbacks, show_solution


class PoleWobble(Callbacks):
    def on_episode_start(self, *, episode, **kwargs):
        pass  # TODO (if you need it)

    def on_episode_step(self, *, episode, **kwargs):
        pass  # TODO (if you need it)

    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        raise NotImplementedError("TODO: log the episode's mean |pole angle| as 'pole_wobble'")


PoleWobble = check_pole_wobble_callbacks(PoleWobble)
"""),
    md("""
## 2. Evaluation on its own runners, and the best checkpoint

The return `train()` reports is measured while the policy **explores** (it samples its actions),
averaged over the last 100 episodes, most of them played by older policies. To know how good the
policy is *now*, evaluate it: `evaluation_interval=2` runs `evaluation_duration` episodes every 2
iterations, greedily, on `evaluation_num_env_runners` runners of their own. With
`evaluation_parallel_to_training=True` those runners evaluate the weights an iteration starts with
while the training runners sample, instead of after them (RLlib does the same).

`CheckpointKeeper` saves the **latest** checkpoint after every iteration and copies it to **best**
when the evaluation return beats every earlier one (Tune does the same with
`CheckpointConfig(checkpoint_score_attribute=..., num_to_keep=...)`). Since a parallel evaluation
scored the weights its iteration *started* with, the keeper keeps the checkpoint of the iteration
before as best: the weights that earned the score. The last iteration is not always the best: PPO's
greedy return goes up and down as it learns.
"""),
    code("""
config = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=1, num_envs_per_env_runner=4, num_cpus_per_env_runner=0.5)
    # The course's CartPole settings (tuned_examples/ppo/cartpole_ppo.py); PPOConfig's own defaults
    # are RLlib's, sized for large problems.
    .training(lr=3e-3, train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=6,
              lambda_=0.95, clip_param=0.2, vf_clip_param=1000.0, vf_loss_coeff=0.5,
              use_kl_loss=False, grad_clip=0.5)
    .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False})
    .evaluation(evaluation_interval=2, evaluation_duration=10, evaluation_num_env_runners=1,
                evaluation_parallel_to_training=True)
    .callbacks(PoleWobble)
    .debugging(seed=0)
)
ITERATIONS = 10
start = time.perf_counter()
algo = config.build_algo()
keeper = CheckpointKeeper(WORKDIR / "run", metric="evaluation/env_runners/episode_return_mean")
history = []
for _ in range(ITERATIONS):
    result = algo.train()
    new_best = keeper.update(algo, result)
    history.append(result)
    evaluation = result.get("evaluation", {}).get("env_runners", {}).get("episode_return_mean")
    print(f"iteration {result['training_iteration']:2d}: training return "
          f"{result['env_runners']['episode_return_mean']:6.1f}, wobble "
          f"{result['env_runners'].get('pole_wobble', float('nan')):.4f}"
          + (f", evaluation {evaluation:6.1f}" if evaluation is not None else "")
          + ("  <- new best" if new_best else ""), flush=True)
train_seconds = time.perf_counter() - start
print(f"{ITERATIONS} iterations in {train_seconds:.1f} s; best: iteration {keeper.best_iteration} "
      f"(evaluation return {keeper.best_score:.1f}); saved: {sorted(p.name for p in keeper.root.iterdir())}")
"""),
    code("""
iterations = [r["training_iteration"] for r in history]
# A parallel evaluation in iteration k scored the weights after iteration k - 1: plot it there.
evaluated = [(r["training_iteration"] - 1, r["evaluation"]["env_runners"]["episode_return_mean"])
             for r in history if "evaluation" in r]
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.2))
left.plot(iterations, [r["env_runners"]["episode_return_mean"] for r in history], label="training (exploring, last 100 episodes)")
left.plot(*zip(*evaluated), "o-", label="evaluation of these weights (greedy, 10 episodes)")
left.axvline(keeper.best_iteration, color="grey", ls="--", label="best checkpoint")
left.set(xlabel="iteration (weights after it)", ylabel="return", title="return")
left.legend(fontsize=8)
right.plot(iterations, [r["env_runners"].get("pole_wobble", np.nan) for r in history], "o-")
right.set(xlabel="iteration", ylabel="mean |pole angle| (rad)", title="pole_wobble, your custom metric")
plt.tight_layout()
plt.show()
"""),
    md("""
## 3. A crash, and an exact resume

A long run dies: the machine is preempted, the kernel restarts, a node is lost. Because the keeper
saved a checkpoint after every iteration, the run loses at most one iteration. A checkpoint holds
*everything* the next iteration depends on: the weights, the optimizer's moments, the random
number generators, the runners' half-played episodes and the metrics' windows. So the resumed run
does not just continue, it continues **exactly**: below, the run trains one more iteration, then
"crashes" (it is stopped without saving); the resumed run repeats that iteration from the latest
checkpoint and gets the same weights and the same numbers.
"""),
    code("""
before_crash = algo.train()  # iteration 11: computed, but never saved
weights_before_crash = algo.get_module().get_state()
algo.stop()  # the crash: everything in memory is gone

start = time.perf_counter()
algo = Algorithm.from_checkpoint(keeper.latest_path, allowed=[PoleWobble])
print(f"resumed from {keeper.latest_path.name}/ at iteration {algo.iteration} in {time.perf_counter() - start:.1f} s")
after_resume = algo.train()
same_weights = all(np.array_equal(value, algo.get_module().get_state()[name])
                   for name, value in weights_before_crash.items())
for key in ("episode_return_mean", "num_env_steps_sampled_lifetime", "pole_wobble"):
    print(f"{key:32s} crashed run {before_crash['env_runners'][key]:10.4f} | resumed run {after_resume['env_runners'][key]:10.4f}")
print("same weights after the repeated iteration:", same_weights)
algo.stop()
"""),
    md("""
`allowed=[PoleWobble]`: a checkpoint names its callbacks class, and loading imports no class
because a file says so (the file could come from anyone). Your own classes are allowed by passing them.

## 4. A policy without an Algorithm

To act, you need neither runners, nor a Learner, nor Ray: only the **RLModule**.
`RLModule.from_checkpoint` loads the module alone, and `forward_inference` is how RLlib's new API
stack computes actions: a batch of observations in, the action distribution's inputs out (here the
logits of CartPole's 2 actions), the greedy action their argmax.
"""),
    code("""
module = RLModule.from_checkpoint(keeper.best_path)
observations = np.random.default_rng(0).uniform(-0.2, 0.2, (5, 4)).astype(np.float32)
with torch.no_grad():
    logits = module.forward_inference({"obs": torch.as_tensor(observations)})["action_dist_inputs"]
print("logits:\\n", logits.numpy().round(2))
greedy = logits.argmax(dim=-1).numpy()
print("greedy actions:", greedy)

policy_file = export_policy(module, WORKDIR / "policy.pt2")
exported = torch.export.load(policy_file).module()  # torch alone: no rlcourse, no gymnasium
print(f"exported to {policy_file.name} ({policy_file.stat().st_size / 1024:.0f} KiB); "
      f"its actions: {exported(torch.as_tensor(observations)).numpy()}")
assert np.array_equal(exported(torch.as_tensor(observations)).numpy(), greedy)
"""),
    md("""
## 5. Serving it with Ray Serve

A **deployment** is a class whose replicas are Ray actors; Serve's **HTTP proxy** (another actor)
takes requests and routes each to a replica. rlcourse's `PolicyDeployment` loads a checkpoint's
module in its constructor (a checkpoint that cannot load fails at deploy time, naming the file)
and answers `POST {"obs": ...}` with `{"actions": ...}`. Requests that arrive together meet in
`@serve.batch` and go through the module as **one batch**: one call for many clients.
"""),
    code("""
serving_diagrams.request_path()
"""),
    code("""
start = time.perf_counter()
url = serve_app.start(serve_app.policy_app(keeper.best_path, num_replicas=1), port=8008)
print(f"serving at {url} (127.0.0.1 only) after {time.perf_counter() - start:.1f} s")
client = PolicyClient(url)
print("health:", client.health())
print("one observation:", client.compute_actions(observations[0]),
      "| a batch:", client.compute_actions(observations))
try:
    client.compute_actions(np.zeros(3, np.float32))  # CartPole observations have 4 numbers
except ServeRequestError as e:
    print("a wrong shape:", e)
print("and the server still answers:", client.compute_actions(observations[0]))
"""),
    md("""
`rlcourse serve CHECKPOINT` starts the same thing from a terminal, and `deploy/serve_config.yaml`
runs it with Serve's own `serve run deploy/serve_config.yaml`.

**The production loop.** In production the env runs elsewhere (a robot, a game server, a
simulator) and only asks the server for actions. `run_episode(client, env, seed)` plays one
episode that way, one HTTP request per step; on the same seeds it must return exactly what the
module returns in this process.
"""),
    code("""
env = gym.make("CartPole-v1")
served, local = [], []
for seed in range(3):
    served.append(run_episode(client, env, seed))
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        with torch.no_grad():
            logits = module.forward_inference({"obs": torch.as_tensor(obs[None])})["action_dist_inputs"]
        obs, reward, terminated, truncated, _ = env.step(int(logits.argmax()))
        total, done = total + reward, terminated or truncated
    local.append(total)
print("returns over HTTP:", served, "| in this process:", local)
"""),
    md("""
## 6. Under load

How many actions per second does the server give, and how long does a client wait? `run_load`
starts N client threads, each sending one observation per request over a kept-alive connection,
and measures every request's latency: the **p50** (median) and the **p99** (1 request in 100 waits
longer). The baseline is the module called in this process.
"""),
    code("""
load_obs = np.random.default_rng(1).uniform(-0.2, 0.2, (400, 4)).astype(np.float32)
in_process_ms = run_in_process(module, load_obs[:200])["p50"]  # greedy actions, one obs a call
run_load(url, num_clients=4, requests=40, obs=load_obs)  # warm up connections and the replica
load_rows = []
for clients in (1, 8, 32):
    row = {"clients": clients, **run_load(url, num_clients=clients, requests=320, obs=load_obs)}
    load_rows.append(row)
    print(f"{clients:2d} clients: p50 {row['p50']:6.1f} ms, p99 {row['p99']:6.1f} ms, "
          f"{row['actions_per_s']:6.0f} actions/s, {row['failed']} failed", flush=True)
print(f"the module in this process: {in_process_ms:.2f} ms per call ({1000 / in_process_ms:,.0f} calls/s)")
first, last = load_rows[0], load_rows[-1]
print(f"from 1 to 32 clients: actions/s x{last['actions_per_s'] / first['actions_per_s']:.1f}, "
      f"p50 latency x{last['p50'] / first['p50']:.1f}; at 1 client Serve adds "
      f"{first['p50'] - in_process_ms:.1f} ms to the module's {in_process_ms:.2f} ms")
serving_diagrams.latency_under_load(load_rows, in_process_ms)
"""),
    md("""
Read the plot and the lines above, measured on this machine. Throughput can grow with clients only
while a CPU is free: once the clients, the proxy and the replica keep this machine's CPUs busy, each
client added waits in a queue, and latency grows with the number of clients while actions/s stays
about flat. With many clients waiting, `@serve.batch` hands the module up to 32 observations in one
call, so the module's cost per action falls as load rises; Serve's own cost per request does not.
That cost is the gap between the dashed line and the p50 (HTTP parsing, the proxy, a hop between
actors, JSON), and the line above it prints it against the module's own time.
`benchmarks/serve_load.py` measures what this lesson does not: batching off against on, Serve's
floor with a deployment that does nothing, and the CPU time per request of each process. Scaling
out means `num_replicas` on more cores, or more observations per request.

Shut Serve down: the proxy, the controller and the replica are processes, and none may be left.
"""),
    code("""
client.close()
env.close()
ray_processes = psutil.Process().children(recursive=True)  # Ray's processes are this kernel's children
serve_app.shutdown()
_, left = psutil.wait_procs(ray_processes, timeout=15)
print(f"{len(ray_processes)} processes of Ray and Serve were running; left now: {len(left)}")
"""),
    md("""
## Summary

- Callbacks have RLlib's hooks; episode hooks run on the runners, and `metrics_logger.log_value`
  is how their numbers reach `train()`'s results, reduced across runners. `on_episode_end` sees the
  last chunk: collect whole-episode data in `episode.custom_data`.
- Evaluate greedily on separate runners, in parallel with training; keep the best checkpoint by
  evaluation return beside the latest, since the last is not always the best.
- A checkpoint holds every piece of state, so a resumed run continues exactly.
- `RLModule.from_checkpoint` + `forward_inference` act without an Algorithm; `export_policy` makes
  one file for torch alone.
- Ray Serve: a deployment's replicas are actors behind an HTTP proxy; `@serve.batch` makes
  concurrent requests one module call. Measure p50/p99 and actions/s under load, against the
  in-process call.

**Read next in the source**
- `rlcourse/callbacks/callbacks.py` (the hooks), `rlcourse/env/episode_hooks.py` (how a runner calls
  them), `rlcourse/utils/metrics/metrics_logger.py` (log, ship, reduce).
- `rlcourse/utils/checkpoint_keeper.py`: latest and best; `rlcourse/utils/checkpoints.py`: why a
  checkpoint is never half-written.
- `rlcourse/serve/deployment.py` (`@serve.batch`, the 4xx answers), `rlcourse/serve/client.py`, and
  `benchmarks/serve_load.py`.
"""),
    md("""
## Papers

- Crankshaw et al., *Clipper: A Low-Latency Online Prediction Serving System*, NSDI 2017
  ([arXiv:1612.03079](https://arxiv.org/abs/1612.03079)): serving models behind a network API with
  adaptive batching of concurrent requests, the idea of `@serve.batch` in sections 5 and 6.
- Moritz et al., *Ray: A Distributed Framework for Emerging AI Applications*, OSDI 2018
  ([arXiv:1712.05889](https://arxiv.org/abs/1712.05889)): the actors that Serve's replicas and HTTP proxy are.

All the course's papers, and the lessons that use them: [docs/key_papers.md](../docs/key_papers.md).
"""),
    concept_checks_cell("08"),
    code("""
# Lesson check: the metric came from the runners, evaluation ran, best and latest exist, the resume
# was exact, the exported and served policies act as the module does, and nothing failed under load.
assert all("pole_wobble" in r["env_runners"] for r in history[1:]), history[-1]["env_runners"].keys()
assert len(evaluated) == ITERATIONS // 2 and keeper.best_score == max(score for _, score in evaluated)
assert keeper.best_path.is_dir() and keeper.latest_path.is_dir()
assert same_weights and before_crash["env_runners"] == after_resume["env_runners"]
assert served == local, (served, local)
assert all(row["failed"] == 0 for row in load_rows), load_rows
assert not left, left
shutil.rmtree(WORKDIR, ignore_errors=True)
print("Lesson 08 complete.")
"""),
]

if __name__ == "__main__":
    print(write_lesson(NAME, CELLS))
