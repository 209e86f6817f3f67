"""DQN solves CartPole-v1: a smoothed return of 450 within 200k env steps (RLlib's pass mark).

The settings are DQNConfig's defaults, written out: RLlib's where rlcourse has the setting (lr 5e-4,
batches of 32, double Q, dueling heads, a target network synced every 500 env steps, prioritized
replay with alpha 0.6 / beta 0.4, learning from 1,000 env steps on), with 3-step returns, epsilon
from 1.0 down to 0.02 over 10k env steps (RLlib's tuned CartPole example), a replay ratio of 8 and a
[64, 64] network (a comment in DQNConfig says why). One runner, in this process.
benchmarks/dqn_cartpole.py measures env steps and wall time to the mark over seeds.
"""

from rlcourse.algorithms.dqn.dqn import DQNConfig

config = (
    DQNConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=0)
    .training(lr=5e-4, train_batch_size_per_learner=32, gamma=0.99, grad_clip=40.0, double_q=True,
              dueling=True, n_step=3, epsilon=[[0, 1.0], [10_000, 0.02]],
              target_network_update_freq=500, tau=1.0,
              num_steps_sampled_before_learning_starts=1000, training_intensity=8.0,
              replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 50_000,
                                    "alpha": 0.6, "beta": 0.4})
    .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"})
    .debugging(seed=0)
)

stop = {"env_runners/episode_return_mean": 450, "num_env_steps_sampled_lifetime": 200_000}
pass_criteria = {"env_runners/episode_return_mean": 450}
