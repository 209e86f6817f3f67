"""The learning core: `rl_module/` (the networks) and `learner/` (the updates)."""
