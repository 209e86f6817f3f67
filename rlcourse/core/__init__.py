"""The learning core: `rl_module/` (the networks) and `learner/` (the updates).

Two names used everywhere, as in RLlib's `rllib/core/__init__.py`: the module id of a single-agent
algorithm (and of every agent unless `config.multi_agent(...)` maps them elsewhere), and the results
key for numbers about all modules together (result["learners"][ALL_MODULES]).
"""

DEFAULT_MODULE_ID = "default_policy"
ALL_MODULES = "__all_modules__"
