"""rlcourse: a small, readable distributed RL system with the names of RLlib's new API stack.

Imports are lazy on purpose: an EnvRunner actor imports `rlcourse.env_runner` and must not pay for
torch (about 145 MB and seconds of start-up) when it runs the default MLP in NumPy.
"""

from importlib import import_module

__version__ = "0.1.0"

_EXPORTS = {
    "AlgorithmConfig": "rlcourse.config",
    "Algorithm": "rlcourse.algorithm",
    "PPOConfig": "rlcourse.algorithms.ppo",
    "PPO": "rlcourse.algorithms.ppo",
    "IMPALAConfig": "rlcourse.algorithms.impala",
    "IMPALA": "rlcourse.algorithms.impala",
    "SingleAgentEpisode": "rlcourse.episode",
    "EnvRunner": "rlcourse.env_runner",
    "EnvRunnerGroup": "rlcourse.env_runner_group",
    "RLModule": "rlcourse.rl_module",
    "Learner": "rlcourse.learner",
    "LearnerGroup": "rlcourse.learner_group",
    "Callbacks": "rlcourse.callbacks",
    "EnvContext": "rlcourse.registry",
    "register_env": "rlcourse.registry",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'rlcourse' has no attribute {name!r}")
