"""Writes lessons/03_custom_environments.ipynb from the cells below (outputs stripped)."""

from lesson_cells import code, concept_checks_cell, md, write_lesson

NAME = "03_custom_environments.ipynb"

CELLS = [
    md("""# Lesson 03 — Custom environments: your own task, trained with rlcourse

CartPole is someone else's problem. Real projects start with *your* simulator, game or business
process, wrapped as a gymnasium environment. This lesson takes the course's own environment,
`GridWorld` (`rlcourse/course/envs.py`), from its source to a trained agent.

**By the end of this lesson you can**
1. name what a gymnasium env must provide (spaces, `reset`, `step`, `render`) and why
   `terminated` and `truncated` are two different flags;
2. check an env with gymnasium's env checker before training on it;
3. configure an env with `env_config`, and see it arrive through `EnvContext` together with
   `worker_index` and `vector_index`;
4. register an env with `register_env`, add the `FlattenObservations` connector its `Discrete`
   observations need, train PPO on it, plot the return curve and evaluate;
5. normalize observations with the `MeanStdFilter` connector, whose statistics are merged across
   runners, and change the reward by scaling or by potential-based shaping, measuring each change as
   a learning curve at a fixed env-step budget;
6. read the error a broken env produces, even when it comes from a Ray actor;
7. write an env to a spec and have it checked.

**Time:** about 60 minutes of study (the exercise included); the cells run in about a minute on 2 idle
cores (measured there; longer on a busy or 1-CPU machine).
Terms and notation: see the [glossary](../docs/glossary.md)."""),
    md("""## 1. The course's environment: GridWorld

An agent walks on a grid to the goal in the bottom-right corner. A row of pits crosses the middle,
with one gap. Each episode starts on a random safe cell.

- **observation**: the agent's cell number, `row * size + col` (a `Discrete` space, like FrozenLake);
- **actions**: 0 up, 1 right, 2 down, 3 left (`Discrete(4)`);
- **rewards**: +1 at the goal, -1 in a pit, -0.01 for every other step;
- **terminated** at the goal or in a pit (the episode is over: there is no future to value);
  **truncated** after `max_episode_steps` (time ran out, though the agent could have gone on).

`render_mode="rgb_array"` makes `render()` return a picture as an array of pixels."""),
    code("""import inspect
import time
import warnings

import gymnasium as gym
import matplotlib.pyplot as plt
import numpy as np
import ray
import torch
from IPython.display import display

from rlcourse.course.envs import GridWorld
from rlcourse.utils.resources import init_ray

torch.set_num_threads(1)  # small networks: one torch thread is fastest (Binder has one CPU)
init_ray(num_cpus=2)

env = GridWorld({"render_mode": "rgb_array"})
obs, info = env.reset(seed=21)
print("observation_space:", env.observation_space, "| action_space:", env.action_space)
print("first observation:", obs, "= (row, col)", divmod(int(obs), env.size))
frames = [env.render()]
for action in [1, 2, 2, 1, 2, 1]:  # right, down through the gap, down, right, down, right
    obs, reward, terminated, truncated, info = env.step(action)
    frames.append(env.render())
    print(f"action {action} -> (row, col) {divmod(int(obs), env.size)}, reward {reward:5.2f}, "
          f"terminated {terminated}, truncated {truncated}")
fig, axes = plt.subplots(1, len(frames), figsize=(14, 2.4))
for t, (ax, frame) in enumerate(zip(axes, frames)):
    ax.imshow(frame)
    ax.set_title(f"t = {t}")
    ax.axis("off")
plt.show()"""),
    md("""Those are all the methods there are. The whole env is a page of Python:"""),
    code("""print(inspect.getsource(GridWorld.step))"""),
    md("""How good is acting at random? This is the RL loop from lesson 01, on our env. It gives the
baseline that training has to beat."""),
    code("""def random_return(env, episodes=300):
    total = 0.0
    for _ in range(episodes):
        env.reset()
        done = False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total += reward
            done = terminated or truncated
    return total / episodes


random_baseline = random_return(GridWorld({"size": 7, "slip": 0.1}))
print(f"random policy on a 7 x 7 grid: mean return {random_baseline:.2f}")"""),
    md("""## 2. Check the env before you train on it

`gymnasium.utils.env_checker.check_env` calls `reset` and `step` with seeds and random actions, and
checks what comes back: the tuple shapes, observations inside `observation_space`, bools for the
flags, that `reset(seed=...)` is reproducible, that observations are new arrays each time. Mistakes it
can only suspect are **warnings**, so we turn warnings into errors. (Its render test needs an env
registered with `gymnasium.register`; we skip it and look at the pictures ourselves.)"""),
    code("""from gymnasium.utils.env_checker import check_env

with warnings.catch_warnings():
    warnings.simplefilter("error")  # a warning from the checker is a bug to fix
    check_env(GridWorld({"size": 7, "slip": 0.1}), skip_render_check=True)
print("GridWorld passes gymnasium's env checker")"""),
    md("""## 3. `env_config` and `EnvContext`

An env class receives one argument: the `env_config` dict from `config.environment(env,
env_config={...})`. rlcourse (like RLlib) wraps it in an **EnvContext**: still a dict, plus
`worker_index` (which EnvRunner: 0 in this process, 1, 2, ... for runner actors) and `vector_index`
(which sub-env of that runner). A creator can use them, for example to give every runner a different
seed or difficulty. GridWorld reads `size`, `slip` (the chance that a move goes in a random
direction) and `max_episode_steps`, and refuses keys it does not know: a typo should not silently
train on the defaults."""),
    code("""from rlcourse import EnvContext

context = EnvContext({"size": 7, "slip": 0.1}, worker_index=2, vector_index=1)
big = GridWorld(context)
print("an EnvContext is a dict:", dict(context), "| worker_index", context.worker_index,
      "| vector_index", context.vector_index)
print("GridWorld read:", {"size": big.size, "slip": big.slip, "max_episode_steps": big.max_episode_steps,
                          "worker_index": big.worker_index, "vector_index": big.vector_index})
try:
    GridWorld({"sise": 7})
except ValueError as e:
    print("typo ->", e)

fig, axes = plt.subplots(1, 2, figsize=(7, 3.2))
for ax, size in zip(axes, [5, 7]):
    grid = GridWorld({"size": size, "render_mode": "rgb_array"})
    grid.reset(seed=0)
    ax.imshow(grid.render())
    ax.set_title(f'env_config={{"size": {size}}}')
    ax.axis("off")
plt.show()"""),
    md("""## 4. Register it, and train PPO on it

`register_env(name, creator)` gives the env a name to use in `config.environment(name)`, as in
RLlib. The creator receives each sub-env's EnvContext. The driver ships the creator to every runner
actor when it builds them, so a name registered in this notebook works in every runner. Ray ships a
function or class defined in the notebook *by value* (the `BrokenGrid` below travels that way), but
one imported from a module *by name*: each actor imports `GridWorld` from `rlcourse.course.envs`
itself, which works wherever rlcourse is installed. (Your own module must be importable on every node
of a cluster.) Passing the class, `config.environment(GridWorld)`, works too.

The default network, like RLlib's, takes `Box` observations only: a cell *number* is a name, not a
quantity (cell 8 is not "twice" cell 4), and a network would read it as one. So `build_algo()`
refuses GridWorld's `Discrete` observations, and says what to add:"""),
    code("""from rlcourse import PPOConfig, register_env

register_env("course-grid", lambda context: GridWorld(context))
try:
    PPOConfig().environment("course-grid").env_runners(num_env_runners=0).build_algo()
except ValueError as e:
    print(e)"""),
    md("""That line adds an **env-to-module connector**: a small function the runners apply to each batch
of observations before the module sees it (RLlib's `rllib/connectors/env_to_module/`).
`FlattenObservations` turns a `Discrete(n)` observation into a one-hot vector of length n (and a
`Dict` or `Tuple` one into its parts' one-hot vectors and flattened boxes, joined). The runners record
what the module saw in the episodes, so the Learner trains on the same vectors; `compute_actions`,
evaluation and a checkpoint's policy apply the same connectors to the raw observations they get.

The `.training(...)` and `.rl_module(...)` settings are the course's for this small grid, as in
`tuned_examples/ppo/gridworld_ppo.yaml`: PPOConfig's defaults are RLlib's, which suit large problems
and learn this grid far more slowly."""),
    code("""from rlcourse.connectors.env_to_module import FlattenObservations

config = (
    PPOConfig()
    .environment("course-grid", env_config={"size": 7, "slip": 0.1})
    .env_runners(num_env_runners=2, num_envs_per_env_runner=4, num_cpus_per_env_runner=0.5,
                 env_to_module_connector=lambda env: FlattenObservations())
    .training(lr=1e-3, train_batch_size_per_learner=2000, minibatch_size=250, num_epochs=6,
              lambda_=0.95, clip_param=0.2, vf_loss_coeff=0.5, use_kl_loss=False, grad_clip=0.5)
    .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False})
    .evaluation(evaluation_duration=50)
    .debugging(seed=0)
)
algo = config.build_algo()
contexts = algo.env_runner_group.foreach_env_runner(
    lambda runner: [(env.worker_index, env.vector_index, env.size) for env in runner.env.envs])
for runner_envs in contexts:
    print("runner actor: (worker_index, vector_index, size) of its sub-envs:", runner_envs)
cells = np.array([0, 8, 48])
one_hot = algo.env_to_module(cells)
print("env observations:", GridWorld({"size": 7}).observation_space, "| the module's:", algo.observation_space)
print(f"cells {cells} -> vectors of shape {one_hot.shape}, with their 1 at",
      [int(i) for i in one_hot.argmax(axis=1)])"""),
    code("""history = []
progress = display("starting...", display_id=True)
start = time.perf_counter()
for _ in range(30):
    result = algo.train()
    history.append(result)
    ret = result["env_runners"]["episode_return_mean"]
    progress.update(f"iteration {result['training_iteration']:2d} | return {ret:5.2f} | "
                    f"episode length {result['env_runners']['episode_len_mean']:4.1f} | "
                    f"env steps {result['num_env_steps_sampled_lifetime']:6d} | "
                    f"{time.perf_counter() - start:5.1f} s")
    if ret >= 0.8:
        break

steps = [r["num_env_steps_sampled_lifetime"] for r in history]
returns = [r["env_runners"]["episode_return_mean"] for r in history]
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.plot(steps, returns, marker="o", label="PPO")
ax.axhline(random_baseline, color="gray", linestyle="--", label="random policy")
ax.set_xlabel("env steps sampled")
ax.set_ylabel("mean return (last 100 episodes)")
ax.set_title('PPO on GridWorld, env_config={"size": 7, "slip": 0.1}')
ax.legend()
plt.show()"""),
    md("""## 5. Evaluate, and look at what it learned

`evaluate()` plays 50 episodes greedily. With `slip=0.1` a greedy agent still slips now and then, so
a few episodes end in a pit. Since the observation is the cell, the whole policy fits in one picture:
the greedy action in every cell, and one episode played with it. `compute_actions` takes raw cell
numbers: it applies the config's connectors (the one-hot), then the module, then the argmax."""),
    code("""from rlcourse.course.diagrams import gridworld_policy

evaluation = algo.evaluate()["env_runners"]
print(f"greedy return over {evaluation['num_episodes']} episodes: "
      f"{evaluation['episode_return_mean']:.2f} (random policy: {random_baseline:.2f})")

def greedy_actions(observations):  # raw cells -> FlattenObservations -> module -> argmax
    return algo.compute_actions(np.asarray(observations))


grid = GridWorld({"size": 7, "slip": 0.1, "render_mode": "rgb_array"})
# A seed whose episode starts in the top-left corner, far from the goal.
obs, _ = grid.reset(seed=next(seed for seed in range(100) if grid.reset(seed=seed)[0] == 0))
path, episode_return, done = [divmod(int(obs), grid.size)], 0.0, False
while not done:
    obs, reward, terminated, truncated, _ = grid.step(int(greedy_actions([obs])[0]))
    path.append(divmod(int(obs), grid.size))
    episode_return += reward
    done = terminated or truncated
gridworld_policy(grid, greedy_actions(np.arange(grid.size**2)), path, episode_return)"""),
    md("""## 6. Observation and reward engineering

What the agent sees and what it is paid are design choices, as much as the env's rules. Each choice
below is measured the same way: PPO with the settings above, trained to the same budget of env steps,
with and without the change, plotting the return of **the env's own rewards** (a `TaskReturn` wrapper
records it, `LogTaskReturn` reports it as `result["env_runners"]["task_return"]`): a changed reward
changes `episode_return_mean`, so that number cannot compare runs.

### Observations on the wrong scale: MeanStdFilter

`SurveyedGrid` below is GridWorld observed as a surveyor would: the agent's (easting, northing) in
metres, 10 m per cell, in map coordinates far from the origin. It is the same task with a `Box`
observation. A network's first layer multiplies such numbers by small weights, and the `tanh` after
it saturates: every cell gives the same hidden vector."""),
    code("""from rlcourse.connectors.env_to_module import MeanStdFilter
from rlcourse.course.budget_curves import budget_curve, show_budget_curves
from rlcourse.course.reward_shaping import LogTaskReturn, TaskReturn


class SurveyedGrid(gym.ObservationWrapper):
    \"\"\"GridWorld whose observation is the agent's (easting, northing) in metres, 10 m per cell.\"\"\"

    def __init__(self, context=None):
        super().__init__(TaskReturn(GridWorld(context)))
        self.observation_space = gym.spaces.Box(0.0, 1e7, (2,), np.float32)

    def observation(self, cell):
        row, col = divmod(int(cell), self.env.unwrapped.size)
        return np.array([500_000 + 10 * col, 4_100_000 - 10 * row], np.float32)


register_env("surveyed-grid", lambda context: SurveyedGrid(context))
surveyed = SurveyedGrid({"size": 7})
positions = np.stack([surveyed.observation(cell) for cell in range(49)])
torch.manual_seed(0)
first_layer = torch.nn.Linear(2, 64)  # initialized as the default network's first layer


def distinct_hidden_vectors(x):
    with torch.no_grad():
        return len(np.unique(torch.tanh(first_layer(torch.as_tensor(x))).numpy().round(4), axis=0))


normalized = (positions - positions.mean(axis=0)) / positions.std(axis=0)
print(f"49 cells -> {distinct_hidden_vectors(positions)} distinct hidden vector(s) from raw metres, "
      f"{distinct_hidden_vectors(normalized)} from normalized positions")"""),
    md("""`MeanStdFilter` normalizes each observation element by a running mean and standard deviation
(then clips to +-10). With several runners, each keeps the statistics of what it saw since its last
report; at each weight sync the Algorithm merges the runners' reports (Chan et al.'s parallel formula)
and sends the merged statistics back with the weights, so every runner normalizes alike, as in RLlib.
Two runner actors train with the filter, one run in this process without (the same 8 sub-envs):"""),
    code("""BUDGET = 20_000  # env steps per run
progress = display("starting...", display_id=True)
surveyed_config = config.copy().environment("surveyed-grid", env_config={"size": 7, "slip": 0.1})
surveyed_config.callbacks(LogTaskReturn)
with (surveyed_config.copy().env_runners(env_to_module_connector=lambda env: MeanStdFilter())
      .build_algo()) as filtered_algo:
    filtered_curve = budget_curve(filtered_algo, BUDGET, "task_return", progress)
    merged = filtered_algo.env_runner_group.env_to_module_state[0]["running_stats"]
    per_runner = filtered_algo.env_runner_group.foreach_env_runner(
        lambda runner: (runner.env_to_module.connectors[0].running_stats.n,
                        runner.env_to_module.connectors[0].running_stats.mean.round(1).tolist()))
with (surveyed_config.copy().env_runners(num_env_runners=0, num_envs_per_env_runner=8,
                                         env_to_module_connector=None).build_algo()) as raw_algo:
    raw_curve = budget_curve(raw_algo, BUDGET, "task_return", progress)
print(f"merged statistics: n = {merged['n']}, every observation both runners normalized in their "
      f"{filtered_curve[0][-1]} env steps (one per step, plus each ended episode's last one)")
for index, (n, mean) in enumerate(per_runner, start=1):
    print(f"runner {index} normalizes with n = {n}, mean (easting, northing) = {mean}")"""),
    md("""### The reward's scale

Same task, same settings, rewards 1000 times smaller (as if the env paid in thousands): +0.001 at the
goal. PPO normalizes its advantages, which makes the policy's step size independent of the reward's
scale, but the advantages come from the value network's errors, and a freshly initialized value
network outputs numbers far larger than these rewards: until it has learned to output almost zero,
its own noise drowns the signal. (Rewards far *larger* than 1 hit another limit: PPO clips the value
loss at `vf_clip_param=10`, in squared reward units.) gymnasium's `TransformReward` scales the reward
inside the env creator.

### Potential-based shaping

A sparse reward tells the agent nothing until it stumbles on the goal. **Shaping** adds a hint
`F(s, s') = gamma * Phi(s') - Phi(s)` to every reward, where `Phi` (a *potential*) scores a state,
`gamma` is the discount factor of the return, `s` the state before a step and `s'` the state after
it. Ng, Harada and Russell (1999) proved that a term of this form leaves the optimal policy
unchanged, whatever `Phi`, and that a term of any other form can change it in some environment. The
reason: over an episode of T steps the discounted terms add up to `gamma^T Phi(s_T) - Phi(s_0)`, and
`Phi(s_T) = 0` once the episode has terminated, so every policy's return from `s_0` moves by the
same `-Phi(s_0)`: the ranking of policies stays. Here `Phi(s)` is minus the Manhattan distance to
the goal (scaled to [-1, 0], `grid_potential`), and `PotentialShaping` uses the config's `gamma`."""),
    code("""from gymnasium.wrappers import TransformReward

from rlcourse.course.reward_shaping import PotentialShaping, grid_potential

from rlcourse.core.rl_module.rl_module import build_module

fresh = build_module(config, algo.observation_space, algo.action_space)  # untrained, as runs start
with torch.no_grad():
    fresh_values = fresh.compute_values({"obs": torch.eye(49)}).numpy()
print(f"an untrained value network's outputs over the 49 cells: {fresh_values.min():+.3f} to "
      f"{fresh_values.max():+.3f}; the small rewards are -0.00001 per step and +0.001 at the goal")

register_env("grid-plain", lambda context: TaskReturn(GridWorld(context)))
register_env("grid-small-rewards",
             lambda context: TransformReward(TaskReturn(GridWorld(context)), lambda r: 0.001 * r))
register_env("grid-shaped", lambda context: PotentialShaping(
    TaskReturn(GridWorld(context)), grid_potential(context["size"]), gamma=config.gamma))
reward_curves = {}
for name in ["grid-plain", "grid-small-rewards", "grid-shaped"]:
    run_config = (config.copy().environment(name, env_config={"size": 7, "slip": 0.1})
                  .env_runners(num_env_runners=0, num_envs_per_env_runner=8).callbacks(LogTaskReturn))
    with run_config.build_algo() as run:
        reward_curves[name] = budget_curve(run, BUDGET, "task_return", progress)
progress.update(f"done: {len(reward_curves) + 2} runs of {BUDGET} env steps")
show_budget_curves({
    "SurveyedGrid: observations in metres": {"MeanStdFilter": filtered_curve, "raw": raw_curve},
    "GridWorld: the reward's scale": {"rewards x 1": reward_curves["grid-plain"],
                                      "rewards x 0.001": reward_curves["grid-small-rewards"]},
    "GridWorld: potential-based shaping": {"env's rewards": reward_curves["grid-plain"],
                                           "+ gamma Phi(s') - Phi(s)": reward_curves["grid-shaped"]},
}, baseline=random_baseline)
late = {}  # each run's mean return over the second half of its budget
for label, (steps, values) in {**{"surveyed, filtered": filtered_curve, "surveyed, raw": raw_curve},
                               **reward_curves}.items():
    late[label] = values[steps > BUDGET / 2].mean()
    print(f"{label:20s} return after {steps[-1]:6d} env steps: {values[-1]:5.2f} "
          f"(mean over the second half of the budget {late[label]:5.2f})")"""),
    md("""Read the curves as one seeded run each, on this machine: they show what each change did here, not
a law. The normalized observations, the right scale and the shaping hint each raised the curve at the
same budget. None of them changed the task: the returns plotted are the env's own rewards.

"""),
    md("""## 7. When an env is broken

Two kinds of mistakes, and where they show up.

**The env cannot even be built** (a bad `env_config`, a missing file, a typo). `build_algo()` builds
one env in this process first to learn its spaces (`probe_spaces` in `rlcourse/env/registry.py`), so the
error comes at once, with the env's own message, before any actor is started:"""),
    code("""broken_config = config.copy().environment("course-grid", env_config={"size": 7, "slipp": 0.1})
try:
    broken_config.build_algo()
except Exception as e:
    print(f"{type(e).__name__}: {e}")"""),
    md("""**The env builds but misbehaves while stepping.** Here `step()` returns the agent's `(row, col)`
instead of the cell number: the observation no longer matches `observation_space`. The env is built
and stepped inside a runner **actor**, so the error comes back through Ray."""),
    code("""class BrokenGrid(GridWorld):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return self.position, reward, terminated, truncated, info  # (row, col), not the cell number


broken = (PPOConfig().environment(BrokenGrid)
          .env_runners(num_env_runners=1, num_cpus_per_env_runner=0.5,
                       env_to_module_connector=lambda env: FlattenObservations())
          .debugging(seed=0))
broken_error = None
with broken.build_algo() as broken_algo:
    try:
        broken_algo.train()
    except Exception as e:
        broken_error = e
        print(f"{type(e).__name__}:\\n{e}")"""),
    md("""How to read it, from the top:
1. `RayTaskError(ValueError)`: the error happened in a Ray actor
   (`ray::SingleAgentEnvRunner.sample_and_get_metrics`), and the original error is a `ValueError`. Ray
   shows the actor's own traceback below.
2. Follow the frames down: `rlcourse/env/single_agent_env_runner.py` called `self.env.step(actions)`,
   gymnasium's vector env then failed to `concatenate` the sub-envs' observations into its array,
   which has one slot per sub-env shaped by `observation_space`: the observations do not fit the space.
3. The last line is rlcourse's note. `restart_failed_sub_environments` helps an env that crashes
   *now and then* (a flaky simulator). This env fails on every step: it needs a fix, not a restart.

The error names the symptom, far from the cause. gymnasium's checker names the cause:"""),
    code("""with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    check_env(BrokenGrid(), skip_render_check=True)
for warning in caught:
    print("check_env:", str(warning.message).replace("\\x1b[33m", "").replace("\\x1b[0m", ""))"""),
    md("""So: run `check_env` on every new env, with warnings as errors, before its first training run.

## 8. Exercise: write the Corridor env

Write `Corridor`, a gymnasium env to this spec:
- `__init__(self, config=None)`: read `length` (default 10) and `max_episode_steps` (default 50)
  from the env_config (`config` may be `None`);
- `observation_space = Box(0.0, length - 1, shape=(1,), dtype=np.float32)`; the observation is the
  agent's cell as a float32 array of shape (1,);
- `action_space = Discrete(2)`: 0 steps left (never below cell 0), 1 steps right;
- `reset()` puts the agent in cell 0 (call `super().reset(seed=seed)` first);
- reaching the last cell (`length - 1`) gives reward +1.0 and **terminates**; every other step
  gives -0.1; after `max_episode_steps` steps an episode that has not terminated is **truncated**.

`check_env_implementation(Corridor)` runs gymnasium's checker (warnings count as failures), then
walks your corridor with several env_configs, with every action in every direction (right to the
goal, left back from the middle, left against the wall, left until the time limit), and explains
the first thing that does not match. Until you write it, it is reported as not attempted.
Stuck? `show_solution("corridor")`."""),
    code("""from rlcourse.course.exercises import check_env_implementation, show_solution


class Corridor(gym.Env):
    \"\"\"Walk right from cell 0 to the last cell of a corridor (the spec above).\"\"\"

    def __init__(self, config=None):
        # TODO: read length and max_episode_steps from config (it may be None); set
        # self.observation_space and self.action_space. Then delete the raise.
        raise NotImplementedError("TODO: Corridor.__init__")

    def reset(self, *, seed=None, options=None):
        # TODO: super().reset(seed=seed); agent to cell 0, step counter to 0; return (obs, {}).
        raise NotImplementedError("TODO: Corridor.reset")

    def step(self, action):
        # TODO: move, count the step; return (obs, reward, terminated, truncated, {}).
        raise NotImplementedError("TODO: Corridor.step")


Corridor = check_env_implementation(Corridor)  # yours if right, rlcourse's while not attempted"""),
    md("""## Summary

- A gymnasium env declares `observation_space` and `action_space`, and implements
  `reset(seed=...) -> (obs, info)` and `step(action) -> (obs, reward, terminated, truncated, info)`.
  **terminated** means the task ended (no future); **truncated** means time ran out.
- `check_env` (with warnings as errors) catches most mistakes before training does.
- `env_config` reaches the env as an **EnvContext**, which also says which runner (`worker_index`) and
  which sub-env (`vector_index`) it is built for.
- `register_env(name, creator)` names an env. Runner actors build their own envs: an env class must
  be defined in the notebook (shipped by value) or importable where they run (like
  `rlcourse.course.envs`).
- A broken env fails at `build_algo()` when it cannot be built, and otherwise with a `RayTaskError`
  whose traceback, read top to bottom, leads to the env.
- The default network takes `Box` observations, as RLlib's does: the **FlattenObservations**
  connector one-hots `Discrete` ones (`config.env_runners(env_to_module_connector=lambda env:
  FlattenObservations())`). Runners record what the module saw; `compute_actions`, evaluation and
  checkpoints apply the same connectors.
- **MeanStdFilter** normalizes observations with statistics merged across runners at each sync.
- Scaling or shaping the reward changes how fast an agent learns. Potential-based shaping
  `gamma * Phi(s') - Phi(s)` (Ng, Harada & Russell 1999) keeps the optimal policy. Compare such
  changes at a fixed env-step budget, on the env's own return.

**Concept checks**: the questions at the end of this lesson, each choice with its explanation.

**Read next in the source**
- `rlcourse/course/envs.py`: GridWorld, and how it draws itself.
- `rlcourse/env/registry.py`: `EnvContext`, `register_env`, `get_env_creator` and `probe_spaces`.
- `rlcourse/env/single_agent_env_runner.py`, `make_vector_env`: one EnvContext per sub-env.
- `rlcourse/connectors/env_to_module/flatten_observations.py` and `mean_std_filter.py`: the two
  connectors; `rlcourse/env/env_runner_group.py`, `_merge_env_to_module_buffers`: the merge.
- `rlcourse/course/reward_shaping.py`: `TaskReturn`, `PotentialShaping`, `LogTaskReturn`."""),
    md("""
## Papers

- Ng, Harada, Russell, *Policy invariance under reward transformations: theory and application to
  reward shaping*, ICML 1999 ([pdf](https://people.eecs.berkeley.edu/~russell/papers/icml99-shaping.pdf)):
  shaping terms of the form `gamma * Phi(s') - Phi(s)` keep the optimal policy, and only those do
  in every environment (section 6).

All the course's papers, and the lessons that use them: [docs/key_papers.md](../docs/key_papers.md).
"""),
    concept_checks_cell("03"),
    code("""# Lesson check: PPO learned GridWorld well above the random policy, each sub-env got its own
# EnvContext, the broken env failed with its ValueError; both runners normalized with the merged
# statistics; the filter, the reward's scale and the shaping each changed the learning curve.
assert history[-1]["env_runners"]["episode_return_mean"] > 0.4, history[-1]["env_runners"]
assert evaluation["episode_return_mean"] > 0.4 > random_baseline, (evaluation, random_baseline)
assert contexts == [[(w, v, 7) for v in range(4)] for w in (1, 2)], contexts
assert isinstance(broken_error, ValueError), broken_error  # RayTaskError(ValueError) is one
assert algo.observation_space.shape == (49,) and one_hot.sum() == 3, algo.observation_space
assert [n for n, _ in per_runner] == [merged["n"]] * 2 and merged["n"] >= filtered_curve[0][-1]
assert per_runner[0][1] == per_runner[1][1], per_runner  # one set of statistics for both runners
assert late["surveyed, filtered"] > late["surveyed, raw"], late
assert late["grid-small-rewards"] < late["grid-plain"] < late["grid-shaped"], late
algo.stop()
ray.shutdown()
print("Lesson 03 complete.")"""),
]

if __name__ == "__main__":
    print(write_lesson(NAME, CELLS))
