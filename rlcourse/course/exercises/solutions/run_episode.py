def run_episode(env, policy, seed):
    """Play one episode of `env` with `policy`, starting from `env.reset(seed=seed)`; return the
    sum of its rewards."""
    obs, info = env.reset(seed=seed)
    episode_return, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(policy(obs))  # the newest obs
        episode_return += reward
        done = terminated or truncated  # a time limit ends an episode too
    return episode_return
