"""The Algorithm and AlgorithmConfig base classes, then one folder per algorithm (ppo/, impala/,
dqn/, sac/)."""
