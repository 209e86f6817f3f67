"""Offline data as RLlib's new stack has it (rllib/offline/): runners that record what they sample
as Parquet in RLlib's columns (offline_env_runner.py), and `OfflineData` with its `OfflinePreLearner`,
which stream recorded rows through Ray Data into a Learner's batches (offline_data.py)."""
