"""A sweep (run with `rlcourse tune`): PPO on CartPole-v1 over three learning rates.

The same settings as cartpole_ppo.py, with `lr` a Ray Tune grid search; each trial runs its runner
in the trial's own process (num_env_runners=0) so that two trials share a 2-core machine. Run it
with `--num-samples 3` to see how much seeds spread each learning rate's result.
"""

from ray import tune

from rlcourse.algorithms.ppo.ppo import PPOConfig

config = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
    .resources(num_cpus_for_main_process=1)
    .training(lr=tune.grid_search([3e-4, 1e-3, 3e-3]), train_batch_size_per_learner=1000,
              minibatch_size=250, num_epochs=6, gamma=0.99, lambda_=0.95, clip_param=0.2,
              vf_clip_param=1000.0, vf_loss_coeff=0.5, use_kl_loss=False, grad_clip=0.5)
    .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh",
                             "vf_share_layers": False})
)

stop = {"env_runners/episode_return_mean": 450, "num_env_steps_sampled_lifetime": 100_000}
pass_criteria = {"env_runners/episode_return_mean": 450}
