"""RLlib 2.60's BC trains on the Parquet files rlcourse recorded (RLlib imported for real, as in
lesson 15): the columns, their names and types are the ones RLlib's reader expects."""

from pathlib import Path

import gymnasium as gym
import pytest

EXPERT_DATA = Path(__file__).parent / "fixtures" / "cartpole_ppo_expert"


@pytest.mark.learning
@pytest.mark.timeout(180)
def test_rllibs_bc_learns_from_data_rlcourse_recorded(ray_session):
    from ray.rllib.algorithms.bc import BCConfig  # (takes seconds to import)

    env = gym.make("CartPole-v1")
    config = (BCConfig().environment("CartPole-v1", observation_space=env.observation_space,
                                     action_space=env.action_space)
              .offline_data(input_=[str(p) for p in sorted(EXPERT_DATA.rglob("*.parquet"))],
                            input_compress_columns=[], dataset_num_iters_per_learner=1,
                            # One mapping actor of half a CPU: the default two of a whole CPU
                            # each leave no CPU for the reads on a 2-CPU Ray, which then waits.
                            map_batches_kwargs={"concurrency": 1, "num_cpus": 0.5})
              .training(train_batch_size_per_learner=250, lr=3e-3))
    algo = config.build_algo()
    try:
        losses = [algo.train()["learners"]["default_policy"]["policy_loss"] for _ in range(5)]
    finally:
        algo.stop()
    print(f"RLlib's BC on rlcourse's recording: policy_loss {losses}")
    # From ln 2 (a coin) towards the expert's own entropy (about 0.45): it learns the recorded actions.
    assert losses[0] > 0.65 and min(losses[-2:]) < 0.62, losses
