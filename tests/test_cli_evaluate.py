"""`rlcourse evaluate`: a checkpoint's greedy policy plays N episodes, printed as a table, and
optionally filmed as a GIF. The checkpoints are of local algorithms (no runner actors, no Ray)."""

import re

import numpy as np
import pytest
from helpers import small_ppo
from PIL import Image

from rlcourse.course import evaluate
from rlcourse.course.cli import main as cli_main
from rlcourse.course.envs import LatencyBoundCartPole

pytestmark = pytest.mark.timeout(120)


def checkpoint(path, env, env_config=None) -> str:
    config = (small_ppo().environment(env, env_config=env_config or {})
              .training(train_batch_size_per_learner=200, minibatch_size=100).debugging(seed=0))
    with config.build_algo() as algo:
        algo.train()
        return algo.save_to_path(path)


@pytest.fixture(scope="module")
def cartpole_checkpoint(tmp_path_factory) -> str:
    return checkpoint(tmp_path_factory.mktemp("cartpole"), "CartPole-v1")


def test_evaluate_prints_one_row_per_episode_and_their_mean(cartpole_checkpoint, capsys):
    assert cli_main(["evaluate", cartpole_checkpoint, "--episodes", "3", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    rows = [tuple(map(float, m)) for m in re.findall(r"^\s+(\d+)\s+(-?[\d.]+)\s+(\d+)$", out, re.M)]
    assert [int(row[0]) for row in rows] == [1, 2, 3]
    assert all(ret == length for _, ret, length in rows)  # CartPole: +1 per step
    mean = float(re.search(r"mean return over 3 episodes: (-?[\d.]+)", out).group(1))
    assert mean == pytest.approx(np.mean([ret for _, ret, _ in rows]), abs=0.01)


def test_evaluate_with_the_same_seed_plays_the_same_episodes(cartpole_checkpoint, capsys):
    evaluate.main([cartpole_checkpoint, "--episodes", "2", "--seed", "3"])
    first = capsys.readouterr().out
    evaluate.main([cartpole_checkpoint, "--episodes", "2", "--seed", "3"])
    assert capsys.readouterr().out == first


def test_render_writes_an_animated_gif(cartpole_checkpoint, tmp_path, capsys):
    gif = tmp_path / "play.gif"
    assert evaluate.main([cartpole_checkpoint, "--episodes", "1", "--render", str(gif)]) == 0
    out = capsys.readouterr().out
    length = int(re.search(r"^\s+1\s+\S+\s+(\d+)$", out, re.M).group(1))
    assert f"wrote {min(length, evaluate.MAX_FRAMES)} frames" in out  # one frame per step
    with Image.open(gif) as image:  # (Pillow merges identical neighbouring frames into one)
        assert 1 < image.n_frames <= length


def test_render_of_an_env_without_rgb_array_says_so(tmp_path):
    path = checkpoint(tmp_path / "latency", LatencyBoundCartPole, {"step_latency_s": 0.0})
    with pytest.raises(SystemExit, match="cannot draw 'rgb_array' images"):
        evaluate.main([path, "--episodes", "1", "--render", str(tmp_path / "x.gif")])
    assert not (tmp_path / "x.gif").exists()


@pytest.mark.parametrize("render", ["play.mp4", "no_folder/play.gif"])
def test_a_render_path_that_cannot_take_a_gif_fails_before_any_episode(render, tmp_path):
    """(The checkpoint does not exist: the path is checked before it loads and plays.)"""
    with pytest.raises(SystemExit, match=f"--render {render}: give a .gif file in an existing folder"):
        evaluate.main([str(tmp_path / "nope"), "--render", render])
