"""The rl_module() settings' checks (part of AlgorithmConfig.validate(), config_validation.py): the
default model's fcnet, LSTM and CNN settings with RLlib's names, each error naming the fix."""

from typing import TYPE_CHECKING

from rlcourse.core.rl_module.default_model_config import (
    ACTIVATIONS,
    CONV_DEFAULTS,
    DEFAULT_MODEL_CONFIG,
    lstm_settings,
)
from rlcourse.utils.validation import fail, is_int

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig


def check_rl_module(config: "AlgorithmConfig") -> None:
    """The default model's model_config (a module class of one's own reads what it likes)."""
    if config.rl_module_class is not None:
        from rlcourse.core.rl_module.rl_module import RLModule  # torch: only for a class of one's own
        if not (isinstance(config.rl_module_class, type)
                and issubclass(config.rl_module_class, RLModule)):
            fail(config, "rl_module_class", "pass a subclass of rlcourse.RLModule.")
        return
    known = {**lstm_settings(DEFAULT_MODEL_CONFIG), **CONV_DEFAULTS}
    unknown = sorted(set(config.model_config) - set(known))
    if unknown:  # (a module class of your own may read any keys: that case returned above)
        fail(config, "model_config", f"the default model has no settings {unknown}; its settings "
             f"are {sorted(known)}. For other architectures, pass your own rl_module_class.")
    hiddens = config.model_config.get("fcnet_hiddens")
    if not (isinstance(hiddens, list | tuple) and hiddens and all(
            is_int(h) and h > 0 for h in hiddens)):
        fail(config, "model_config", "fcnet_hiddens must be a non-empty list of positive layer "
             "sizes, e.g. [256, 256].")
    if config.model_config.get("fcnet_activation") not in ACTIVATIONS:
        fail(config, "model_config", f"fcnet_activation must be one of {sorted(ACTIVATIONS)}.")
    if not isinstance(config.model_config.get("vf_share_layers", False), bool):
        fail(config, "model_config", "vf_share_layers must be True (policy and value heads share "
             "the hidden layers) or False (two separate networks).")
    _check_lstm(config, lstm_settings(config.model_config))


def _check_lstm(config: "AlgorithmConfig", settings: dict) -> None:
    """RLlib's use_lstm, lstm_cell_size and max_seq_len (lstm_module.py), and what they need."""
    if not isinstance(settings["use_lstm"], bool):
        fail(config, "model_config", "use_lstm must be True (an LSTM after the encoder) or False.")
    for key in ("lstm_cell_size", "max_seq_len"):
        if not (is_int(settings[key]) and settings[key] >= 1):
            fail(config, "model_config", f"{key} must be a whole number >= 1 (RLlib's default: "
                 f"{lstm_settings({})[key]}), got {settings[key]!r}.")
    if not settings["use_lstm"]:
        return
    if not config.algo_class.supports_lstm or config.is_multi_agent:
        fail(config, "model_config", "use_lstm=True is not implemented for "
             f"{'multi-agent ' if config.is_multi_agent else ''}{config.algo_class.__name__} in "
             "rlcourse yet; single-agent PPO supports it: PPOConfig().rl_module(model_config="
             "{'use_lstm': True, 'vf_share_layers': True}).")
    if settings["vf_share_layers"] is not True:
        fail(config, "model_config", "use_lstm=True needs vf_share_layers=True: the policy and "
             "value heads read one LSTM (as RLlib's StatelessCartPole example sets it).")
    seq = settings["max_seq_len"]
    if seq > config.train_batch_size_per_learner or (config.minibatch_size or seq) < seq:
        fail(config, "model_config", f"max_seq_len={seq} must be at most minibatch_size="
             f"{config.minibatch_size} and train_batch_size_per_learner="
             f"{config.train_batch_size_per_learner}: minibatches are whole sequences. Use a "
             "smaller max_seq_len or larger batches.")
