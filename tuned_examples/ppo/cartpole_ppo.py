"""PPO solves CartPole-v1: a smoothed return of 450 (of 500) within 200k env steps.

The settings are PPOConfig's defaults, which were tuned for CartPole (benchmarks/solve_cartpole.py),
written out here so that the example shows what matters: a 2000-step batch in 8 minibatches,
6 epochs, lr 1e-3 and clipped gradients. Two runner actors of 4 sub-envs each sample while the
learner trains in this process; seed 0 passes at about 90k env steps (about 15 s on 2 cores).
"""

from rlcourse.algorithms.ppo.ppo import PPOConfig

config = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=2, num_envs_per_env_runner=4, num_cpus_per_env_runner=0.5)
    .training(lr=1e-3, train_batch_size_per_learner=2000, minibatch_size=250, num_epochs=6,
              gamma=0.99, lambda_=0.95, clip_param=0.2, vf_loss_coeff=0.5, grad_clip=0.5)
    .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"})
    .debugging(seed=0)
)

stop = {"env_runners/episode_return_mean": 450, "num_env_steps_sampled_lifetime": 200_000}
pass_criteria = {"env_runners/episode_return_mean": 450}
