"""The CNN encoder for channels-last [H, W, C] images (RLlib's `conv_filters`, `conv_activation`):
its layers, checked when a module is built, in torch for learners and in NumPy for runners (im2col
by stride tricks). Each layer pads "same" but the last ("valid"), as RLlib's, so RLlib's default
filters take 84x84 and 42x42 images to 1x1."""

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from rlcourse.utils.validation import ConfigError

# RLlib's defaults (rllib/models/utils.py get_filter_config): [out channels, kernel, stride].
DEFAULT_FILTERS = {(84, 84): [[16, [8, 8], 4], [32, [4, 4], 2], [256, [11, 11], 1]],
                   (42, 42): [[16, [4, 4], 2], [32, [4, 4], 2], [256, [11, 11], 1]]}
ConvLayer = tuple[int, tuple[int, int], tuple[int, int]]  # out channels, kernel (h, w), stride (h, w)


def _fail(value: Any, fix: str) -> ConfigError:
    return ConfigError("conv_filters", value, fix, "rl_module")


def _pair(value: Any) -> tuple[int, int] | None:
    """An int or an [h, w] pair as (h, w), None if it is neither (of positive ints)."""
    pair = tuple(value) if isinstance(value, list | tuple) else (value, value)
    ok = len(pair) == 2 and all(isinstance(v, int | np.integer) and v > 0 for v in pair)
    return (int(pair[0]), int(pair[1])) if ok else None


def conv_layers(obs_shape: tuple[int, ...], model_config: dict) -> list[ConvLayer]:
    """The CNN's layers for observations of `obs_shape`: `conv_filters`, or RLlib's default for
    84x84 and 42x42 images; [] (no CNN) for vectors and other images without conv_filters."""
    filters = model_config.get("conv_filters")
    if len(obs_shape) != 3:
        if filters:
            raise _fail(filters, f"a CNN encodes 3-D image observations [H, W, C], not shape "
                        f"{obs_shape}: leave conv_filters out for vector observations.")
        return []
    if not filters:  # other sizes: the MLP takes the pixels flattened, as before CNNs existed
        filters = DEFAULT_FILTERS.get(tuple(obs_shape[:2]), [])
    if model_config.get("conv_activation", "relu") not in ("relu", "tanh", "linear"):
        raise ConfigError("conv_activation", model_config["conv_activation"],
                          "use 'relu' (RLlib's default), 'tanh' or 'linear'.", "rl_module")
    layers = []
    for k, layer in enumerate(filters):
        ok = isinstance(layer, list | tuple) and len(layer) == 3
        out, kernel, stride = layer if ok else (None, None, None)
        if not (ok and isinstance(out, int) and out > 0 and _pair(kernel) and _pair(stride)):
            raise _fail(filters, f"layer {k} is {layer!r}; each layer is [out_channels, kernel, "
                        "stride], positive ints (kernel and stride may be [h, w] pairs).")
        layers.append((out, _pair(kernel), _pair(stride)))
    output_shapes(obs_shape, layers)
    return layers


def same_padding(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """Zeros before and after, so the output has ceil(size / stride) entries (TensorFlow's "same")."""
    total = max((-(-size // stride) - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def output_shapes(obs_shape: tuple[int, ...], layers: list[ConvLayer]) -> list[tuple[int, int, int]]:
    """Each layer's output [H, W, C]; raises naming the layer whose output would be empty."""
    (h, w, _), shapes = obs_shape, []
    for k, (out, kernel, stride) in enumerate(layers):
        if k == len(layers) - 1:  # "valid": no padding
            h, w = (h - kernel[0]) // stride[0] + 1, (w - kernel[1]) // stride[1] + 1
        else:
            h, w = -(-h // stride[0]), -(-w // stride[1])
        if h < 1 or w < 1:
            raise _fail([[o, list(kr), list(s)] for o, kr, s in layers],
                        f"layer {k}'s kernel {list(kernel)} is larger than its input "
                        f"{shapes[-1][:2] if shapes else obs_shape[:2]} (image {obs_shape}): use "
                        "smaller kernels or strides, or fewer layers.")
        shapes.append((h, w, out))
    return shapes


def paddings(obs_shape: tuple[int, ...], layers: list[ConvLayer]) -> list[tuple[int, int, int, int]]:
    """(top, bottom, left, right) zeros of each layer."""
    sizes = [obs_shape[:2], *(s[:2] for s in output_shapes(obs_shape, layers))]
    return [(*same_padding(h, kr[0], s[0]), *same_padding(w, kr[1], s[1])) if k < len(layers) - 1
            else (0, 0, 0, 0) for k, ((h, w), (_, kr, s)) in enumerate(zip(sizes, layers, strict=False))]


def torch_cnn(space: Any, layers: list[ConvLayer], activation: str) -> tuple[Any, int]:
    """The learner's CNN for images of Box `space` ([B, C, H, W] in, [B, features] out) and its
    number of features. Refuses integer images: raw pixels would saturate its first layer."""
    from torch import nn  # learners only

    if not np.issubdtype(space.dtype, np.floating):
        raise ConfigError("observation_space", space, f"the CNN encoder takes float images, and "
                          f"these are {space.dtype} in [{space.low.min()}, {space.high.max()}]: "
                          "scale them in the env to float32 in [0, 1] or [-1, 1] (as "
                          "wrap_atari_for_new_api_stack does).", "environment")
    obs_shape = space.shape
    acts = {"relu": nn.ReLU, "tanh": nn.Tanh, "linear": nn.Identity}
    modules: list[nn.Module] = []
    in_channels = obs_shape[2]
    for (out, kernel, stride), (top, bottom, left, right) in zip(layers, paddings(obs_shape, layers),
                                                                 strict=True):
        modules += [nn.ZeroPad2d((left, right, top, bottom)),
                    nn.Conv2d(in_channels, out, kernel, stride), acts[activation]()]
        in_channels = out
    return nn.Sequential(*modules, nn.Flatten()), int(np.prod(output_shapes(obs_shape, layers)[-1]))


class NumpyCNN:
    """The runner's CNN, forward only, from the torch encoder's weights (`cnn.*`)."""

    def __init__(self, obs_shape: tuple[int, ...], layers: list[ConvLayer], activation: str):
        self.strides = [stride for _, _, stride in layers]
        self.paddings = paddings(obs_shape, layers)
        self.activation = activation
        self.weights: list[tuple[np.ndarray, np.ndarray]] = []

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        names = sorted((k[:-len(".weight")] for k in state
                        if k.startswith("cnn.") and k.endswith(".weight")),
                       key=lambda name: int(name.split(".")[1]))
        # torch's [out, in, kh, kw] as [in, kh, kw, out], for tensordot over (C, kh, kw)
        self.weights = [(np.ascontiguousarray(np.asarray(state[f"{n}.weight"], np.float32)
                                              .transpose(1, 2, 3, 0)),
                         np.asarray(state[f"{n}.bias"], np.float32)) for n in names]

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """[B, H, W, C] images to [B, features], as the torch encoder computes them."""
        x = np.asarray(obs, dtype=np.float32)
        for (w, b), (sh, sw), (top, bottom, left, right) in zip(self.weights, self.strides,
                                                                self.paddings, strict=True):
            if top or bottom or left or right:
                x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
            # windows [B, H', W', C, kh, kw]: a view; tensordot makes the im2col copy
            windows = sliding_window_view(x, w.shape[1:3], axis=(1, 2))[:, ::sh, ::sw]
            x = np.tensordot(windows, w, axes=([3, 4, 5], [0, 1, 2]))
            x += b
            if self.activation == "relu":
                np.maximum(x, 0.0, out=x)
            elif self.activation == "tanh":
                np.tanh(x, out=x)
        return x.transpose(0, 3, 1, 2).reshape(len(x), -1)  # channels-first, as torch flattens
