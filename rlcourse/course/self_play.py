"""Self-play with a small league: "main" learns against frozen snapshots of itself.

    config = self_play_config({"rows": 4, "cols": 5, "connect": 3})
    algo = config.build_algo()
    history = train_self_play(algo, time_budget_s=40)   # win rate vs the heuristic, per iteration

In each ConnectFour game "main" plays one side and one of the snapshots "main_v0".."main_v2" the
other (`self_play_mapping`). Only main learns. When main beats the league often enough,
`SelfPlayCallback` copies main's weights over the oldest snapshot, so the opponents get stronger as
main does. The fixed `heuristic_action` player never plays in training: it only measures progress
(`win_rate_vs_heuristic`). RLlib's version: rllib/examples/multi_agent/utils/self_play_callback.py.
"""

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.callbacks.callbacks import Callbacks
from rlcourse.core.rl_module.rl_module_spec import RLModuleSpec
from rlcourse.course.action_masking import ActionMaskingModule
from rlcourse.course.multi_agent_envs import PLAYERS, ConnectFour, heuristic_action

MAIN = "main"
SNAPSHOTS = ("main_v0", "main_v1", "main_v2")  # the league's frozen opponents, oldest first at start
# Main's mean return vs the league (+1 win, -1 loss) that earns a snapshot: 0.8 is about 90% won.
# benchmarks/self_play_win_rate.py measures the win rates against the heuristic it gives (4 x 4).
WIN_RATE_THRESHOLD = 0.8


def self_play_mapping(agent_id: str, episode: Any, **kwargs: Any) -> str:
    """Main plays one side of each game, a snapshot the other, both chosen from the episode's id
    (a hex string, the same in every process: Python's hash() of a str is not)."""
    number = int(episode.id_, 16)
    if agent_id == PLAYERS[number % 2]:
        return MAIN
    return SNAPSHOTS[(number // 2) % len(SNAPSHOTS)]


class SelfPlayCallback(Callbacks):
    """Copies main's weights into the oldest snapshot slot when main's mean return against the league
    exceeds `win_rate_threshold`, judged only on games played since the last copy (the smoothing
    window of `metrics_num_episodes_for_smoothing` games must be full of them). At the start every
    snapshot is a copy of main. Adds `result["self_play"]`: snapshots taken, league return."""

    win_rate_threshold = WIN_RATE_THRESHOLD

    def __init__(self) -> None:
        self.num_snapshots = 0  # copies made since the start (the initial ones not counted)
        self.snapshot_iterations: list[int] = []
        self.episodes_since_snapshot = 0

    def get_state(self) -> dict[str, Any]:
        """The league's bookkeeping, for checkpoints (the snapshots' weights are the Learner's)."""
        return {"num_snapshots": self.num_snapshots,
                "snapshot_iterations": list(self.snapshot_iterations),
                "episodes_since_snapshot": self.episodes_since_snapshot}

    def set_state(self, state: dict[str, Any]) -> None:
        self.num_snapshots = state.get("num_snapshots", 0)
        self.snapshot_iterations = list(state.get("snapshot_iterations", []))
        self.episodes_since_snapshot = state.get("episodes_since_snapshot", 0)

    def on_algorithm_init(self, *, algorithm: Algorithm, **kwargs: Any) -> None:
        main = algorithm.get_module(MAIN).get_state()
        algorithm.set_module_weights({slot: main for slot in SNAPSHOTS})

    def on_train_result(self, *, algorithm: Algorithm, result: dict, **kwargs: Any) -> None:
        runners = result["env_runners"]
        self.episodes_since_snapshot += runners["num_episodes"]
        league_return = runners.get("module_episode_returns_mean", {}).get(MAIN, float("nan"))
        window = algorithm.config.metrics_num_episodes_for_smoothing
        if self.episodes_since_snapshot >= window and league_return > self.win_rate_threshold:
            slot = SNAPSHOTS[self.num_snapshots % len(SNAPSHOTS)]
            algorithm.set_module_weights({slot: algorithm.get_module(MAIN).get_state()})
            self.num_snapshots += 1
            self.snapshot_iterations.append(result["training_iteration"])
            self.episodes_since_snapshot = 0
        result["self_play"] = {"num_snapshots": self.num_snapshots,
                               "league_return_mean": league_return,
                               "snapshot_iterations": list(self.snapshot_iterations)}


def league_policies(env_config: dict) -> dict[str, RLModuleSpec]:
    """Main and its snapshots, spaces given (a mapping that picks opponents at random need not
    map every snapshot in the few episodes the config's check plays)."""
    env = ConnectFour(env_config)
    spaces = {"observation_space": env.observation_spaces[PLAYERS[0]],
              "action_space": env.action_spaces[PLAYERS[0]]}
    return {mid: RLModuleSpec(module_class=ActionMaskingModule, **spaces)
            for mid in (MAIN, *SNAPSHOTS)}


def self_play_config(env_config: dict, seed: int | None = 0) -> PPOConfig:
    """PPO on ConnectFour with the league (masked modules: no move into a full column), the
    mapping and the callback, with settings found to raise the win rate against the heuristic on
    small boards (benchmarks/self_play_win_rate.py). The large entropy bonus keeps main and so the
    league varied; large batches and RLlib's [256, 256] ReLU network learn the most per second."""
    return (PPOConfig()
            .environment("ConnectFour", env_config=env_config)
            .env_runners(num_env_runners=0, num_envs_per_env_runner=16)
            .training(lr=1e-3, train_batch_size_per_learner=8000, minibatch_size=250,
                      num_epochs=8, entropy_coeff=0.1, gamma=0.99, lambda_=0.95, clip_param=0.2,
                      vf_loss_coeff=0.5, use_kl_loss=False, grad_clip=0.5)
            .rl_module(model_config={"fcnet_hiddens": [256, 256], "fcnet_activation": "relu",
                                     "vf_share_layers": False})
            .multi_agent(policies=league_policies(env_config),
                         policy_mapping_fn=self_play_mapping, policies_to_train={MAIN})
            .callbacks(SelfPlayCallback)
            .debugging(seed=seed))


def _greedy(policy: Any, module_id: str) -> Any:
    """A function obs batch -> greedy actions, from an Algorithm (its `module_id`), an RLModule,
    or such a function itself."""
    import torch

    if isinstance(policy, Algorithm):
        policy = policy.get_module(module_id)
    if not hasattr(policy, "forward_inference"):
        return policy
    module = policy

    def act(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            out = module.forward_inference({"obs": torch.as_tensor(obs)})
            return module.greedy_actions(out["action_dist_inputs"]).numpy()
    return act


@dataclass
class Outcomes:
    """Results of games of a policy against the heuristic, from the policy's side."""

    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def win_rate(self) -> float:
        return self.wins / max(1, self.wins + self.draws + self.losses)


def play_vs_heuristic(algo_or_module: Any, env_config: dict, num_games: int = 200,
                      seed: int = 0, module_id: str = MAIN) -> Outcomes:
    """Greedy `module_id` (or the RLModule given) against `heuristic_action`, all games at once
    in this process (one forward pass per move); the policy moves first in half of them."""
    act = _greedy(algo_or_module, module_id)
    rng = np.random.default_rng(seed)
    envs = [ConnectFour(env_config) for _ in range(num_games)]
    obs = [env.reset(seed=seed + i)[0] for i, env in enumerate(envs)]
    sides = [i % 2 for i in range(num_games)]  # the policy's player; who starts is random
    outcomes, live = Outcomes(), list(range(num_games))
    while live:
        mover = {i: PLAYERS.index(next(iter(obs[i]))) for i in live}
        mine = [i for i in live if mover[i] == sides[i]]
        actions = dict(zip(mine, act(np.stack([obs[i][PLAYERS[mover[i]]] for i in mine]))
                           if mine else [], strict=True))
        for i in live:
            env = envs[i]
            if i not in actions:
                actions[i] = heuristic_action(obs[i][PLAYERS[mover[i]]], env.rows, env.cols,
                                              env.connect, rng)
            obs[i], rewards, terminateds, _, _ = env.step({PLAYERS[mover[i]]: int(actions[i])})
            if terminateds["__all__"]:
                reward = rewards[PLAYERS[sides[i]]]
                outcomes.wins += reward > 0
                outcomes.draws += reward == 0
                outcomes.losses += reward < 0
        live = [i for i in live if envs[i].agents]
    return outcomes


def win_rate_vs_heuristic(algo_or_module: Any, env_config: dict, num_games: int = 200,
                          seed: int = 0) -> float:
    """The fraction of `num_games` games main (greedy) wins against the heuristic; draws count
    as not won."""
    return play_vs_heuristic(algo_or_module, env_config, num_games, seed).win_rate


@dataclass
class SelfPlayHistory:
    """What `train_self_play` measured after each evaluated iteration, for plotting."""

    iterations: list[int] = field(default_factory=list)
    env_steps: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    win_rates: list[float] = field(default_factory=list)
    draw_rates: list[float] = field(default_factory=list)
    snapshot_iterations: list[int] = field(default_factory=list)
    best_iteration: int | None = None  # keep_best: the evaluation whose weights main ended with


def train_self_play(algo: Algorithm, num_iterations: int | None = None,
                    time_budget_s: float | None = None, stop_win_rate: float | None = None,
                    eval_games: int = 200, eval_interval: int = 1, seed: int = 0,
                    keep_best: bool = False, verbose: bool = True) -> SelfPlayHistory:
    """Train until `num_iterations`, `time_budget_s` or a win rate of `stop_win_rate` against the
    heuristic (whichever comes first), measuring that win rate every `eval_interval` iterations.

    With `keep_best`, main ends with the weights of its best evaluation (the latest of equals), as
    RLlib's checkpoint_score_attribute keeps the best checkpoint: self-play's win rate against an
    outside opponent goes up and down as the league changes. The best of many noisy evaluations
    flatters it, so measure the kept policy again on fresh games."""
    if num_iterations is None and time_budget_s is None:
        raise ValueError("train_self_play(): give num_iterations, time_budget_s, or both.")
    env_config = algo.config.env_config
    history, start = SelfPlayHistory(), time.perf_counter()
    best_win_rate, best_weights = -1.0, None
    while True:
        result = algo.train()
        iteration, elapsed = result["training_iteration"], time.perf_counter() - start
        history.snapshot_iterations = result["self_play"]["snapshot_iterations"]
        done = ((num_iterations is not None and iteration >= num_iterations)
                or (time_budget_s is not None and elapsed >= time_budget_s))
        if iteration % eval_interval == 0 or done:
            outcomes = play_vs_heuristic(algo, env_config, eval_games, seed + iteration)
            history.iterations.append(iteration)
            history.env_steps.append(result["num_env_steps_sampled_lifetime"])
            history.seconds.append(round(elapsed, 1))
            history.win_rates.append(outcomes.win_rate)
            history.draw_rates.append(outcomes.draws / eval_games)
            if keep_best and outcomes.win_rate >= best_win_rate:
                best_win_rate, best_weights = outcomes.win_rate, algo.get_module(MAIN).get_state()
                history.best_iteration = iteration
            if verbose:
                print(f"iter {iteration:3d}  {elapsed:5.1f} s  win rate vs heuristic "
                      f"{outcomes.win_rate:.2f} (draws {outcomes.draws / eval_games:.2f})  "
                      f"vs league {result['self_play']['league_return_mean']:+.2f}  "
                      f"snapshots {result['self_play']['num_snapshots']}", flush=True)
            done = done or (stop_win_rate is not None and outcomes.win_rate >= stop_win_rate)
        if done:
            if best_weights is not None and history.best_iteration != history.iterations[-1]:
                algo.set_module_weights({MAIN: best_weights})
            return history
