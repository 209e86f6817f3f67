"""PPO learns CartPole from two simulator processes that run client.py, each connected to its own
server runner actor: the episodes come over TCP, the algorithm is PPO's, unchanged."""

import time

import pytest
from external_helpers import client_processes, external_config

CLIENT_STEPS_PER_BATCH = 250


@pytest.mark.learning
@pytest.mark.timeout(600)  # a hang; the run itself ends on its env-step budget
def test_ppo_learns_cartpole_from_two_external_simulator_processes(ray_session, algo_factory):
    config = (external_config().env_runners(num_env_runners=2, num_cpus_per_env_runner=0.5)
              .training(lr=3e-3, train_batch_size_per_learner=1000, minibatch_size=250,
                        vf_clip_param=1000.0).debugging(seed=0))
    algo = algo_factory(config)
    with client_processes(algo, CLIENT_STEPS_PER_BATCH) as simulators:
        start, best, steps = time.perf_counter(), 0.0, 0
        while steps < 40_000 and best < 150:
            result = algo.train()
            best = max(best, result["env_runners"]["episode_return_mean"])
            steps = result["num_env_steps_sampled_lifetime"]
        print(f"external PPO: return {best:.0f} at {steps} env steps in "
              f"{time.perf_counter() - start:.1f} s")
        assert best >= 150, result["env_runners"]
        assert all(s.poll() is None for s in simulators)  # both still connected and sampling
