"""Writes lessons/10_multi_agent.ipynb (outputs stripped): python tools/make_lesson_10.py"""

from lesson_cells import code, concept_checks_cell, md, write_lesson

NAME = "10_multi_agent.ipynb"

CELLS = [
    md(r"""
# Lesson 10 — Many agents: MultiAgentEnv, policy mapping and self-play

**By the end of this lesson you can**
1. step a **MultiAgentEnv** by hand and read its dicts: observations, actions, rewards and done
   flags keyed by agent id, with `"__all__"` for the whole episode, and agents that take turns;
2. say what an **agent**, a **policy** (RLlib's **module**) and the **policy_mapping_fn** between
   them are, and draw the mapping;
3. train PPO on a cooperative game with **one shared policy** and with **separate policies**, and
   read the per-agent and per-module results;
4. write a **self-play** mapping (the exercise) and train a ConnectFour player against a **league**
   of frozen snapshots of itself, measuring its win rate against a fixed heuristic opponent;
5. write the same in RLlib.

**Time:** about 45 minutes of study (one exercise); the cells run in about 90 seconds on 2 idle
cores (measured there; longer on a busy or 1-CPU machine).
Terms: see the [glossary](../docs/glossary.md).
"""),
    code("""
import time

import numpy as np
import ray
import torch
from IPython.display import display

from rlcourse import PPOConfig
from rlcourse.course import multi_agent_diagrams, replay_diagrams
from rlcourse.course.doctor import usable_cpus
from rlcourse.course.multi_agent_envs import ConnectFour, MeetingGrid

ray.shutdown()  # a re-run starts from a clean slate
torch.set_num_threads(1)  # small networks: one torch thread is fastest (Binder has one CPU)
cores = usable_cpus()
print(f"this machine: {cores:g} usable CPUs")
"""),
    md("""
## 1. A MultiAgentEnv is gymnasium's API with dicts

In a **MultiAgentEnv** every value that a gymnasium env returns for its one agent becomes a dict
keyed by **agent id**. `MeetingGrid` is cooperative: two agents on a grid must meet on one cell,
and both get the same reward (-0.02 per step apart, +1 for meeting). Both act in every step:
"""),
    code("""
env = MeetingGrid({"size": 4})
observations, infos = env.reset(seed=0)
print("possible_agents:", env.possible_agents)
print("observations:   ", {agent: obs.round(2) for agent, obs in observations.items()})
observations, rewards, terminateds, truncateds, infos = env.step({"agent_0": 2, "agent_1": 4})
print("after one step:  rewards", rewards)
print("                 terminateds", terminateds, " truncateds", truncateds)
"""),
    md("""
The extra key `"__all__"` says whether the episode is over for everyone; an agent's own flag says
whether it is. In **ConnectFour** the players take turns, and only the player to move observes: an
agent acts when, and only when, it appears in the observations dict. Rewards come at the end: the
winner +1, the loser -1, and both observe the final board.
"""),
    code("""
game = ConnectFour({"render_mode": "rgb_array"})
observations, _ = game.reset(seed=3)
for column in [3, 3, 2, 2, 1, 1, 0]:
    player = next(iter(observations))  # the one agent that observes is the one to move
    observations, rewards, terminateds, _, _ = game.step({player: column})
    print(f"{player} drops into column {column}; observing now: {list(observations)}, rewards {rewards}")
print("terminateds:", terminateds)
multi_agent_diagrams.show_board(game, title="ConnectFour: four in a row on the bottom")
"""),
    md("""
## 2. Agents, policies and the mapping between them

A **policy** (RLlib's new stack calls it an **RLModule**, named by a **module id**) is a network
that picks actions. The config lists the policies and says, with `policy_mapping_fn(agent_id,
episode, **kwargs)`, which one acts for each agent. The runner calls it once per agent and
episode, and every step of that agent trains that module. Several agents may share one policy:
"""),
    code("""
multi_agent_diagrams.draw_policy_mapping({"agent_0": "shared", "agent_1": "shared"},
                                         title="one shared policy")
multi_agent_diagrams.draw_policy_mapping({"agent_0": "agent_0", "agent_1": "agent_1"},
                                         title="separate policies")
"""),
    md("""
PPO on an 8 x 8 MeetingGrid, both ways, for 20 iterations each. With `policies={"shared"}` one
network learns from both agents' steps; with two, each network learns from its own agent only. The
settings that matter are written out: a learning rate of 3e-3 and small batches suit this small
game (the same as lesson 01's CartPole settings).
"""),
    code("""
def shared_policy(agent_id, episode, **kwargs):
    return "shared"


def own_policy(agent_id, episode, **kwargs):
    return agent_id  # agent_0 -> module "agent_0", agent_1 -> module "agent_1"


meeting = (PPOConfig().environment("MeetingGrid", env_config={"size": 8})
           .env_runners(num_env_runners=0, num_envs_per_env_runner=8)
           # The course's CartPole-sized settings (PPOConfig's defaults are RLlib's, for big problems).
           .training(lr=3e-3, train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=6,
                     entropy_coeff=0.01, lambda_=0.95, clip_param=0.2, vf_loss_coeff=0.5,
                     use_kl_loss=False, grad_clip=0.5)
           .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False})
           .debugging(seed=0))
setups = {"one shared policy": meeting.copy().multi_agent(policies={"shared"},
                                                          policy_mapping_fn=shared_policy),
          "two separate policies": meeting.copy().multi_agent(policies={"agent_0", "agent_1"},
                                                              policy_mapping_fn=own_policy)}
curves, last = {}, {}
line = display("building...", display_id=True)
for name, config in setups.items():
    algo, rows, start = config.build_algo(), [], time.perf_counter()
    for _ in range(20):
        result = algo.train()
        rows.append((time.perf_counter() - start, result["num_env_steps_sampled_lifetime"],
                     result["env_runners"]["episode_return_mean"]))
        line.update(f"{name}: {rows[-1][1]:6,d} env steps | return {rows[-1][2]:5.2f}")
    weights = algo.learner_group.get_weights()
    last[name] = (result, sum(w.size for module in weights.values() for w in module.values()))
    algo.stop()
    curves[name] = np.array(rows)
replay_diagrams.learning_curves(curves)
for name, (result, num_weights) in last.items():
    print(f"{name}: {num_weights:,} weights; per module", {
        module: round(value, 2) for module, value in
        result["env_runners"]["module_episode_returns_mean"].items()},
        f"; episode length {result['env_runners']['episode_len_mean']:.1f} steps")
"""),
    md("""
Read the curves and the lines under them: they are this machine's run, not a promise. The
**episode return** is the sum of both agents' rewards, so meeting in $k$ steps gives about
$2(1 - 0.02k)$. Both setups learn this game; the shared policy has half the weights and
learns from twice the steps per update, which tends to help when the agents are interchangeable
(here each sees itself first, then the other, so one network serves both). Separate policies are
needed when agents differ: other spaces (a policy's spaces must fit every agent mapped to it),
other roles, or opponents (next section). The results say the same per module
(`module_episode_returns_mean`) and per agent (`agent_episode_returns_mean`); the learner's
results come per module too: `result["learners"]["shared"]["policy_loss"]`.

## 3. Self-play and a league

In a competitive game, who is the opponent? A fixed one is beaten, then nothing more is learned.
**Self-play** trains a policy against itself. Against its own current weights it can chase its
tail (it forgets how to beat an older style), so RLlib's examples keep a **league**: frozen
**snapshots** of the policy taken along the way. Here the policies are `main` (the only one
trained: `policies_to_train={"main"}`) and three snapshots, `main_v0`, `main_v1`, `main_v2`. Each
game puts `main` on one side and a snapshot on the other:
"""),
    code("""
multi_agent_diagrams.draw_policy_mapping(
    {"player_0": "main", "player_1": "main_v1"}, title="one self-play game", trained={"main"},
    policies=["main", "main_v0", "main_v1", "main_v2"])
"""),
    md("""
### Exercise: the self-play mapping

Write `self_play_mapping(agent_id, episode, **kwargs)` for the agents `"player_0"` and
`"player_1"`. In every episode `"main"` plays exactly one of them, the other plays one of
`OPPONENTS`; the episode decides which side and which snapshot, so that across many episodes main
plays both sides equally often and meets every snapshot. The runner may ask about the same agent
and episode more than once, and in other processes (remote runners): the answer must be the same
every time. `episode.id_` is a random hex string, unique per episode and the same in every process.
`check_self_play_mapping` tries hundreds of episodes and names the mistake it finds; until you
write it, it is reported as not attempted and the lesson trains with rlcourse's. Stuck?
`show_solution("self_play_mapping")`.
"""),
    code("""
from rlcourse.course.exercises import check_self_play_mapping, show_solution

OPPONENTS = ("main_v0", "main_v1", "main_v2")


def self_play_mapping(agent_id, episode, **kwargs):
    raise NotImplementedError("TODO: return 'main' for one player and a snapshot for the other")


self_play_mapping = check_self_play_mapping(self_play_mapping)  # yours if right, rlcourse's while not attempted
"""),
    md("""
Now train. `self_play_config` is PPO on a small ConnectFour board (4 x 4, three in a row wins: a
game small enough to learn something in a lesson; the default board is 6 x 7, four in a
row) with the league as policies, your mapping, and `SelfPlayCallback`: after each iteration, if
`main` won about 90% of its recent games against the league (a mean return above 0.8), its weights
are copied over the oldest snapshot, so the opponents grow stronger with it. The league's modules
mask illegal moves (`ActionMaskingModule`: a full column's logit is pushed to -1e9, so no game is
lost, or spent learning, by playing into one). Every 5 iterations `main` plays 200 greedy games
against a fixed **heuristic** (win if it can, else block the opponent's three, else a random column
near the centre). The heuristic never plays in training (`main` never learns from its games), but it
is more than a measure: self-play's win rate against an outside opponent goes up and down as the
league changes, so `keep_best=True` selects by it, ending the run with the weights of the best
evaluation (RLlib keeps a best checkpoint the same way); the best of many noisy evaluations
flatters it, so it is measured again on 400 games no evaluation played.
"""),
    code("""
from rlcourse.course.self_play import play_vs_heuristic, self_play_config, train_self_play

BOARD = {"rows": 4, "cols": 4, "connect": 3}
FRESH = 100_000  # seeds of games no evaluation plays (those use seed + iteration)
config = self_play_config(BOARD).multi_agent(policy_mapping_fn=self_play_mapping)
algo = config.build_algo()
before = play_vs_heuristic(algo, BOARD, num_games=400, seed=FRESH)
history = train_self_play(algo, time_budget_s=50, eval_interval=5, keep_best=True)
after = play_vs_heuristic(algo, BOARD, num_games=400, seed=FRESH)  # the kept main, fresh games
algo.stop()
multi_agent_diagrams.plot_win_rate(history.iterations, history.win_rates,
                                   history.snapshot_iterations, goal=0.8)
print(f"against the heuristic, 400 games: untrained {before}, win rate {before.win_rate:.2f}")
print(f"trained {history.iterations[-1]} iterations ({history.seconds[-1]:.0f} s, "
      f"{history.env_steps[-1]:,} env steps); kept iteration {history.best_iteration}: {after}, "
      f"win rate {after.win_rate:.2f}")
"""),
    md("""
The plot is this run's: the win rate against the heuristic (which `main` never trained against)
and, as dotted lines, the iterations where a snapshot joined the league. Every game `main` plays
trains it; the snapshots never change until they are replaced. How high can it go? Who starts is
random, and the heuristic never misses a win or a block, but otherwise it plays at random. On this
board a minimax player (one that searches every game to its end and assumes the best reply) wins
about 84% of games against it; a player that also exploits the heuristic's random moves can win up
to 95% (`benchmarks/self_play_ceiling.py` computes both exactly). Compare the last line printed above
with that: it is what this lesson's 50 seconds bought, measured on fresh games (one run on
two busy cores: 57 iterations, 456,000 env steps, 0.75). The dashed line at
0.8 is the course's goal for self-play, and it takes longer training than a lesson has: the
learning test (`tests/test_self_play.py`) trains 200 iterations (1.6 M env steps, about 3 minutes
on two busy cores), keeps the best evaluated `main` and asserts that it wins at least 80% of 400
fresh games; `benchmarks/self_play_win_rate.py` runs the same for seeds 0, 1 and 2 (measured: 0.870,
0.875 and 0.880, 182-201 s of training each).
"""),
    md("""
## 4. The same in RLlib

rlcourse spells multi-agent RL as RLlib's new API stack does; with RLlib installed, this is the
league of section 3 (only the imports change; the env is a `ray.rllib.env.multi_agent_env.
MultiAgentEnv` with the same methods):

```python
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.tune.registry import register_env

register_env("ConnectFour", lambda env_config: ConnectFour(env_config))
config = (
    PPOConfig()
    .environment("ConnectFour", env_config={"rows": 4, "cols": 4, "connect": 3})
    .multi_agent(policies={"main", "main_v0", "main_v1", "main_v2"},
                 policy_mapping_fn=self_play_mapping, policies_to_train=["main"])
    .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
        module_id: RLModuleSpec() for module_id in ("main", "main_v0", "main_v1", "main_v2")}))
    .callbacks(SelfPlayCallback)
)
algo = config.build_algo()
result = algo.train()
result["env_runners"]["module_episode_returns_mean"]["main"]    # the same key in rlcourse
```

| concept | rlcourse | RLlib |
|---|---|---|
| the env API | `rlcourse/env/multi_agent_env.py` | `rllib/env/multi_agent_env.py` |
| one episode, per agent | `rlcourse/env/multi_agent_episode.py` | `rllib/env/multi_agent_episode.py` |
| the runner | `rlcourse/env/multi_agent_env_runner.py` | `rllib/env/multi_agent_env_runner.py` |
| modules by id | `rlcourse/core/rl_module/multi_rl_module.py` | `rllib/core/rl_module/multi_rl_module.py` |
| updating several modules | `rlcourse/core/learner/multi_agent_learner.py` (one Learner per module) | `rllib/core/learner/learner.py` (one Learner, an optimizer per module) |
| self-play callback | `rlcourse/course/self_play.py` | `rllib/examples/multi_agent/utils/self_play_callback.py` |

What RLlib has that this lesson leaves out: agents grouped into teams with a shared critic,
modules that share layers inside a MultiRLModule, adding and removing modules while training
(`algo.add_module`), PettingZoo and OpenSpiel wrappers, and multi-agent off-policy algorithms.

## Summary

- A MultiAgentEnv returns dicts keyed by agent id; `"__all__"` ends the episode for everyone; only
  agents that observe act, so turns come for free.
- `policy_mapping_fn(agent_id, episode)` picks each agent's module, once per episode; a module
  learns from the steps of every agent mapped to it, and `policies_to_train` freezes the others.
- Shared policies pool experience; separate ones let agents differ.
- Self-play trains against frozen snapshots of itself, and the win rate against a fixed opponent
  that never trains measures progress.

**Read next in the source**
- `rlcourse/env/multi_agent_env_runner.py`, `_run`: one forward pass per module per step.
- `rlcourse/core/learner/multi_agent_batch.py` (each module's episodes) and
  `rlcourse/core/learner/multi_agent_learner.py` (one optimizer per module).
- `rlcourse/course/self_play.py`: the league, the callback and the win rate.

**Next:** [lesson 11, diagnosing a run](11_diagnosing_a_run.ipynb): what a run's metrics say, and
runs broken on purpose.
"""),
    md("""
## Papers

- Liang et al., *RLlib: Abstractions for Distributed Reinforcement Learning*, ICML 2018
  ([arXiv:1712.09381](https://arxiv.org/abs/1712.09381)): multi-agent environments, and the mapping of agents to policies, as RLlib has it.
- Bansal, Pachocki, Sidor, Sutskever, Mordatch, *Emergent Complexity via Multi-Agent Competition*,
  ICLR 2018 ([arXiv:1710.03748](https://arxiv.org/abs/1710.03748)): self-play against older
  snapshots of the policy rather than only its latest self, section 3.
- Vinyals et al., *Grandmaster level in StarCraft II using multi-agent reinforcement learning*,
  Nature 575, 2019: a league of past and specialised players, the idea behind the league of
  section 3 at a much larger scale.
- Schulman, Wolski, Dhariwal, Radford, Klimov, *Proximal Policy Optimization Algorithms*, 2017
  ([arXiv:1707.06347](https://arxiv.org/abs/1707.06347)): the algorithm each module learns with.

All the course's papers, and the lessons that use them: [docs/key_papers.md](../docs/key_papers.md).
"""),
    concept_checks_cell("10"),
    code("""
# Lesson check: the envs returned dicts; both MeetingGrid setups learned to meet; the self-play
# player, which never played the heuristic, beat it more often than the untrained policy did.
assert rewards == {"player_1": 1.0, "player_0": -1.0} and terminateds["__all__"], (rewards, terminateds)
for name, rows in curves.items():
    assert rows[-1, 2] > rows[0, 2] + 0.5, (name, rows[[0, -1]])
assert after.win_rate > before.win_rate + 0.1, (before, history.win_rates, after)
print("Lesson 10 complete.")
"""),
]

if __name__ == "__main__":
    write_lesson(NAME, CELLS)
