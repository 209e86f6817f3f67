"""PPO (Schulman et al. 2017): sample with the current policy, then several epochs of clipped updates
(the loss: `ppo_learner.py`)."""

from typing import Any

from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.algorithms.config_setters import NotProvided, setter
from rlcourse.algorithms.config_validation import check_bool, check_episode_chunks, check_number
from rlcourse.core import ALL_MODULES
from rlcourse.core.rl_module.default_model_config import DEFAULT_MODEL_CONFIG


class PPOConfig(AlgorithmConfig):
    """PPO's settings, with RLlib 2.60's defaults, so that an RLlib example behaves the same here
    (they suit large problems: the lessons set those of tuned_examples/ppo/cartpole_ppo.py)."""

    @property
    def algo_class(self) -> type["PPO"]:
        return PPO

    def get_default_learner_class(self) -> type:
        from rlcourse.algorithms.ppo.ppo_learner import PPOLearner  # torch: where learners run
        return PPOLearner

    # RLlib's PPO keeps the policy and value networks apart (its DefaultModelConfig shares them).
    default_model_config = {**DEFAULT_MODEL_CONFIG, "vf_share_layers": False}

    def __init__(self) -> None:
        super().__init__()
        self.num_env_runners = 2
        self.lr = 5e-5
        self.train_batch_size_per_learner = 4000
        self.minibatch_size = 128
        self.num_epochs = 30
        self.grad_clip = None
        self.lambda_ = 1.0
        self.clip_param = 0.3
        self.vf_clip_param = 10.0
        self.vf_loss_coeff = 1.0
        self.entropy_coeff = 0.0
        self.use_kl_loss = True
        self.kl_coeff = 0.2
        self.kl_target = 0.01

    @setter
    def training(self, *, lambda_: float = NotProvided, clip_param: float = NotProvided,
                 vf_clip_param: float = NotProvided, vf_loss_coeff: float = NotProvided,
                 entropy_coeff: float = NotProvided, use_kl_loss: bool = NotProvided,
                 kl_coeff: float = NotProvided, kl_target: float = NotProvided,
                 **kwargs: Any) -> "PPOConfig":
        """PPO's own settings plus the shared ones (gamma, lr, minibatch_size, ...)."""
        super().training(**kwargs)

    def validate(self) -> None:
        super().validate()
        check_number(self, "lambda_", 0.0, 1.0)
        for setting in ("clip_param", "vf_clip_param", "kl_target"):
            check_number(self, setting, 0.0, low_open=True)
        for setting in ("vf_loss_coeff", "entropy_coeff", "kl_coeff"):
            check_number(self, setting, 0.0)
        check_bool(self, "use_kl_loss", "True or False")
        check_episode_chunks(self)


class PPO(Algorithm):
    """Synchronous PPO: sample an on-policy batch, learn from it, send the new weights. Multi-agent
    as it is: the LearnerGroup updates each trainable module on its agents' episodes."""

    supports_multi_agent = True
    supports_lstm = True  # ppo_learner.py trains on sequences

    @classmethod
    def get_default_config(cls) -> PPOConfig:
        return PPOConfig()

    def training_step(self) -> dict[str, Any]:
        # 1. Sample a train batch with the current policy, split over all runners at once.
        with self.timers.time("env_runner_sampling_timer"):
            episodes, runner_metrics = self.env_runner_group.sample(
                num_timesteps=self.config.total_train_batch_size)
        env_runner_results = self.episode_stats.add(runner_metrics)
        # 2. Learn: GAE, then num_epochs of clipped minibatch SGD (ppo_learner.py), on every learner.
        with self.timers.time("learner_update_timer"):
            learner_results = self.learner_group.update(episodes)
        self.num_env_steps_trained_lifetime += learner_results[ALL_MODULES]["num_env_steps_trained"]
        # 3. Send the new weights to every runner: the next batch is on-policy again.
        with self.timers.time("synch_weights"):
            self.sync_env_runner_weights()
        return {"env_runners": env_runner_results, "learners": learner_results}
