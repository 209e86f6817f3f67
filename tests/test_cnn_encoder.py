"""The CNN encoder (core/rl_module/cnn_encoder.py): conv_filters checked when a module is built,
RLlib's default filters for 84x84 and 42x42 images and the runners' NumPy forward equal to torch's.
PPO learning a pixel task (PixelGridWorld) with a small CNN is lesson 12's run and assertion."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from helpers import small_ppo

from rlcourse.core.rl_module.cnn_encoder import DEFAULT_FILTERS, NumpyCNN, conv_layers, output_shapes
from rlcourse.core.rl_module.default_model_config import space_info
from rlcourse.core.rl_module.numpy_mlp import NumpyMLP
from rlcourse.core.rl_module.rl_module import DefaultActorCriticModule
from rlcourse.course.pixel_grid_world import PixelGridWorld
from rlcourse.utils.validation import ConfigError

ACTIONS = gym.spaces.Discrete(3)


def module(shape: tuple[int, ...], **model_config) -> DefaultActorCriticModule:
    config = {"fcnet_hiddens": [16], "fcnet_activation": "tanh", "vf_share_layers": True,
              **model_config}
    return DefaultActorCriticModule(gym.spaces.Box(0, 1, shape, np.float32), ACTIONS, config)


@pytest.mark.parametrize("side", [84, 42])
def test_rllibs_default_filters_take_84x84_and_42x42_images_to_one_pixel(side):
    layers = conv_layers((side, side, 4), {})
    assert [[out, list(k), s[0]] for out, k, s in layers] == DEFAULT_FILTERS[(side, side)]
    assert output_shapes((side, side, 4), layers)[-1] == (1, 1, 256)
    assert module((side, side, 4)).info.obs_dim == 256  # the MLP sits on 256 CNN features


def test_vectors_and_other_images_without_conv_filters_keep_the_mlp():
    assert conv_layers((4,), {}) == [] and conv_layers((10, 10, 3), {}) == []
    assert module((10, 10, 3)).cnn is None


@pytest.mark.parametrize("shape, filters, message", [
    ((4,), [[8, 3, 1]], r"conv_filters=.*3-D image observations \[H, W, C\], not shape \(4,\)"),
    ((10, 10, 3), [[8, 3]], r"conv_filters=.*layer 0 is \[8, 3\]; each layer is \[out_channels"),
    ((10, 10, 3), [[8, 3, 0]], r"conv_filters=.*layer 0"),
    ((10, 10, 3), [[8, [3, 3, 3], 1]], r"conv_filters=.*layer 0"),
    ((10, 10, 3), "16x3", r"conv_filters=.*layer 0"),
    ((10, 10, 3), [[8, 4, 2], [16, 7, 1]], r"conv_filters=.*layer 1's kernel \[7, 7\] is larger "
                                           r"than its input \(5, 5\)"),
    ((6, 6, 1), [[8, 8, 1]], r"conv_filters=.*layer 0's kernel \[8, 8\].*\(6, 6\)"),
])
def test_bad_conv_filters_name_the_setting_the_layer_and_the_shape(shape, filters, message):
    with pytest.raises(ConfigError, match=message):
        module(shape, conv_filters=filters)
    with pytest.raises(ConfigError, match=message):  # the runner's NumPy network says the same
        NumpyMLP(space_info(gym.spaces.Box(0, 1, shape, np.float32), ACTIONS),
                 {"fcnet_activation": "tanh", "conv_filters": filters})


def test_integer_images_are_refused_naming_the_observation_space():
    pixels = gym.spaces.Box(0, 255, (10, 10, 3), np.uint8)
    with pytest.raises(ConfigError, match=r"observation_space=.*float images.*uint8 in \[0, 255\]"):
        DefaultActorCriticModule(pixels, ACTIONS, {"fcnet_hiddens": [16], "fcnet_activation": "tanh",
                                                   "conv_filters": [[4, 3, 1]]})


def test_conv_activation_is_checked_and_validate_accepts_the_conv_settings():
    with pytest.raises(ConfigError, match="conv_activation='gelu'"):
        module((10, 10, 3), conv_filters=[[4, 3, 1]], conv_activation="gelu")
    small_ppo().environment(PixelGridWorld).rl_module(model_config={
        "conv_filters": [[8, 4, 2]], "conv_activation": "tanh"}).validate()


@pytest.mark.parametrize("shape, settings", [
    ((84, 84, 4), {}),
    ((42, 42, 1), {"vf_share_layers": False}),
    ((10, 10, 3), {"conv_filters": [[8, 3, 2], [16, [3, 3], 1], [32, 5, 1]]}),
    ((9, 7, 2), {"conv_filters": [[4, [3, 2], [2, 1]], [8, 2, 1]], "conv_activation": "tanh"}),
])
def test_numpy_forward_on_runners_equals_torch(shape, settings):
    torch_module = module(shape, **settings)
    for p in torch_module.parameters():  # larger weights than the init's, so errors would show
        torch.nn.init.normal_(p, std=0.3)
    state = torch_module.get_state(inference_only=True)
    x = np.random.default_rng(0).random((5, *shape), dtype=np.float32)
    features = torch_module.cnn(torch.tensor(x).permute(0, 3, 1, 2)).detach().numpy()
    numpy_cnn = NumpyCNN(shape, conv_layers(shape, torch_module.model_config),
                         torch_module.model_config.get("conv_activation", "relu"))
    numpy_cnn.set_state(state)
    scale = np.abs(features).max()  # float32 sums in another order: equal up to rounding
    np.testing.assert_allclose(numpy_cnn(x), features, rtol=1e-4, atol=1e-5 * scale)
    network = NumpyMLP(torch_module.info, torch_module.model_config)
    network.set_state(state)
    np.testing.assert_allclose(
        network.action_dist_inputs(x),
        torch_module.forward_inference({"obs": torch.tensor(x)})["action_dist_inputs"].numpy(),
        rtol=1e-4, atol=1e-5 * scale)
