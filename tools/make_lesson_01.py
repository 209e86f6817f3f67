"""Writes lessons/01_ray_and_rl_basics.ipynb from the cells below (outputs stripped)."""

from lesson_cells import code, md, write_lesson

NAME = "01_ray_and_rl_basics.ipynb"

CELLS = [
    md("""# Lesson 01 — Ray and RL basics: your first PPO agent

**By the end of this lesson you can**
1. start Ray small and quiet on a laptop, and run a Ray *task* and a Ray *actor*;
2. write the reinforcement-learning loop by hand: observe, act, get a reward, repeat;
3. configure, train and evaluate PPO with `rlcourse`, using the same names as RLlib
   (`PPOConfig`, `.environment()`, `.env_runners()`, `build_algo()`, `train()`);
4. read the result dict and plot a learning curve.

The whole lesson runs in about a minute on two CPU cores."""),
    md("""## 1. Ray in two minutes

Ray turns Python functions into **tasks** and classes into **actors** that run in other processes
(or on other machines). `rlcourse` uses actors for its *EnvRunners* (they collect experience) and
its *Learners* (they update the network). We start Ray without its dashboard and tell it how many
CPUs it may use; calling `init_ray` again is harmless, so this notebook can be re-run."""),
    code("""import time

import matplotlib.pyplot as plt
import numpy as np
import ray

from rlcourse.resources import init_ray

init_ray(num_cpus=2)
ray.cluster_resources()"""),
    md("""A **task** is a function run somewhere in the cluster; `.remote()` returns a *reference* at
once, and `ray.get` waits for the value. An **actor** is an object living in its own process:
it keeps its state between calls. `num_cpus=0.5` reserves half a core, so several actors share two."""),
    code("""@ray.remote
def square(x):
    return x * x


@ray.remote(num_cpus=0.5)
class Counter:
    def __init__(self):
        self.total = 0

    def add(self, x):
        self.total += x
        return self.total


refs = [square.remote(i) for i in range(5)]   # five tasks run in parallel
squares = ray.get(refs)
counter = Counter.remote()                       # one actor, one process
for s in squares:
    total_ref = counter.add.remote(s)
print("squares:", squares, "- running total in the actor:", ray.get(total_ref))
ray.kill(counter)"""),
    md("""## 2. The RL loop by hand

CartPole: push a cart left or right (action 0 or 1) to keep a pole upright. Every step upright gives
reward +1; the episode **terminates** when the pole falls and is **truncated** at 500 steps.
A random policy shows the loop every algorithm is built on."""),
    code("""import gymnasium as gym

env = gym.make("CartPole-v1")
obs, info = env.reset(seed=0)
episode_return, steps = 0.0, 0
while True:
    action = env.action_space.sample()               # a random policy
    obs, reward, terminated, truncated, info = env.step(action)
    episode_return += reward
    steps += 1
    if terminated or truncated:
        break
env.close()
print(f"random policy: return {episode_return:.0f} after {steps} steps (the best possible is 500)")"""),
    md("""## 3. Configure PPO

An `AlgorithmConfig` collects every setting with fluent methods that return the config, so it
reads as one chain. Two **EnvRunner** actors (half a core each) step 4 CartPoles each; the
**Learner** runs in this notebook's process (`num_learners=0`)."""),
    code("""from rlcourse import PPOConfig

config = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=2, num_envs_per_env_runner=4, num_cpus_per_env_runner=0.5)
    .training(lr=1e-3, train_batch_size_per_learner=2000, minibatch_size=250, num_epochs=6)
    .debugging(seed=0)
)
algo = config.build_algo()
print(algo.env_runner_group.num_remote_env_runners, "EnvRunner actors are ready")"""),
    md("""## 4. Train

Each `algo.train()` is one iteration: the runners sample 2000 steps with the current policy, the
learner runs a few epochs of PPO updates on them, and the new weights go back to the runners.
`result["env_runners"]["episode_return_mean"]` averages the last 100 finished episodes."""),
    code("""from IPython.display import display

history = []
progress = display("starting...", display_id=True)
start = time.perf_counter()
for _ in range(60):
    result = algo.train()
    history.append(result)
    ret = result["env_runners"]["episode_return_mean"]
    progress.update(f"iteration {result['training_iteration']:3d} | return {ret:6.1f} | "
                    f"env steps {result['num_env_steps_sampled_lifetime']:7d} | "
                    f"{time.perf_counter() - start:5.1f} s")
    if ret >= 450:
        break"""),
    md("""## 5. The learning curve"""),
    code("""steps = [r["num_env_steps_sampled_lifetime"] for r in history]
returns = [r["env_runners"]["episode_return_mean"] for r in history]
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.plot(steps, returns, marker="o")
ax.axhline(500, color="gray", linestyle="--", label="maximum return")
ax.set_xlabel("env steps sampled")
ax.set_ylabel("mean return (last 100 episodes)")
ax.set_title("PPO on CartPole-v1")
ax.legend()
plt.show()"""),
    md("""What else is in a result? Losses from the learner, and timers for each phase of the iteration:"""),
    code("""last = history[-1]
print("learner:", {k: round(v, 4) for k, v in last["learners"]["default_policy"].items()})
print("timers (s):", {k: round(v, 3) for k, v in last["timers"].items()})"""),
    md("""## 6. Evaluate and act

`evaluate()` plays whole episodes **greedily** (always the most likely action), separately from
training. `compute_actions` asks the trained policy what it would do."""),
    code("""evaluation = algo.evaluate()["env_runners"]
print(f"greedy return over {evaluation['num_episodes']} episodes: {evaluation['episode_return_mean']:.1f}")
observations = np.array([[0.0, 0.0, 0.1, 0.0], [0.0, 0.0, -0.1, 0.0]], dtype=np.float32)
print("pole leaning right -> push", algo.compute_actions(observations)[0], "(1 = right)")
print("pole leaning left  -> push", algo.compute_actions(observations)[1], "(0 = left)")"""),
    md("""## Summary

- Ray runs functions as tasks and classes as actors; `num_cpus` may be a fraction.
- The RL loop is `reset`, then `step(action)` until `terminated` or `truncated`.
- `PPOConfig()...build_algo()` builds EnvRunner actors and a Learner; `train()` runs one iteration
  and returns a nested dict with RLlib's key names.

**Read next in the source**
- `rlcourse/config.py`: every setting and its fluent setter.
- `rlcourse/algorithm.py`, `Algorithm.sample_and_update`: one iteration in ten lines.
- `rlcourse/algorithms/ppo_learner.py`, `compute_loss`: the PPO loss."""),
    code("""# Lesson check: PPO learned CartPole, and greedy play confirms it.
assert history[-1]["env_runners"]["episode_return_mean"] >= 400, history[-1]["env_runners"]
assert evaluation["episode_return_mean"] >= 300, evaluation
assert algo.compute_actions(observations).tolist() == [1, 0]
algo.stop()
ray.shutdown()
print("Lesson 01 complete.")"""),
]

if __name__ == "__main__":
    print(write_lesson(NAME, CELLS))
