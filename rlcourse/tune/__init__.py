"""Ray Tune for rlcourse Algorithms: `trainable.py` (an Algorithm as a Tune Trainable, one placement
group per trial) and `search_space.py` (search spaces inside config setters, checked up front).

Nothing here is imported by `import rlcourse` or by a runner: Tune is imported only by
`Algorithm.as_trainable()`, in the process that runs the experiment.
"""
