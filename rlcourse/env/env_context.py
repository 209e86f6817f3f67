class EnvContext(dict):
    """What an env creator receives (RLlib's `rllib/env/env_context.py`): the `env_config` dict, plus
    which runner and which sub-env slot the env is built for."""

    def __init__(self, env_config: dict, worker_index: int = 0, vector_index: int = 0,
                 num_workers: int = 0):
        super().__init__(env_config or {})
        self.worker_index, self.vector_index, self.num_workers = worker_index, vector_index, num_workers
