"""The Algorithm and AlgorithmConfig base classes, then one folder per algorithm (ppo/, impala/,
appo/, dqn/, apex_dqn/, sac/, and the offline bc/, marwil/, cql/)."""
