"""SAC swings Pendulum-v1 up: a smoothed return of -250 within 20k env steps (RLlib's pass mark).

The settings are SACConfig's defaults, written out. They are RLlib's tuned Pendulum example's where
rlcourse has the setting (its learning rates, initial_alpha, tau, priorities alpha 1.0 / beta 0.0,
a 100k buffer, learning from 256 env steps on, returns smoothed over 5 episodes), with 3-step returns
where RLlib draws n from 2 to 5, a [128, 128] network where RLlib uses [256, 256]
(benchmarks/sac_pendulum.py measures its updates/s), and a replay ratio of 256 (one 256-row update
per env step sampled, RLlib's natural ratio) over 100-step training_steps. Seeds 0-4 passed at
3,600-4,000 env steps, 51-163 s each on a busy 2-core machine (benchmarks/sac_pendulum.py); this
file's run (seed 0) took 56 s.
"""

from rlcourse.algorithms.sac.sac import SACConfig

config = (
    SACConfig()
    .environment("Pendulum-v1")
    .training(actor_lr=2e-4, critic_lr=8e-4, alpha_lr=9e-4, lr=None, initial_alpha=1.0,
              target_entropy="auto", n_step=3, tau=0.005, gamma=0.99,
              train_batch_size_per_learner=256, target_network_update_freq=0,
              training_intensity=256,
              replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 100_000,
                                    "alpha": 1.0, "beta": 0.0},
              num_steps_sampled_before_learning_starts=256)
    .rl_module(model_config={"fcnet_hiddens": [128, 128], "fcnet_activation": "relu"})
    .reporting(metrics_num_episodes_for_smoothing=5)
    .debugging(seed=0)
)

stop = {"env_runners/episode_return_mean": -250, "num_env_steps_sampled_lifetime": 20_000}
pass_criteria = {"env_runners/episode_return_mean": -250}
