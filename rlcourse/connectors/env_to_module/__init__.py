"""Env-to-module connectors (RLlib's `rllib/connectors/env_to_module/`), applied before the module."""

from rlcourse.connectors.env_to_module.env_to_module_pipeline import EnvToModulePipeline
from rlcourse.connectors.env_to_module.flatten_observations import FlattenObservations
from rlcourse.connectors.env_to_module.frame_stacking import FrameStackingEnvToModule
from rlcourse.connectors.env_to_module.mean_std_filter import MeanStdFilter

__all__ = ["EnvToModulePipeline", "FlattenObservations", "FrameStackingEnvToModule", "MeanStdFilter"]
