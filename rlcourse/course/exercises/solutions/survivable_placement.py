from rlcourse import PPOConfig


def placement_config():
    """Two runners (4 CartPoles each) on both nodes, all able to run on the head alone."""
    return (
        PPOConfig()
        .environment("CartPole-v1")
        # Half a CPU each: both fit into the head's 1 CPU once worker-1 is gone.
        .env_runners(num_env_runners=2, num_envs_per_env_runner=4, num_cpus_per_env_runner=0.5)
        # SPREAD: one bundle per node while both are there, re-placed where there is room after.
        .resources(placement_strategy="SPREAD")
        .debugging(seed=0)
    )
