"""Writes lessons/01_ray_and_rl_basics.ipynb (outputs stripped): python tools/make_lesson_01.py"""

from lesson_cells import code, concept_checks_cell, md, write_lesson

NAME = "01_ray_and_rl_basics.ipynb"

CELLS = [
    md("""
# Lesson 01 — Ray and RL basics: your first PPO agent

**By the end of this lesson you can**
1. check that your machine is ready for the course;
2. start Ray small and quiet, and use its three building blocks: *tasks*, *actors* and the
   *object store*;
3. name the pieces of reinforcement learning (state, action, reward, return and discounting,
   policy and value) and write its loop by hand: observe, act, get a reward, repeat (the exercise);
4. configure, train and evaluate PPO with `rlcourse`, with RLlib's names (`PPOConfig`,
   `.environment()`, `.env_runners()`, `build_algo()`, `train()`), and watch it learn live;
5. watch the trained agent play, then save it and load it back.

**Time:** about 60 minutes of study (the exercise included); the cells run in about a minute on 2 idle
cores (measured there; longer on a busy or 1-CPU machine, such as Binder's).
Every term and symbol of the course is in the [glossary](../docs/glossary.md).
"""),
    md("""
## 0. Pre-flight check

`rlcourse doctor` (here as a function) checks Python and the packages against the course's lock
file, the CPUs and memory you have, Ray, and JupyterLab's widget extension, and says what to fix.
A `WARN` is advice (one CPU, a Ray that starts slowly on a busy machine): the lessons still run,
more slowly. Only a `FAIL` needs fixing before you go on.
"""),
    code("""
from rlcourse.course.doctor import doctor

checks = doctor()
"""),
    md("""
## 1. Ray in three pieces

Ray turns Python functions into **tasks** and classes into **actors** that run in other processes
(or on other machines). `rlcourse` uses actors for its *EnvRunners* (they collect experience) and
its *Learners* (they update the network). We start Ray without its dashboard, with two *logical*
CPUs: what Ray's scheduler hands out, whatever the machine has (on Binder's single core, actors
take turns on it). `init_ray` does nothing if Ray is already running, so this notebook can be
re-run.
"""),
    code("""
import time

import gymnasium as gym
import matplotlib.pyplot as plt
import numpy as np
import ray

from rlcourse.utils.resources import init_ray

init_ray(num_cpus=2)
ray.cluster_resources()
"""),
    md("""
A **task** is a function run somewhere in the cluster: `.remote()` returns a *reference* at once
and `ray.get` waits for the value. An **actor** is an object living in a process of its own: it
keeps its state between calls, which run one at a time. `num_cpus=0.5` reserves half a core, so
several actors share two.
"""),
    code("""
@ray.remote
def square(x):
    return x * x


@ray.remote(num_cpus=0.5)
class Counter:
    def __init__(self):
        self.total = 0

    def add(self, x):
        self.total += x
        return self.total


refs = [square.remote(i) for i in range(5)]   # five tasks, in parallel
squares = ray.get(refs)
counter = Counter.remote()                       # one actor, one process
for s in squares:
    total_ref = counter.add.remote(s)
print("squares:", squares, "- running total in the actor:", ray.get(total_ref))
ray.kill(counter)
"""),
    md("""
The **object store** holds values that tasks and actors share. `ray.put` stores a value once and
returns a reference; passing the reference to many tasks ships the value to each process without
copying it again in the driver (NumPy arrays are even read in place). This is how `rlcourse` sends
new network weights to all runners: one `ray.put` per update.
"""),
    code("""
weights = np.random.default_rng(0).normal(size=(256, 256)).astype(np.float32)
weights_ref = ray.put(weights)                   # stored once


@ray.remote
def norm(w):                                     # Ray passes the array, not the reference
    return float(np.linalg.norm(w))


print([round(x, 1) for x in ray.get([norm.remote(weights_ref) for _ in range(4)])])
print(f"object store: {ray.available_resources()['object_store_memory'] / 2**20:.0f} MB free")
"""),
    md("""
## 2. Reinforcement learning in one picture

An **agent** acts in an **environment**, one step at a time. At step $t$ it observes the **state**
$s_t$, picks an **action** $a_t$, and the environment answers with a **reward** $r_t$ and the next
state $s_{t+1}$. An **episode** is one run of this loop from `reset` until it ends: it is
**terminated** when the task is over (the pole fell) and **truncated** when a time limit cuts it.
"""),
    code("""
from rlcourse.course.diagrams import discounting, rl_loop

rl_loop()
"""),
    md("""
The agent wants rewards, and not only the next one. The **return** from step $t$ adds up the
rewards still to come, each one **discounted** by $\\gamma$ (gamma, between 0 and 1) per step of delay:

$$G_t = r_t + \\gamma\\, r_{t+1} + \\gamma^2 r_{t+2} + \\dots = \\sum_{k \\ge 0} \\gamma^k r_{t+k}$$

A reward $k$ steps ahead counts $\\gamma^k$ as much as one now. With $\\gamma = 0.99$ (PPO's default,
`config.gamma`) a reward 69 steps ahead still counts half; with 0.9, only 7 steps are in view.
Discounting keeps returns finite and makes the agent prefer rewards sooner.
"""),
    code("""
discounting(gammas=(0.9, 0.99))
rewards = np.ones(500)                     # CartPole: +1 per step, 500 steps if the pole stays up
for gamma in (0.9, 0.99, 1.0):
    print(f"gamma={gamma}: return G_0 = {np.sum(gamma ** np.arange(len(rewards)) * rewards):.1f}")
"""),
    md("""
Two functions make an agent, and PPO learns both, each as a small neural network:

- the **policy** $\\pi_\\theta(a_t \\mid s_t)$: the probability of each action in state $s_t$,
  with the network's weights $\\theta$. Acting means sampling from it; playing greedily means
  taking its most likely action. Learning means changing $\\theta$ so that the expected return grows.
- the **value** $V(s_t)$: the return the current policy expects from state $s_t$. It does not act;
  it is the yardstick that says whether an action turned out better or worse than expected
  (lesson 02's *advantage*).

PPO (Proximal Policy Optimization) repeats: collect episodes with the current policy, then update
the policy to make the better-than-expected actions likelier, without moving too far at once.

## 3. The RL loop by hand

CartPole: push a cart left or right (action 0 or 1) to keep a pole upright. Every step upright gives
reward +1; the episode **terminates** when the pole falls and is **truncated** at 500 steps by a
time limit. Every RL algorithm is built on this loop: `reset`, then `step(action)` until the
episode ends.

### Exercise: write the loop

Complete `run_episode(env, policy, seed)`: reset the env with the seed, act with `policy(obs)`
until the episode ends, and return the sum of the rewards. The checker runs it on CartPole and on an
env whose only ending is a time limit, and says what looks wrong. Until you write it, the checker
reports it as *not attempted* and the lesson goes on with rlcourse's own loop. Stuck? Run
`show_solution("run_episode")` in a new cell.
"""),
    code("""
from rlcourse.course.exercises import check_run_episode, show_solution


def run_episode(env, policy, seed):
    \"\"\"Play one episode: reset `env` with `seed`, act with `policy(obs)` until the episode ends,
    and return the sum of the rewards (the episode's return).

    Hints: `obs, info = env.reset(seed=seed)`; `env.step(action)` returns
    `obs, reward, terminated, truncated, info`; the episode ends when terminated OR truncated.
    \"\"\"
    # TODO: your loop here (about 6 lines), then delete the raise.
    raise NotImplementedError("TODO: write the loop")


run_episode = check_run_episode(run_episode)  # yours if right, rlcourse's while not attempted
"""),
    code("""
env = gym.make("CartPole-v1")
random_return = run_episode(env, lambda obs: env.action_space.sample(), seed=0)
print(f"a random policy keeps the pole up for {random_return:.0f} steps (the best is 500)")
"""),
    md("""
## 4. Configure PPO

An `AlgorithmConfig` holds every setting, set with methods that return the config, so it reads as
one chain. Two **EnvRunner** actors (half a core each) step four CartPoles each; the **Learner**
runs in this notebook's process (`num_learners=0`). The `.training(...)` and `.rl_module(...)`
settings are the course's CartPole settings, from `tuned_examples/ppo/cartpole_ppo.py`, found with
Ray Tune (lesson 07 shows how): a learning rate of 3e-3, 1000-step batches, six epochs of 250-step
minibatches, a value loss that is not clipped (`vf_clip_param`), and two small networks of 64 and
64 units, one for the policy and one for the value (`vf_share_layers=False`). `PPOConfig()`'s own
defaults are RLlib's (a learning rate of 5e-5, 4000-step batches, 30 epochs, two networks of
[256, 256] for the policy and the value), which suit large problems and learn CartPole far more
slowly. `cartpole_ppo.py` says what each of its settings bought, and
`benchmarks/solve_cartpole.py` measures, seed by seed, the env steps and seconds they take to reach
450 on your machine; the dashboard below shows this run's.
"""),
    code("""
from rlcourse import PPOConfig

config = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=2, num_envs_per_env_runner=4, num_cpus_per_env_runner=0.5)
    .training(lr=3e-3, train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=6,
              lambda_=0.95, clip_param=0.2, vf_clip_param=1000.0, vf_loss_coeff=0.5,
              use_kl_loss=False, grad_clip=0.5)
    .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False})
    .debugging(seed=0)
)
algo = config.build_algo()
print(algo.env_runner_group.num_remote_env_runners, "EnvRunner actors are ready")
"""),
    md("""
## 5. Train, and watch it learn

Each `algo.train()` is one iteration: the runners sample 1000 steps with the current policy, the
learner runs six epochs of PPO updates on them, and the new weights go back to the runners.
`result["env_runners"]["episode_return_mean"]` averages the last 100 finished episodes. The
dashboard draws the return and the env steps per second as they come in, both against env steps
sampled; we stop at a mean return of 450.

The return curve **lags** the policy. Its 100 episodes reach back over several iterations, so
most were played by earlier, weaker weights, and every action in them was sampled (exploring).
The policy as it is now, acting greedily, does better: section 6 measures it.
"""),
    code("""
from rlcourse.course.dashboard import TrainingDashboard, train

dashboard = TrainingDashboard(target_return=450, max_iterations=120, title="PPO on CartPole-v1")
dashboard.display()
history = train(algo, dashboard)
"""),
    md("""
The same charts as a picture (handy when the notebook is exported), and what else a result holds:
the learner's losses, and timers for each phase of the iteration.
"""),
    code("""
dashboard.plot()
plt.show()
last = history[-1]
print("learner:", {k: round(v, 4) for k, v in last["learners"]["default_policy"].items()})
print("timers (s):", {k: round(v, 3) for k, v in last["timers"].items()})
"""),
    md("""
## 6. Evaluate, act, and watch

`evaluate()` plays whole episodes **greedily** (always the most likely action), apart from training.
To ask the trained policy what it would do, use its **RLModule**, as RLlib's new API stack does:
`algo.get_module()` is the trained network, and `forward_inference({"obs": ...})` turns a batch of
observations into `action_dist_inputs`, here the logits of CartPole's 2 actions; the greedy action
is their argmax. (`algo.compute_actions(observations)` does the same in one call: a convenience of
rlcourse's, which RLlib's new API stack does not have.)
"""),
    code("""
evaluation = algo.evaluate()["env_runners"]
print(f"greedy return over {evaluation['num_episodes']} episodes: "
      f"{evaluation['episode_return_mean']:.1f}; the training curve's last point, the mean of the "
      f"last 100 sampled episodes: {history[-1]['env_runners']['episode_return_mean']:.1f}")
import torch

module = algo.get_module()
observations = np.array([[0.0, 0.0, 0.1, 0.0], [0.0, 0.0, -0.1, 0.0]], dtype=np.float32)
with torch.no_grad():  # acting needs no gradients
    logits = module.forward_inference({"obs": torch.as_tensor(observations)})["action_dist_inputs"]
actions = logits.argmax(dim=-1).numpy()
print("logits:", logits.numpy().round(2).tolist())
print("pole leaning right -> push", actions[0], "(1 = right); leaning left -> push", actions[1])
"""),
    md("""
Now watch it: CartPole draws itself when made with `render_mode="rgb_array"`. We play one episode
with the trained policy, keep every fourth frame, and show them as an animation.
"""),
    code("""
import os

from IPython.display import HTML

from rlcourse.course.diagrams import animation_html

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # pygame draws CartPole off-screen: no window
env = gym.make("CartPole-v1", render_mode="rgb_array")
obs, _ = env.reset(seed=1)
frames, done, steps = [env.render()], False, 0
while not done:
    with torch.no_grad():
        logits = module.forward_inference({"obs": torch.as_tensor(obs[None])})["action_dist_inputs"]
    obs, reward, terminated, truncated, _ = env.step(int(logits.argmax()))
    done, steps = terminated or truncated, steps + 1
    if steps % 4 == 0:
        frames.append(env.render())
env.close()
print(f"the trained agent kept the pole up for {steps} steps")
HTML(animation_html(frames))
"""),
    md("""
## 7. Save it, load it back

`save_to_path` writes a checkpoint directory: the config and counters as JSON, the weights and
optimizer state as tensors, and a manifest with the SHA-256 of every file. A new version is written
beside the old one and the manifest switched over in one atomic rename, so a crash leaves the old
checkpoint or the new one, never half of one. `Algorithm.from_checkpoint` builds the same algorithm
again and restores it. A checkpoint from someone else cannot run code here: tensors are loaded with
`weights_only=True`, and the JSON may only name this package's classes, registered envs and
gymnasium ids (your own classes: `Algorithm.from_checkpoint(path, allowed=[MyEnv])`).
"""),
    code("""
from rlcourse import Algorithm

path = algo.save_to_path("checkpoints/ppo_cartpole")
algo.stop()
restored = Algorithm.from_checkpoint(path)
with torch.no_grad():
    restored_logits = restored.get_module().forward_inference(
        {"obs": torch.as_tensor(observations)})["action_dist_inputs"]
same = np.array_equal(restored_logits.argmax(dim=-1).numpy(), actions)
print(f"restored from {path}: iteration {restored.iteration}, same actions: {same}")
"""),
    md("""
## Summary

- Ray runs functions as tasks and classes as actors; `num_cpus` may be a fraction; `ray.put`
  shares one copy of a value through the object store.
- An agent observes $s_t$, acts $a_t$ with its policy $\\pi_\\theta$, and receives $r_t$; it learns to
  make the discounted return $G_t = \\sum_k \\gamma^k r_{t+k}$ large, and its value $V(s_t)$ predicts it.
- The RL loop is `reset`, then `step(action)` until `terminated` or `truncated`.
- `PPOConfig()...build_algo()` builds EnvRunner actors and a Learner; `train()` runs one iteration
  and returns a nested dict with RLlib's key names; `save_to_path` / `from_checkpoint` keep the run.

**Read next in the source**
- `rlcourse/algorithms/algorithm_config.py`: every setting and its fluent setter.
- `rlcourse/algorithms/ppo/ppo.py`, `PPO.training_step`: one iteration, sample, learn, sync, in a dozen lines.
- `rlcourse/algorithms/ppo/ppo_learner.py`, `compute_loss`: the PPO loss.
- `rlcourse/utils/checkpoints.py`: how a checkpoint is written safely.
"""),
    md("""
## Papers

- Schulman, Wolski, Dhariwal, Radford, Klimov, *Proximal Policy Optimization Algorithms*, 2017
  ([arXiv:1707.06347](https://arxiv.org/abs/1707.06347)): the algorithm this lesson trains (lesson 02 takes it apart).
- Moritz et al., *Ray: A Distributed Framework for Emerging AI Applications*, OSDI 2018
  ([arXiv:1712.05889](https://arxiv.org/abs/1712.05889)): tasks, actors and the object store of section 1.
- Liang et al., *RLlib: Abstractions for Distributed Reinforcement Learning*, ICML 2018
  ([arXiv:1712.09381](https://arxiv.org/abs/1712.09381)): the library whose names and structure rlcourse follows (`PPOConfig`, `build_algo`,
  `train`), here in its new API stack's spelling.
- Sutton, Barto, *Reinforcement Learning: An Introduction*, 2nd edition, MIT Press, 2018
  ([the book's site](http://incompleteideas.net/book/the-book-2nd.html)): agent, environment,
  return and discounting, policy and value, the words of section 2.

All the course's papers, and the lessons that use them: [docs/key_papers.md](../docs/key_papers.md).
"""),
    concept_checks_cell("01"),
    code("""
# Lesson check: the machine is ready, PPO learned CartPole, greedy play and the checkpoint agree.
assert not [c.name for c in checks if c.status == "FAIL"], checks
assert history[-1]["env_runners"]["episode_return_mean"] >= 400, history[-1]["env_runners"]
assert evaluation["episode_return_mean"] >= 300, evaluation
assert actions.tolist() == [1, 0] and same
assert steps >= 300, steps
restored.stop()
ray.shutdown()
print("Lesson 01 complete.")
"""),
]

if __name__ == "__main__":
    print(write_lesson(NAME, CELLS))
