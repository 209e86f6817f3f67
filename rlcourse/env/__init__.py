"""Where experience comes from: EnvRunner, EnvRunnerGroup, SingleAgentEpisode, env creation."""
