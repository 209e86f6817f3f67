"""PPO swings Pendulum-v1 up (continuous actions): a smoothed return of -300 within 400k env steps,
RLlib's pass mark for its own Pendulum PPO example, with that example's settings.

PPOConfig's defaults are RLlib 2.60's, so this file sets only where it departs from them: lr 3e-4,
6 epochs, lambda 0.1 and a ReLU network (as RLlib's example does), and gamma 0.95, a clip of 0.2
and separate policy and value networks, as in the runs measured here. With the course's
earlier CartPole-minded defaults (lr 1e-3, grad_clip 0.5, no KL penalty, a [64, 64] tanh network)
the policy collapsed onto a full-torque spin: -1,450 after 400k env steps, worse than acting at
random (about -1,200). With these settings, seed 0 passed at 208k env steps in 34 s (this file: 2
runners of 10 sub-envs, 2 cores), and one local runner of 20 sub-envs on one core reached -261 at
224k env steps in 45 s. Observations are not normalized: Pendulum's are already within [-8, 8].
"""

from rlcourse.algorithms.ppo.ppo import PPOConfig

config = (
    PPOConfig()
    .environment("Pendulum-v1")
    .env_runners(num_env_runners=2, num_envs_per_env_runner=10, num_cpus_per_env_runner=0.5)
    .training(lr=3e-4, num_epochs=6, gamma=0.95, lambda_=0.1, clip_param=0.2)
    .rl_module(model_config={"fcnet_activation": "relu", "vf_share_layers": False})
    .debugging(seed=0)
)

stop = {"env_runners/episode_return_mean": -300, "num_env_steps_sampled_lifetime": 400_000}
pass_criteria = {"env_runners/episode_return_mean": -300}
