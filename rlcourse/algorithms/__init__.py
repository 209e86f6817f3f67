"""Algorithms built from the shared EnvRunner / Learner / Algorithm pieces."""
