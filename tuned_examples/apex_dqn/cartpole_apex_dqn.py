"""Ape-X DQN learns CartPole-v1 on two runner actors: a smoothed return of 150 within 120k env steps.

Not DQN's 450: on a 2-core machine two runners that sample all the time leave the learner a few
hundred updates/s, and 450 takes about 20,000 updates (DQN's settings), minutes on a busy machine.
150 is far above a random policy (about 20). ApexDQNConfig's defaults otherwise (DQN's, with each
runner's own fixed epsilon, 50-step fragments, 2 requests in flight per runner, one replay shard
serving 4 batches per request), plus throttled sampling: runners pause while the learner is
behind DQN's replay ratio (8), so they cannot crowd it out on 2 cores. benchmarks/apex_throughput.py
measures its env steps and updates/s.
"""

from rlcourse.algorithms.apex_dqn import ApexDQNConfig

config = (
    ApexDQNConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=2, num_cpus_per_env_runner=0.5)
    .training(throttle_sampling_to_training_intensity=True)
    .debugging(seed=0)
)

stop = {"env_runners/episode_return_mean": 150, "num_env_steps_sampled_lifetime": 120_000}
pass_criteria = {"env_runners/episode_return_mean": 150}
