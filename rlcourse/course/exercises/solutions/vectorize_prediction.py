def predict_steps_per_s(num_envs, step_latency_s, mode):
    """Env steps/s of one runner whose `num_envs` sub-envs each wait `step_latency_s` per step."""
    if mode == "SYNC":  # one vector step = num_envs waits in a row, and gives num_envs env steps
        return num_envs / (num_envs * step_latency_s)
    return num_envs / step_latency_s  # ASYNC: the waits overlap, one wait per vector step
