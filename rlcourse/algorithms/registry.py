"""rlcourse's algorithms by name (RLlib's `rllib/algorithms/registry.py`), registered with Ray Tune
where Tune is imported, so that `tune.Tuner("PPO", param_space=config)` works as in RLlib."""

import sys
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm import Algorithm

# Each name -> the package (in rlcourse/algorithms/) that exports the algorithm class of that name.
ALGORITHMS = {"PPO": "ppo", "IMPALA": "impala", "APPO": "appo", "DQN": "dqn", "SAC": "sac",
              "ApexDQN": "apex_dqn", "BC": "bc", "CQL": "cql", "MARWIL": "marwil"}
# The Ray sessions (None: before ray.init) where Tune has the names: Tune's registry sends them to
# the Ray that is up, or to the next one started, and a later Ray starts without them.
_registered_in: set[str | None] = set()


def get_algorithm_class(name: str) -> type["Algorithm"]:
    """The algorithm class called `name`."""
    if name not in ALGORITHMS:
        raise ValueError(f"Unknown algorithm {name!r}: rlcourse's algorithms are "
                         f"{', '.join(ALGORITHMS)}.")
    return getattr(import_module(f"rlcourse.algorithms.{ALGORITHMS[name]}"), name)


def register_with_tune() -> None:
    """Where Ray Tune is imported, register every algorithm as a Tune trainable under its name, once
    per Ray session (each config calls this). Importing rlcourse never imports Tune."""
    if "ray.tune" not in sys.modules:
        return
    import ray

    from rlcourse.tune.trainable import register_trainables
    from rlcourse.utils.resources import current_ray_session

    session = current_ray_session() if ray.is_initialized() else None
    if session in _registered_in:
        return
    _registered_in.add(session)  # first: registering builds configs, which call this again
    try:
        register_trainables({name: get_algorithm_class(name) for name in ALGORITHMS})
    except BaseException:
        _registered_in.discard(session)
        raise
