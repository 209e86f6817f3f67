"""An rlcourse Algorithm as a Ray Tune Trainable: `tune.Tuner("PPO", param_space=config)`. Unlike
RLlib's, the Algorithm is not itself a Trainable, so importing it never imports Tune (seconds)."""

import functools
import logging
from typing import TYPE_CHECKING, Any

from ray import tune
from ray.tune.tune import _Config  # what Tune turns into a dict with to_dict(); RLlib subclasses it

from rlcourse.utils.imports import class_path
from rlcourse.utils.resources import trial_bundles
from rlcourse.utils.validation import ConfigError

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm import Algorithm
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig


def trial_config(algo_class: type["Algorithm"], settings: dict[str, Any]) -> "AlgorithmConfig":
    """A trial's AlgorithmConfig from the dict Tune resolved (`config.to_dict()`, or setting names),
    set through the setters and validated as `build_algo()` would."""
    settings = dict(settings)
    config = algo_class.get_default_config()
    name = settings.pop("config_class", class_path(type(config)))
    if name != class_path(type(config)):
        raise ConfigError("param_space", name, f"{algo_class.__name__} is configured with "
                          f"{type(config).__name__}: pass {type(config).__name__}()... as "
                          "param_space, or the trainable of the algorithm your config is for.")
    config.update_from_dict(settings)
    config.validate()
    return config


@functools.cache
def trainable_for(algo_class: type["Algorithm"]) -> type[tune.Trainable]:
    """The Tune Trainable that runs `algo_class`, named like it (trials: PPO_CartPole-v1_00000)."""
    for config_class in type(algo_class.get_default_config()).__mro__[:-1]:  # AlgorithmConfig too
        _Config.register(config_class)  # Tune accepts param_space=config, calls config.to_dict()

    class AlgorithmTrainable(tune.Trainable):
        algorithm_class = algo_class

        @classmethod
        def default_resource_request(cls, config: dict[str, Any]) -> tune.PlacementGroupFactory:
            """Called by Tune in the driver before each trial: a bad setting fails here, and the
            trial waits in Tune's queue until all it will start fits."""
            algo_config = trial_config(cls.algorithm_class, config)
            return tune.PlacementGroupFactory(trial_bundles(algo_config),
                                              strategy=algo_config.placement_strategy or "PACK")

        def setup(self, config: dict[str, Any]) -> None:
            # The trial's own info lines would fill a notebook; the driver's reports say the same.
            for name in ("ray.tune", "ray.train"):
                logging.getLogger(name).setLevel(logging.WARNING)
            self.algorithm = trial_config(self.algorithm_class, config).build_algo()

        def step(self) -> dict[str, Any]:
            return self.algorithm.train()

        def save_checkpoint(self, checkpoint_dir: str) -> None:
            self.algorithm.save_to_path(checkpoint_dir)

        def load_checkpoint(self, checkpoint: str) -> None:
            self.algorithm.restore_from_path(checkpoint)

        def reset_config(self, new_config: dict[str, Any]) -> bool:
            """`TuneConfig(reuse_actors=True)`: the next trial's Algorithm, in this process."""
            self.algorithm.stop()
            self.algorithm = trial_config(self.algorithm_class, new_config).build_algo()
            return True

        def cleanup(self) -> None:
            self.algorithm.stop()

    AlgorithmTrainable.__name__ = AlgorithmTrainable.__qualname__ = algo_class.__name__
    return AlgorithmTrainable


def register_trainables(algorithms: dict[str, type["Algorithm"]]) -> None:
    """Each algorithm's Trainable under its name in Tune's registry, as RLlib registers its own."""
    for name, algo_class in algorithms.items():
        tune.register_trainable(name, trainable_for(algo_class))
