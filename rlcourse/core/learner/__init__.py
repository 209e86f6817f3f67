"""Learner (episodes -> batch -> loss -> optimizer step) and LearnerGroup (one, or N data-parallel)."""
