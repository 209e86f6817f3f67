from rlcourse.env.external.client import episode_entry


def simulate(connection, policy, env, steps_per_batch, max_env_steps):
    """Send whole episodes in batches of >= steps_per_batch env steps, taking new weights from
    each answer, until max_env_steps are sent; return the env steps sent."""
    sent = 0
    while sent < max_env_steps:
        batch, steps = [], 0
        while steps < steps_per_batch and sent + steps < max_env_steps:
            obs, _ = env.reset()
            observations, actions, rewards, logps = [obs], [], [], []
            terminated = truncated = False
            while not (terminated or truncated):
                action, logp = policy.act(obs)
                obs, reward, terminated, truncated, _ = env.step(action)
                observations.append(obs)
                actions.append(action)
                rewards.append(reward)
                logps.append(logp)
            batch.append(episode_entry(observations, actions, rewards, logps, terminated))
            steps += len(rewards)
        sent += steps
        if sent >= max_env_steps:  # the last batch: no answer needed
            connection.send({"type": "EPISODES", "episodes": batch})
        else:
            state = connection.request({"type": "EPISODES_AND_GET_STATE", "episodes": batch},
                                       "SET_STATE")
            policy.set_state(state)
    return sent
