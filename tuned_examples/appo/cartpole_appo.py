"""APPO on CartPole-v1: the pass mark is a smoothed return of 450 (of 500) within 1M env steps.

The course's CartPole layout (tuned_examples/impala/cartpole_impala.py: 2 runners x 4 sub-envs,
50-step fragments, 500-step batches, lr 1e-3, 64 x 64 tanh networks) with APPO's settings, which are
RLlib 2.60's defaults but for a circular buffer of 2 batches (not 8) and target_network_update_freq
1 (not 2): the target network follows the policy every 1 x 2 x 2 = 4 updates (RLlib's: 32), which
learned about twice as much per update in runs with one runner in the driver (a machine too busy
for more: about one update a second). Its budget is IMPALA's.
"""

from rlcourse.algorithms.appo.appo import APPOConfig

config = (
    APPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=2, num_envs_per_env_runner=4, num_cpus_per_env_runner=0.5,
                 rollout_fragment_length=50, max_requests_in_flight_per_env_runner=2)
    .training(lr=1e-3, train_batch_size_per_learner=500, gamma=0.99, grad_clip=40.0,
              vf_loss_coeff=0.5, entropy_coeff=0.01, clip_param=0.4,
              circular_buffer_num_batches=2, circular_buffer_iterations_per_batch=2,
              target_network_update_freq=1)
    .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh",
                             "vf_share_layers": False})
    .debugging(seed=0)
)

stop = {"env_runners/episode_return_mean": 450, "num_env_steps_sampled_lifetime": 1_000_000}
pass_criteria = {"env_runners/episode_return_mean": 450}
