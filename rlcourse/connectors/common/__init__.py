"""Connector pieces used both before the module and before the learner (RLlib's
`rllib/connectors/common/`)."""
