"""rlcourse: a small, readable distributed RL system with the names of RLlib's new API stack.

Imports are lazy, so that an EnvRunner actor running the NumPy MLP never imports torch (its cost:
benchmarks/startup_memory.py).
"""

from importlib import import_module

from rlcourse.algorithms.registry import ALGORITHMS

__version__ = "0.1.0"

_EXPORTS = {
    "AlgorithmConfig": "rlcourse.algorithms.algorithm_config",
    "Algorithm": "rlcourse.algorithms.algorithm",
    **{name: f"rlcourse.algorithms.{package}" for algo, package in ALGORITHMS.items()
       for name in (f"{algo}Config", algo)},
    "SingleAgentEpisode": "rlcourse.env.single_agent_episode",
    "EnvRunner": "rlcourse.env.env_runner",
    "SingleAgentEnvRunner": "rlcourse.env.single_agent_env_runner",
    "EnvRunnerGroup": "rlcourse.env.env_runner_group",
    "RLModule": "rlcourse.core.rl_module.rl_module",
    "Learner": "rlcourse.core.learner.learner",
    "LearnerGroup": "rlcourse.core.learner.learner_group",
    "Callbacks": "rlcourse.callbacks.callbacks",
    "EnvContext": "rlcourse.env.env_context",
    "register_env": "rlcourse.env.registry",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'rlcourse' has no attribute {name!r}")
