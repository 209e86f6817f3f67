"""Checkpointable: an Algorithm's checkpoints, mixed into Algorithm (algorithm.py).

    get_state()          -> (JSON-compatible state, tensors): config, counters, learner, runners
    set_state(...)       checks all of it first (checkpoint_checks.check_restorable), then applies
    save_to_path(path)   get_state() -> utils/checkpoints.py writes the directory atomically
    restore_from_path()  utils/checkpoints.py reads and verifies the files -> set_state()
    from_checkpoint()    builds the algorithm from the checkpoint's saved config, then set_state()

RLlib's Algorithm gets save_to_path / restore_from_path / from_checkpoint from its Checkpointable
base (rllib/utils/checkpoints.py) and writes get_state / set_state itself. Here an Algorithm is the
only thing saved this way, so this mixin holds both halves; it uses the Algorithm's attributes
(config, learner_group, env_runner_group, ...). Algorithms with more to save (DQN's replay buffer,
Ape-X's shards) override get_state / set_state and call super().
"""

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rlcourse.algorithms.checkpoint_checks import check_restorable, env_layers
from rlcourse.env.registry import is_registered
from rlcourse.utils.checkpoint_contents import config_from_json, config_to_json
from rlcourse.utils.checkpoints import CheckpointError, read_checkpoint, write_checkpoint

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm import Algorithm


class Checkpointable:
    """get_state / set_state and the checkpoint directory around them, for Algorithm."""

    def get_state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(JSON-compatible state, tensors) of everything a continued run needs."""
        self._check_usable()
        learner_state = self.learner_group.get_state()
        tensors = {name: learner_state.pop(name) for name in ("module", "optimizer", "torch_rng")}
        state = {
            "config": config_to_json(self.config),
            "algorithm": {"iteration": self.iteration,
                          "num_env_steps_trained_lifetime": self.num_env_steps_trained_lifetime,
                          "weights_seq_no": self.env_runner_group.weights_seq_no,
                          "env_to_module_state": self.env_runner_group.env_to_module_state,
                          **self.episode_stats.get_state()},
            "learner": learner_state,
            "env_runners": self.env_runner_group.get_state(),
            # Evaluation envs go on too, so a resumed run evaluates (and picks a best) as before.
            "evaluation_env_runners": (self.eval_env_runner_group.get_state()
                                       if self.eval_env_runner_group else None),
            "callbacks": self.callbacks.get_state(),
        }
        return state, {"learner.pt": tensors}

    def set_state(self, state: dict[str, Any], tensors: dict[str, Any]) -> None:
        """Restore what `get_state` returned. All of it is checked first (algorithm, network and
        optimizer shapes, files, runners' sub-envs), so a checkpoint that does not fit raises and
        leaves this algorithm as it was."""
        self._check_usable()
        evaluation = state.get("evaluation_env_runners")  # None: not evaluated yet when saved
        eval_group = self.eval_env_runner_group
        if evaluation is not None and eval_group is None and self.config.evaluation_interval:
            eval_group = self._build_eval_group()  # built on first use otherwise; needed now
        try:
            check_restorable(state, tensors, self.config, self.learner_group.get_state(),
                             self.env_runner_group.foreach_env_runner(env_layers),
                             eval_group.foreach_env_runner(env_layers) if eval_group else None)
        except BaseException:
            if eval_group is not self.eval_env_runner_group:
                eval_group.stop()  # a refused restore leaves the algorithm as it was
            raise
        self.eval_env_runner_group = eval_group
        algo = state["algorithm"]
        self.iteration = algo["iteration"]
        self.num_env_steps_trained_lifetime = algo["num_env_steps_trained_lifetime"]
        self.episode_stats.set_state(algo)
        self.learner_group.set_state({**state["learner"], **tensors["learner.pt"]})
        self.env_runner_group.set_state(state["env_runners"])
        self.callbacks.set_state(state.get("callbacks", {}))  # {}: saved before callbacks had state
        if evaluation is not None and eval_group is not None:
            eval_group.set_state(evaluation)
        self.env_runner_group.sync_weights(self.learner_group.get_weights(inference_only=True),
                                           algo["weights_seq_no"],
                                           algo.get("env_to_module_state"))  # None: none saved

    def save_to_path(self, path: str | os.PathLike) -> str:
        """Write a checkpoint to directory `path` (replacing one there); return its absolute path."""
        state, tensors = self.get_state()
        return str(write_checkpoint(path, state, tensors))

    def restore_from_path(self, path: str | os.PathLike) -> None:
        """Continue from the checkpoint in `path` (saved by an algorithm with the same settings)."""
        state, tensors = read_checkpoint(path)
        try:
            self.set_state(state, tensors)
        except CheckpointError as e:
            raise CheckpointError(f"{path}: {e}") from None
        self.callbacks.on_checkpoint_loaded(algorithm=self)

    @staticmethod
    def from_checkpoint(path: str | os.PathLike, allowed: Iterable[Any] = ()) -> "Algorithm":
        """Build the checkpoint's algorithm from its saved config and restore its state.

        Loading imports no class or function because the checkpoint names it (an edited file must
        not run code): its config may name rlcourse's own classes, register_env names and gymnasium
        ids. Pass the classes and env creators of your own that it names in `allowed`, e.g.
        `Algorithm.from_checkpoint(path, allowed=[MyCallbacks, make_my_env])`.
        """
        state, tensors = read_checkpoint(path)
        algo = config_from_json(state["config"], f"The checkpoint {path}", allowed,
                                is_registered=is_registered).build_algo()
        try:
            algo.set_state(state, tensors)
        except BaseException:
            algo.stop()
            raise
        algo.callbacks.on_checkpoint_loaded(algorithm=algo)
        return algo
