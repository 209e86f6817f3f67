"""What the engine shares: checkpoints, metrics, resources and Ray start-up, config checks."""
