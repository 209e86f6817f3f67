"""Self-play (rlcourse/course/self_play.py): the league's mapping, the snapshot callback, the win rate
against the heuristic, and (learning) a league-trained policy beating the heuristic."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from rlcourse.course.action_masking import MASKED_LOGIT, ActionMaskingModule
from rlcourse.course.multi_agent_envs import PLAYERS, ConnectFour, heuristic_action
from rlcourse.course.self_play import (
    MAIN,
    SNAPSHOTS,
    SelfPlayCallback,
    play_vs_heuristic,
    self_play_config,
    self_play_mapping,
    train_self_play,
    win_rate_vs_heuristic,
)
from rlcourse.env.multi_agent_episode import MultiAgentEpisode

pytestmark = pytest.mark.timeout(120)

TINY = {"rows": 4, "cols": 4, "connect": 3}


def test_main_plays_exactly_one_side_against_one_snapshot():
    episodes = [MultiAgentEpisode() for _ in range(400)]
    sides, opponents = [], set()
    for episode in episodes:
        modules = [self_play_mapping(player, episode) for player in PLAYERS]
        assert modules.count(MAIN) == 1
        opponent = next(m for m in modules if m != MAIN)
        assert opponent in SNAPSHOTS
        assert modules == [self_play_mapping(player, episode) for player in PLAYERS]  # stable
        sides.append(modules.index(MAIN))
        opponents.add(opponent)
    assert 150 < sum(sides) < 250  # main plays both sides, about equally often
    assert opponents == set(SNAPSHOTS)


def test_the_mapping_is_the_same_in_another_process():
    """Runners are other processes: an episode's mapping must not depend on Python's str hash."""
    ids = [MultiAgentEpisode().id_ for _ in range(20)]
    here = [self_play_mapping(p, MultiAgentEpisode(id_)) for id_ in ids for p in PLAYERS]
    code = ("import sys; from rlcourse.course.self_play import self_play_mapping as f; "
            "from rlcourse.env.multi_agent_episode import MultiAgentEpisode as E; "
            f"print(' '.join(f(p, E(i)) for i in {ids!r} for p in {list(PLAYERS)!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**__import__("os").environ, "PYTHONHASHSEED": "123"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == here


def heuristic_policy(env_config: dict, seed: int):
    rng = np.random.default_rng(seed)
    shape = env_config["rows"], env_config["cols"], env_config["connect"]
    return lambda obs: np.array([heuristic_action(o, *shape, rng) for o in obs])


def test_a_policy_that_always_plays_column_0_loses_every_game():
    outcomes = play_vs_heuristic(lambda obs: np.zeros(len(obs), dtype=int), TINY, 60, seed=1)
    assert (outcomes.wins, outcomes.draws, outcomes.losses) == (0, 0, 60)
    assert win_rate_vs_heuristic(lambda obs: np.zeros(len(obs), dtype=int), TINY, 10) == 0.0


def test_the_heuristic_against_itself_wins_about_half_and_draws_count_as_not_won():
    config = {"rows": 6, "cols": 7, "connect": 4}
    outcomes = play_vs_heuristic(heuristic_policy(config, 7), config, 400, seed=3)
    assert outcomes.wins + outcomes.draws + outcomes.losses == 400
    assert 0.38 < outcomes.win_rate < 0.62
    assert abs(outcomes.wins - outcomes.losses) < 80
    drawish = {"rows": 5, "cols": 5, "connect": 4}  # draws are common on this board
    outcomes = play_vs_heuristic(heuristic_policy(drawish, 7), drawish, 200, seed=3)
    assert outcomes.draws > 20
    assert outcomes.win_rate == outcomes.wins / 200


@pytest.fixture
def tiny_algo(algo_factory):
    config = self_play_config(TINY).training(train_batch_size_per_learner=200, minibatch_size=100,
                                             num_epochs=1)
    return algo_factory(config.env_runners(num_envs_per_env_runner=2))


def learner_weights(algo, module_id: str) -> dict[str, np.ndarray]:
    return algo.get_module(module_id).get_state()


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def runner_logits(algo, module_id: str) -> np.ndarray:
    """What the runner's copy of `module_id` outputs for a few boards."""
    boards = np.random.default_rng(0).integers(-1, 2, (5, 16)).astype(np.float32)
    return algo.env_runner_group.local_env_runner.modules[module_id].action_dist_inputs(boards)


def test_snapshots_start_as_copies_of_main(tiny_algo):
    main = learner_weights(tiny_algo, MAIN)
    assert all(same(learner_weights(tiny_algo, slot), main) for slot in SNAPSHOTS)


def fake_result(algo, league_return: float, num_episodes: int, iteration: int) -> dict:
    return {"training_iteration": iteration,
            "env_runners": {"num_episodes": num_episodes,
                            "module_episode_returns_mean": {MAIN: league_return}}}


def test_the_callback_copies_main_into_the_oldest_slot_only_when_main_wins_enough(tiny_algo):
    callback, window = SelfPlayCallback(), tiny_algo.config.metrics_num_episodes_for_smoothing
    tiny_algo.train()  # main learns: it differs from the snapshots now
    assert not same(learner_weights(tiny_algo, MAIN), learner_weights(tiny_algo, SNAPSHOTS[0]))
    before = {slot: learner_weights(tiny_algo, slot) for slot in SNAPSHOTS}

    def step(league_return: float, num_episodes: int, iteration: int) -> dict:
        result = fake_result(tiny_algo, league_return, num_episodes, iteration)
        callback.on_train_result(algorithm=tiny_algo, result=result)
        return result["self_play"]

    high = SelfPlayCallback.win_rate_threshold + 0.1
    assert step(SelfPlayCallback.win_rate_threshold - 0.1, window // 2, 1)["num_snapshots"] == 0
    assert step(high, window // 2 - 1, 2)["num_snapshots"] == 0  # window not yet full of new games
    assert all(same(learner_weights(tiny_algo, s), before[s]) for s in SNAPSHOTS)
    assert step(high, 1, 3)["num_snapshots"] == 1  # a window of games since the start now
    main = learner_weights(tiny_algo, MAIN)
    assert same(learner_weights(tiny_algo, SNAPSHOTS[0]), main)
    assert all(same(learner_weights(tiny_algo, s), before[s]) for s in SNAPSHOTS[1:])
    # the runner plays the copy too
    np.testing.assert_array_equal(runner_logits(tiny_algo, SNAPSHOTS[0]),
                                  runner_logits(tiny_algo, MAIN))
    assert not np.allclose(runner_logits(tiny_algo, SNAPSHOTS[1]), runner_logits(tiny_algo, MAIN))
    assert step(high, window - 1, 4)["num_snapshots"] == 1  # the window holds older games
    info = step(high, 1, 5)
    assert info["num_snapshots"] == 2 and info["snapshot_iterations"] == [3, 5]
    assert same(learner_weights(tiny_algo, SNAPSHOTS[1]), main)
    step(high, window, 6)
    step(high, window, 7)  # the fourth copy goes to the oldest slot again: main_v0
    assert callback.snapshot_iterations == [3, 5, 6, 7]
    assert same(learner_weights(tiny_algo, SNAPSHOTS[2]), main)


def boards_with_full_columns(num: int, seed: int = 0) -> np.ndarray:
    """Random 4 x 4 boards (flat, row 0 on top) where some columns are full."""
    boards = np.random.default_rng(seed).choice([-1.0, 1.0], (num, 4, 4)).astype(np.float32)
    boards[:, 0, ::2] = 0.0  # columns 0 and 2 have room, 1 and 3 are full
    return boards.reshape(num, 16)


def test_the_masking_module_never_plays_a_full_column_and_runners_mask_alike():
    env = ConnectFour(TINY)
    module = ActionMaskingModule(env.observation_spaces[PLAYERS[0]], env.action_spaces[PLAYERS[0]],
                                 {"fcnet_hiddens": [16], "fcnet_activation": "tanh"})
    boards = boards_with_full_columns(64)
    logits = module.forward_inference({"obs": torch.as_tensor(boards)})["action_dist_inputs"]
    assert (logits[:, 1::2] == MASKED_LOGIT).all() and (logits[:, ::2] > MASKED_LOGIT).all()
    dist = module.get_action_dist(logits)
    assert set(dist.sample((20,)).unique().tolist()) <= {0, 2}
    assert torch.isfinite(dist.entropy()).all() and (dist.entropy() <= np.log(2) + 1e-6).all()
    runner = module.get_inference_module(seed=0)  # what an EnvRunner acts with: NumPy
    runner.set_state(module.get_state(inference_only=True))
    np.testing.assert_allclose(runner.action_dist_inputs(boards), logits.numpy(), rtol=1e-5)
    assert set(runner.forward_exploration(boards)["actions"].tolist()) <= {0, 2}


def test_the_callbacks_state_is_the_leagues_bookkeeping(tiny_algo):
    """What a checkpoint keeps of the callback (Algorithm.get_state saves Callbacks.get_state)."""
    callback = tiny_algo.callbacks
    callback.on_train_result(algorithm=tiny_algo, result=fake_result(
        tiny_algo, 1.0, tiny_algo.config.metrics_num_episodes_for_smoothing, 1))
    state = callback.get_state()
    assert state == {"num_snapshots": 1, "snapshot_iterations": [1], "episodes_since_snapshot": 0}
    fresh = SelfPlayCallback()
    fresh.set_state(json.loads(json.dumps(state)))
    assert fresh.get_state() == state  # so the next copy goes to main_v1, not main_v0 again


def test_training_records_snapshots_and_the_win_rate(tiny_algo, capsys):
    history = train_self_play(tiny_algo, num_iterations=2, eval_games=20, eval_interval=1)
    assert history.iterations == [1, 2] and len(history.win_rates) == 2
    assert all(0.0 <= w <= 1.0 for w in history.win_rates)
    assert history.env_steps[-1] >= 400
    assert "win rate vs heuristic" in capsys.readouterr().out
    with pytest.raises(ValueError, match="num_iterations, time_budget_s"):
        train_self_play(tiny_algo)


def test_keep_best_ends_with_the_weights_of_the_best_evaluation(tiny_algo):
    history = train_self_play(tiny_algo, num_iterations=4, eval_games=40, seed=5, keep_best=True,
                              verbose=False)
    best = max(history.win_rates)
    assert history.best_iteration == max(i for i, w in zip(history.iterations, history.win_rates,
                                                           strict=True) if w == best)
    # the same games again (greedy play, same seeds): the kept weights score that best
    assert play_vs_heuristic(tiny_algo, TINY, 40, seed=5 + history.best_iteration).win_rate == best


FRESH_SEED = 100_000  # seeds of games no evaluation in training plays (those use seed + iteration)
LEARNING_ITERATIONS = 150  # 1.2 M env steps, about 2 minutes on a busy 2-core machine
# Training stops early once an evaluation (200 games) reaches STOP_WIN_RATE; the kept policy must then
# win MIN_WIN_RATE of 400 fresh games. The greedy policy wins about 0 before training; the heuristic
# takes every win and blocks every threat it sees, so 0.65 is well-learned play. Six runs (seed 0, two
# at once on this 2-core machine) stopped after 15-45 iterations (44-100 s) and won 0.715-0.80 of the
# fresh games. Stopping at 0.78 took 40-75 iterations for 0.79-0.86: a wider margin, at twice the time.
# Issue 17's goal, 0.8, is benchmarks/self_play_win_rate.py's (200 iterations, three seeds).
STOP_WIN_RATE = 0.72
MIN_WIN_RATE = 0.65


@pytest.fixture
def one_torch_thread():
    """The Learner runs in this process: one torch thread (two made PPO's updates several times
    slower on a busy 2-core machine)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.mark.learning
@pytest.mark.timeout(900)
def test_self_play_beats_the_heuristic(algo_factory, one_torch_thread):
    """Pure self-play: main, which only ever plays itself and its snapshots, keeps its best
    evaluated weights (training stops at STOP_WIN_RATE or LEARNING_ITERATIONS) and then wins at
    least MIN_WIN_RATE of 400 fresh games against the heuristic. (On this board a minimax player
    wins 84% of games against it, the best possible player 95%: benchmarks/self_play_ceiling.py.)
    Runs are not bit-for-bit repeatable: the league's mapping picks opponents from episode ids,
    which are random as in RLlib."""
    seed = 0
    algo = algo_factory(self_play_config(TINY, seed=seed))
    before = win_rate_vs_heuristic(algo, TINY, 400, seed=FRESH_SEED)
    history = train_self_play(algo, num_iterations=LEARNING_ITERATIONS, eval_interval=5,
                              stop_win_rate=STOP_WIN_RATE, seed=seed, keep_best=True, verbose=False)
    after = win_rate_vs_heuristic(algo, TINY, 400, seed=FRESH_SEED)
    assert after >= MIN_WIN_RATE and after >= before + 0.3, (before, history.best_iteration,
                                                             history.win_rates, after)
