"""The learning core: `rl_module/` (the networks) and `learner/` (the updates).

Two names used everywhere, as in RLlib's `rllib/core/__init__.py`: the module id of a single-agent
algorithm (and of every agent unless `config.multi_agent(...)` maps them elsewhere), and the results
key for numbers about all modules together (result["learners"][ALL_MODULES]). And the columns a
stateful module adds to episodes and train batches, named as in RLlib's `rllib/core/columns.py`.
"""

DEFAULT_MODULE_ID = "default_policy"
ALL_MODULES = "__all_modules__"
STATE_IN = "state_in"  # a stateful module's state before a step (or a sequence's first step)
STATE_OUT = "state_out"  # its state after the step: the next step's STATE_IN
LOSS_MASK = "loss_mask"  # True for a sequence's real steps, False for its zero padding
ALL_OBS_MASK = "all_obs_mask"  # the same for sequences of all observations (the bootstrap one too)
