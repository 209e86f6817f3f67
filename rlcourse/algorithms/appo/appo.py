"""APPO (Luo et al. 2020, "IMPACT"): IMPALA, learning from each batch up to K times (a circular
buffer) with PPO's clipped surrogate against a target network (`appo_learner.py`)."""

from typing import Any

from rlcourse.algorithms.config_setters import NotProvided, setter
from rlcourse.algorithms.config_validation import check_bool, check_int, check_number
from rlcourse.algorithms.impala.circular_buffer import CircularBuffer
from rlcourse.algorithms.impala.impala import IMPALA, IMPALAConfig
from rlcourse.core.rl_module.default_model_config import DEFAULT_MODEL_CONFIG
from rlcourse.utils.validation import fail


class APPOConfig(IMPALAConfig):
    """APPO's settings, with RLlib 2.60's names and defaults (the course's CartPole settings:
    tuned_examples/appo/cartpole_appo.py)."""

    @property
    def algo_class(self) -> type["APPO"]:
        return APPO

    def get_default_learner_class(self) -> type:
        from rlcourse.algorithms.appo.appo_learner import APPOLearner  # torch
        return APPOLearner

    # RLlib's APPO keeps the policy and value networks apart, as its PPO does.
    default_model_config = {**DEFAULT_MODEL_CONFIG, "vf_share_layers": False}

    def __init__(self) -> None:
        super().__init__()
        self.clip_param = 0.4
        self.use_kl_loss = False
        self.kl_coeff = 1.0
        self.kl_target = 0.01
        self.target_worker_clipping = 2.0
        self.tau = 1.0
        # The target network follows the policy every target_network_update_freq x N x K updates.
        self.target_network_update_freq = 2
        self.circular_buffer_num_batches = 8  # N
        self.circular_buffer_iterations_per_batch = 2  # K

    @setter
    def training(self, *, clip_param: float = NotProvided, use_kl_loss: bool = NotProvided,
                 kl_coeff: float = NotProvided, kl_target: float = NotProvided,
                 target_worker_clipping: float = NotProvided, tau: float = NotProvided,
                 target_network_update_freq: int = NotProvided,
                 circular_buffer_num_batches: int = NotProvided,
                 circular_buffer_iterations_per_batch: int = NotProvided,
                 **kwargs: Any) -> "APPOConfig":
        """APPO's own settings plus IMPALA's and the shared ones (gamma, lr, grad_clip, ...)."""
        super().training(**kwargs)

    def validate(self) -> None:
        super().validate()
        for setting in ("clip_param", "kl_target", "target_worker_clipping"):
            check_number(self, setting, 0.0, low_open=True)
        check_number(self, "kl_coeff", 0.0)
        check_number(self, "tau", 0.0, 1.0, low_open=True)
        check_bool(self, "use_kl_loss", "True or False")
        for setting in ("target_network_update_freq", "circular_buffer_num_batches",
                        "circular_buffer_iterations_per_batch"):
            check_int(self, setting, 1)
        if self.learner_queue_size != IMPALAConfig().learner_queue_size:
            fail(self, "learner_queue_size", "APPO's learner queue is a circular buffer: set "
                 "config.training(circular_buffer_num_batches=...) instead, as in RLlib.")

    @property
    def target_network_update_interval(self) -> int:
        """Learner updates between two target-network updates: target_network_update_freq x N x K
        (RLlib counts the same in env steps trained, n = N x K x train_batch_size_per_learner)."""
        return (self.target_network_update_freq * self.circular_buffer_num_batches
                * self.circular_buffer_iterations_per_batch)


class APPO(IMPALA):
    """IMPALA's training step (impala.py); the learner thread reads a circular buffer."""

    @classmethod
    def get_default_config(cls) -> APPOConfig:
        return APPOConfig()

    def learner_queue(self) -> CircularBuffer:
        return CircularBuffer(self.config.circular_buffer_num_batches,
                              self.config.circular_buffer_iterations_per_batch, self.config.seed)
