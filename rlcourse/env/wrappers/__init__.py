"""Env wrappers (RLlib's `rllib/env/wrappers/`)."""
