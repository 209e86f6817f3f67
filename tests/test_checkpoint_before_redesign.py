"""DQN and SAC checkpoints written before the core's redesign (issue "A core a learner can read") load
and continue: same weights, counters, replay buffer and greedy actions.

tests/fixtures/checkpoint_before_redesign_{dqn,sac} were saved by the code of that time after six
iterations (CartPole-v1 and Pendulum-v1, seed 0, a [16] network, prioritized replay stored in the
checkpoint); *_expected.npz holds its weights, greedy actions for two observations, the iteration and
the replay buffer's size.
"""

from pathlib import Path

import numpy as np
import pytest

from rlcourse.algorithms.algorithm import Algorithm

pytestmark = pytest.mark.timeout(300)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# SAC's action bounds were sent to runners inside its weights then: they may stay in the saved file.
NOT_WEIGHTS = {"action_low", "action_high"}


@pytest.mark.parametrize("name, algo_name", [("dqn", "DQN"), ("sac", "SAC")])
def test_a_checkpoint_from_before_the_redesign_loads_and_continues(name, algo_name):
    expected = np.load(FIXTURES / f"checkpoint_before_redesign_{name}_expected.npz")
    saved = {key[2:]: expected[key] for key in expected.files if key.startswith("w/")}
    algo = Algorithm.from_checkpoint(FIXTURES / f"checkpoint_before_redesign_{name}")
    try:
        assert type(algo).__name__ == algo_name and algo.iteration == int(expected["iteration"])
        weights = algo.learner_group.get_weights()
        assert set(weights) <= set(saved) and set(saved) - set(weights) <= NOT_WEIGHTS
        for key, value in weights.items():
            np.testing.assert_array_equal(value, saved[key], err_msg=key)
        assert len(algo.replay_buffer) == int(expected["buffer_size"]) > 0
        np.testing.assert_allclose(algo.compute_actions(expected["obs"]), expected["actions"],
                                   rtol=1e-5, atol=1e-6)
        result = algo.train()
        assert result["training_iteration"] == int(expected["iteration"]) + 1
        assert len(algo.replay_buffer) > int(expected["buffer_size"])
    finally:
        algo.stop()
