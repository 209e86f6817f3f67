"""Ray Tune for rlcourse: an Algorithm as a Trainable (`trainable.py`, the only module that imports
Tune) and search spaces in config setters (`search_space.py`)."""
