"""Offline data (RLlib's rllib/offline/): runners that record what they sample as Parquet, and
`OfflineData`, which streams recorded rows through Ray Data into a Learner's batches."""
