"""Atari through ale-py (pinned in requirements.lock; its wheel ships the ROMs, nothing downloads)
with RLlib's preprocessing (env/wrappers/atari_wrappers.py); ale-py stays out of `import rlcourse`."""

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from rlcourse.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack


def test_pong_makes_resets_and_steps_84x84_grayscale_frames_with_frameskip_4():
    raw = gym.make("ale_py:ALE/Pong-v5", frameskip=1, obs_type="grayscale")
    env = wrap_atari_for_new_api_stack(raw)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (84, 84, 1) and obs.dtype == np.float32 and env.observation_space.contains(obs)
    frames_before = raw.unwrapped.ale.getEpisodeFrameNumber()
    obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
    assert raw.unwrapped.ale.getEpisodeFrameNumber() - frames_before == 4  # frameskip 4
    assert obs.shape == (84, 84, 1) and -1.0 <= obs.min() <= obs.max() < 1.0 and obs.std() > 0
    assert not (terminated or truncated)
    env.close()


def test_the_wrapper_refuses_an_env_that_skips_frames_itself():
    with pytest.raises(ValueError, match="frameskip=1, obs_type='grayscale'"):
        wrap_atari_for_new_api_stack(gym.make("ale_py:ALE/Pong-v5"))


def test_importing_rlcourse_and_a_runners_cnn_import_neither_ale_py_nor_torch():
    code = ("import sys, numpy as np, gymnasium as gym, rlcourse\n"
            "import rlcourse.env.wrappers.atari_wrappers, rlcourse.env.single_agent_env_runner\n"
            "from rlcourse.core.rl_module.default_model_config import space_info\n"
            "from rlcourse.core.rl_module.numpy_mlp import NumpyMLP\n"
            "frames = gym.spaces.Box(-1, 1, (84, 84, 4), np.float32)\n"
            "net = NumpyMLP(space_info(frames, gym.spaces.Discrete(6)), {'fcnet_activation': 'relu'})\n"
            "assert net.cnn is not None\n"
            "bad = {'ale_py', 'torch'} & set(sys.modules)\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
