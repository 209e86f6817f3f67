"""GPU learners and runners: the device is picked in one place, and everything a Learner computes
with lives on it. The device path runs here on the CPU; the CUDA cases run where CUDA exists."""

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import assert_learners_updated_together, record_batches, small_ppo

from rlcourse.algorithms.appo import APPOConfig
from rlcourse.algorithms.cql import CQLConfig
from rlcourse.algorithms.dqn import DQNConfig
from rlcourse.algorithms.dqn.dqn_learner import BATCH_KEYS, DQNLearner
from rlcourse.algorithms.impala.impala import IMPALAConfig
from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.algorithms.sac import SACConfig
from rlcourse.connectors.env_to_module.frame_stacking import FrameStackingEnvToModule
from rlcourse.connectors.learner.frame_stacking import FrameStackingLearner
from rlcourse.core.learner import learner as learner_module
from rlcourse.core.learner.learner_group import LearnerGroup
from rlcourse.core.rl_module.rl_module import DefaultActorCriticModule
from rlcourse.course.envs import StatelessCartPole
from rlcourse.course.pixel_grid_world import PixelGridWorld
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner
from rlcourse.utils.framework import get_device, get_distributed_backend
from rlcourse.utils.resources import env_runner_options, learner_options, trial_bundles
from rlcourse.utils.validation import ConfigError

pytestmark = pytest.mark.timeout(120)

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")


@pytest.mark.parametrize(("device_type", "num_gpus", "backend"), [
    ("cpu", 0, "gloo"), ("cuda", 1, "nccl"), ("cuda", 2, "nccl"),
    ("cuda", 0.5, "gloo"),  # two learners on one GPU: NCCL refuses two ranks on one device
])
def test_backend_is_nccl_only_between_whole_gpus(device_type, num_gpus, backend):
    assert get_distributed_backend(device_type, num_gpus) == backend


def test_no_gpu_requested_means_the_cpu():
    assert get_device(small_ppo(), 0) == torch.device("cpu")


def test_a_gpu_request_means_this_process_cuda_device(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert get_device(small_ppo(), 0.5) == torch.device("cuda", 0)


@pytest.mark.parametrize(("setting", "setter"), [("num_gpus_per_learner", "learners"),
                                                 ("num_gpus_per_env_runner", "env_runners")])
def test_a_gpu_request_without_cuda_fails_naming_the_setting(setting, setter, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError) as err:
        get_device(small_ppo(), 1, setting)
    assert err.value.setting == setting and f"config.{setter}({setting}=...)" in str(err.value)


def test_a_gpu_learner_without_cuda_fails_when_built(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    config = _ppo().learners(num_gpus_per_learner=1)
    with pytest.raises(ConfigError, match="num_gpus_per_learner"):
        config.get_default_learner_class()(config, *_spaces(config))


# -- everything on the learner's device, through the same code path a GPU learner takes -------

def _ppo(config=None):
    return ((config or small_ppo()).environment("CartPole-v1").debugging(seed=1)
            .env_runners(num_envs_per_env_runner=2)
            .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1))


def _spaces(config):
    return SingleAgentEnvRunner(config, config.get_env_creator()).get_spaces()


def _learner(config, device_type, monkeypatch):
    """A learner built with `num_gpus_per_learner` for `device_type`; get_device is spied on."""
    calls = []

    def spy(config, num_gpus, *args):
        calls.append(num_gpus)
        return get_device(config, num_gpus, *args)

    monkeypatch.setattr(learner_module, "get_device", spy)
    config = config.learners(num_gpus_per_learner=1 if device_type == "cuda" else 0)
    learner = config.get_default_learner_class()(config, *_spaces(config))
    assert calls == [config.num_gpus_per_learner]  # the one place that picks the device
    assert learner.device.type == device_type
    return learner


def _assert_on_device(learner, batches):
    device = learner.device
    assert all(p.device == device for p in learner.module.parameters())
    state = [t for s in learner.optimizer.state.values() for t in s.values()
             if isinstance(t, torch.Tensor)]
    assert state and all(t.device == device for t in state)  # Adam's moments and step counts
    assert batches and all(t.device == device for b in batches for t in b.values()
                           if isinstance(t, torch.Tensor))
    weights = learner.get_weights()  # what runners get: CPU NumPy
    assert all(isinstance(w, np.ndarray) for w in weights.values())
    saved = learner.get_state()  # what checkpoints get: CPU tensors, loadable anywhere
    assert all(t.device.type == "cpu" for t in saved["module"].values())
    assert all(t.device.type == "cpu" for s in saved["optimizer"]["state"].values()
               for t in s.values())


DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]


def _lstm(config=None) -> PPOConfig:
    return _ppo(config).environment(StatelessCartPole).rl_module(model_config={
        "use_lstm": True, "vf_share_layers": True, "lstm_cell_size": 8, "fcnet_hiddens": [16],
        "max_seq_len": 4})


def _pixels_with_frame_stacking() -> PPOConfig:
    return (_ppo().environment(PixelGridWorld, env_config={"size": 5, "pixels_per_cell": 1})
            .env_runners(env_to_module_connector=lambda env: FrameStackingEnvToModule(num_frames=2))
            .training(learner_connector=lambda obs, act: FrameStackingLearner(num_frames=2))
            .rl_module(model_config={"conv_filters": [[4, 3, 1]], "fcnet_hiddens": [16]}))


EPISODE_CONFIGS = {"PPO": _ppo, "IMPALA": lambda: _ppo(IMPALAConfig()),
                   "APPO": lambda: _ppo(APPOConfig()), "PPO-LSTM": _lstm,
                   "IMPALA-LSTM": lambda: _lstm(IMPALAConfig()),
                   "APPO-LSTM": lambda: _lstm(APPOConfig()),
                   "PPO-CNN-frame-stacking": _pixels_with_frame_stacking}


@pytest.mark.parametrize("device_type", DEVICES)
@pytest.mark.parametrize("name", EPISODE_CONFIGS)
def test_episode_learners_keep_module_optimizer_and_batches_on_their_device(
        name, device_type, monkeypatch):
    config = EPISODE_CONFIGS[name]()
    learner = _learner(config, device_type, monkeypatch)
    batches = record_batches(learner, monkeypatch)
    runner = SingleAgentEnvRunner(config, config.get_env_creator())
    runner.set_weights(learner.get_weights(inference_only=True))
    before = learner.get_weights()
    results = learner.update(runner.sample(num_timesteps=200))
    assert np.isfinite(results["total_loss"])
    assert any(not np.array_equal(before[k], v) for k, v in learner.get_weights().items())
    _assert_on_device(learner, batches)
    learner.set_state(learner.get_state())  # a CPU checkpoint goes back onto the device
    _assert_on_device(learner, batches)


@pytest.mark.parametrize("device_type", DEVICES)
def test_an_algorithm_computes_actions_with_its_local_learners_module_on_its_device(
        device_type, algo_factory):
    algo = algo_factory(_ppo().env_runners(num_env_runners=0).learners(
        num_gpus_per_learner=1 if device_type == "cuda" else 0))
    assert algo.get_module().device.type == device_type  # the local learner's own module
    obs = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    for explore in (False, True):
        actions = algo.compute_actions(obs, explore=explore)
        assert actions.shape == (3,) and set(actions.tolist()) <= {0, 1}


def _replay_batch(config, n: int = 32) -> dict[str, np.ndarray]:
    """A random batch of `n` one-step transitions with the spaces of the config's env."""
    env = config.get_env_creator()({})
    env.reset(seed=0)
    env.action_space.seed(0)
    rng = np.random.default_rng(0)
    obs = np.stack([env.observation_space.sample() for _ in range(2 * n)]).astype(np.float32)
    return {"obs": obs[:n], "actions": np.stack([env.action_space.sample() for _ in range(n)]),
            "rewards": rng.normal(size=n).astype(np.float32), "new_obs": obs[n:],
            "terminateds": rng.random(n) < 0.1, "n_step": np.ones(n, np.int64),
            "weights": np.ones(n, np.float32)}


REPLAY_CONFIGS = {
    "DQN": lambda: DQNConfig().environment("CartPole-v1"),
    "SAC": lambda: SACConfig().environment("Pendulum-v1"),
    "CQL": lambda: CQLConfig().environment("Pendulum-v1").offline_data(
        input_=str(Path(__file__).parent / "fixtures" / "pendulum_sac")),
}


@pytest.mark.parametrize("device_type", DEVICES)
@pytest.mark.parametrize("name", REPLAY_CONFIGS)
def test_replay_learners_keep_module_optimizer_and_batches_on_their_device(name, device_type,
                                                                           monkeypatch):
    config = REPLAY_CONFIGS[name]().debugging(seed=1)
    learner = _learner(config, device_type, monkeypatch)
    assert isinstance(learner, DQNLearner)  # SAC's and CQL's learners are DQN's with other losses
    batches = record_batches(learner, monkeypatch)
    batch = _replay_batch(config)
    assert set(batch) == set(BATCH_KEYS)
    before = learner.get_weights()
    results = learner.update_from_batch(batch, num_env_steps_sampled_lifetime=32)
    assert isinstance(results["td_error"], np.ndarray) and results["td_error"].shape == (32,)
    assert np.isfinite(results["td_error"]).all()
    assert any(not np.array_equal(before[k], v) for k, v in learner.get_weights().items())
    _assert_on_device(learner, batches)


# -- Ray's resource requests, read from the options the actors would be built with -----------

def test_gpu_learner_actors_ask_ray_for_their_gpus():
    config = _ppo().learners(num_learners=2, num_cpus_per_learner=0.5, num_gpus_per_learner=0.5)
    assert learner_options(config) == {"num_cpus": 0.5, "num_gpus": 0.5}
    assert trial_bundles(config)[1:] == [{"CPU": 0.5, "GPU": 0.5}] * 2  # a Tune trial reserves them
    local = _ppo().learners(num_learners=0, num_gpus_per_learner=1)
    assert trial_bundles(local)[0] == {"CPU": 1, "GPU": 1}  # the local learner's: the main process


def test_gpu_runner_actors_ask_ray_for_their_gpus():
    config = _ppo().env_runners(num_env_runners=2, num_cpus_per_env_runner=0.5,
                                num_gpus_per_env_runner=0.25)
    options = env_runner_options(config, None, 0)
    assert (options["num_cpus"], options["num_gpus"]) == (0.5, 0.25)


# -- runners: NumPy by default, a torch module on the runner's device ------------------------

def test_a_runner_keeps_a_custom_torch_module_on_its_device():
    config = _ppo().rl_module(rl_module_class=DefaultActorCriticModule)
    runner = SingleAgentEnvRunner(config, config.get_env_creator())
    assert runner.module.network.module.device == torch.device("cpu")
    runner.set_weights(DefaultActorCriticModule(*runner.get_spaces(), config.get_model_config())
                       .get_state(inference_only=True))
    episodes = runner.sample(num_timesteps=20)
    assert sum(map(len, episodes)) >= 20


def test_a_gpu_runner_with_a_torch_module_but_no_cuda_fails_naming_the_setting(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    config = _ppo().rl_module(rl_module_class=DefaultActorCriticModule).env_runners(
        num_gpus_per_env_runner=1)
    with pytest.raises(ConfigError) as err:
        SingleAgentEnvRunner(config, config.get_env_creator())
    assert err.value.setting == "num_gpus_per_env_runner"


@needs_cuda
def test_a_gpu_runner_runs_its_torch_module_on_cuda():
    config = _ppo().rl_module(rl_module_class=DefaultActorCriticModule).env_runners(
        num_gpus_per_env_runner=0.5)
    runner = SingleAgentEnvRunner(config, config.get_env_creator())
    assert runner.module.network.module.device.type == "cuda"
    runner.set_weights(DefaultActorCriticModule(*runner.get_spaces(), config.get_model_config())
                       .get_state(inference_only=True))
    assert sum(map(len, runner.sample(num_timesteps=40))) >= 40


@needs_cuda
def test_two_learners_sharing_one_gpu_update_together(ray_session):
    """0.5 GPU each: both learners on one device, all-reducing with gloo (NCCL would refuse)."""
    config = _ppo().learners(num_learners=2, num_cpus_per_learner=0.5, num_gpus_per_learner=0.5)
    runner = SingleAgentEnvRunner(config, config.get_env_creator())
    group = LearnerGroup(config, *runner.get_spaces())
    try:
        runner.set_weights(group.get_weights(inference_only=True))
        before = group.get_weights()
        group.update(runner.sample(num_timesteps=200))
        assert_learners_updated_together(group, before)
    finally:
        group.stop()
