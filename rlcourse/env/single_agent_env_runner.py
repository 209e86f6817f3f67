"""RLlib's name and import path for the EnvRunner, so RLlib's snippets run with only the import changed:

    from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner
    runner = SingleAgentEnvRunner(config=config)   # its own env and a newly initialized module
    episodes = runner.sample(num_timesteps=100)

The class itself is `EnvRunner` in `env_runner.py`.
"""

from rlcourse.env.env_runner import EnvRunner as SingleAgentEnvRunner

__all__ = ["SingleAgentEnvRunner"]
