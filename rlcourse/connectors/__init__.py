"""Connectors: small callables between the env and the module (RLlib's `rllib/connectors/`)."""
