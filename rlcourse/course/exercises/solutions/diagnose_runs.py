def diagnose(runs):
    """Each run's bug, read from its metrics."""
    return {
        # Returns of thousands over episodes of ~150 steps: 100 per step, where CartPole pays 1;
        # vf_loss pinned at vf_clip_param (1000) and vf_loss_unclipped in the millions.
        "A": "reward_scale_too_large",
        # episode_len_mean stops at 100 (a time limit), vf_loss stays high, and the critic values
        # the start states well below what the balancing policy collects.
        "B": "no_bootstrap_at_truncation",
        # 64 env steps per iteration: less than an episode per batch; entropy and KL move more
        # than the healthy run's, without the collapse of a too-high lr.
        "C": "too_few_env_steps_per_update",
    }
