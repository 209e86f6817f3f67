"""Multi-agent PPO: shared and separate policies learn MultiAgentCartPole, frozen policies stay frozen,
and remote runners, data-parallel learners, checkpoints, evaluation and runner restarts all work."""

import os
import signal
import sys

import numpy as np
import pytest
import ray.cloudpickle
import torch
from helpers import SLOW_RESTARTS, small_ppo

import rlcourse.course.multi_agent_envs  # noqa: F401  (registers the course's envs)
from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.utils.validation import ConfigError

pytestmark = pytest.mark.timeout(300)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

CARTPOLE_PPO = {"lr": 3e-3, "train_batch_size_per_learner": 2000, "minibatch_size": 250,
                "num_epochs": 6, "vf_clip_param": 1000.0}


def shared(agent_id, episode, **kwargs):
    return "shared"


def separate(agent_id, episode, **kwargs):
    return f"p{agent_id}"


def cartpole(mapping=separate, policies=("p0", "p1"), **training):
    return (small_ppo().environment("MultiAgentCartPole", env_config={"num_agents": 2})
            .env_runners(num_envs_per_env_runner=4)
            .training(**{**CARTPOLE_PPO, **training})
            .multi_agent(policies=set(policies), policy_mapping_fn=mapping)
            .debugging(seed=0))


def weights_of(algo, module_id):
    return {k: v.copy() for k, v in algo.learner_group.get_weights()[module_id].items()}


def same(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.learning
@pytest.mark.parametrize("mapping, policies", [(shared, ["shared"]), (separate, ["p0", "p1"])],
                         ids=["one shared policy", "two separate policies"])
def test_multi_agent_cartpole_reaches_450_per_agent(algo_factory, mapping, policies):
    """The issue's goal: mean return >= 450 for each agent, with one shared policy and with two
    (seed 0 needs about 56k / 68k env steps on this machine; the budget is 300k)."""
    algo = algo_factory(cartpole(mapping, policies))
    for _ in range(150):
        result = algo.train()
        per_agent = result["env_runners"]["agent_episode_returns_mean"]
        if min(per_agent.values()) >= 450:
            break
    assert set(per_agent) == {0, 1}
    assert min(per_agent.values()) >= 450, per_agent
    assert set(result["env_runners"]["module_episode_returns_mean"]) == set(policies)
    assert set(result["learners"]) == {*policies, "__all_modules__"}


def test_results_per_module_and_agent_steps_counted(algo_factory):
    algo = algo_factory(cartpole(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=1))
    result = algo.train()
    learners = result["learners"]
    total = learners["__all_modules__"]
    assert total["num_env_steps_trained"] == result["env_runners"]["num_env_steps_sampled"] == 400
    # Both CartPoles step in every env step until they fall: each module gets its agent's steps.
    assert 0 < learners["p0"]["num_module_steps_trained"] <= 400
    assert total["num_module_steps_trained"] == (learners["p0"]["num_module_steps_trained"]
                                                 + learners["p1"]["num_module_steps_trained"])
    assert {"policy_loss", "vf_loss", "entropy"} <= learners["p1"].keys()
    assert result["num_env_steps_trained_lifetime"] == 400


def test_policies_not_to_train_keep_their_weights_and_optimizer(algo_factory):
    algo = algo_factory(cartpole(train_batch_size_per_learner=400, minibatch_size=100,
                                 num_epochs=1).multi_agent(policies_to_train={"p0"}))
    before = {mid: weights_of(algo, mid) for mid in ("p0", "p1")}
    result = algo.train()
    assert set(result["learners"]) == {"p0", "__all_modules__"}
    assert same(weights_of(algo, "p1"), before["p1"])
    assert not same(weights_of(algo, "p0"), before["p0"])
    learners = algo.learner_group.local_learner.learners
    assert not learners["p1"].optimizer.state and learners["p0"].optimizer.state
    # The runners act with the learner's weights of both (the frozen one included).
    runner = algo.env_runner_group.local_env_runner
    np.testing.assert_array_equal(runner.modules["p1"].network.layers[0][0],
                                  before["p1"]["pi.0.weight"].T)


def test_separate_policies_start_from_different_weights(algo_factory):
    algo = algo_factory(cartpole())
    assert not same(weights_of(algo, "p0"), weights_of(algo, "p1"))


def test_remote_runners_and_two_learners_train_every_module_identically(ray_session, algo_factory):
    config = (cartpole(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=1)
              .env_runners(num_env_runners=2, num_cpus_per_env_runner=0.25)
              .learners(num_learners=2, num_cpus_per_learner=0.25))
    algo = algo_factory(config)
    before = weights_of(algo, "p0")
    for _ in range(2):
        result = algo.train()
    assert result["env_runners"]["num_env_steps_sampled"] >= 800  # 400 per learner
    assert not same(weights_of(algo, "p0"), before)
    states = algo.learner_group.foreach_learner("get_weights")
    for mid in ("p0", "p1"):
        assert same(states[0][mid], states[1][mid])
    # The runners got the new weights of both modules.
    runner_p1 = algo.env_runner_group.foreach_env_runner(
        lambda runner: runner.modules["p1"].network.layers[0][0].copy())
    np.testing.assert_allclose(runner_p1[0], states[0]["p1"]["pi.0.weight"].T)


def test_a_checkpoint_restores_every_module_and_optimizer(tmp_path, algo_factory):
    """Weights, optimizer moments and counters of every module come back exactly. (Unlike
    single-agent runners, multi-agent runners start new episodes after a restore.)"""
    config = cartpole(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=2)
    algo = algo_factory(config)
    algo.train()
    saved = algo.learner_group.get_state()
    path = algo.save_to_path(tmp_path / "ckpt")
    restored = Algorithm.from_checkpoint(path, allowed=[separate])
    try:
        state = restored.learner_group.get_state()
        assert state["module"].keys() == saved["module"].keys()
        for name, tensor in saved["module"].items():
            assert torch.equal(state["module"][name], tensor), name
        for mid in ("p0", "p1"):
            moments = state["optimizer"][mid]["state"]
            assert moments and all(torch.equal(moments[i]["exp_avg"], slot["exp_avg"])
                                   for i, slot in saved["optimizer"][mid]["state"].items())
        assert state["modules"] == saved["modules"]
        assert restored.iteration == 1 and restored.config.policies == ["p0", "p1"]
        result = restored.train()
        assert result["num_env_steps_sampled_lifetime"] == 800
        assert set(result["learners"]) == {"p0", "p1", "__all_modules__"}
    finally:
        restored.stop()


def test_a_checkpoint_with_other_policies_is_refused(tmp_path, algo_factory):
    from rlcourse.utils.checkpoints import CheckpointError

    path = algo_factory(cartpole()).save_to_path(tmp_path / "ckpt")
    other = algo_factory(cartpole(shared, ["shared"]))
    with pytest.raises(CheckpointError, match="modules"):
        other.restore_from_path(path)


def test_evaluation_reports_per_agent_and_module_returns(algo_factory):
    algo = algo_factory(cartpole(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=1)
                        .evaluation(evaluation_interval=1, evaluation_duration=4))
    evaluation = algo.train()["evaluation"]["env_runners"]
    assert evaluation["num_episodes"] == 4
    assert set(evaluation["agent_episode_returns_mean"]) == {0, 1}
    assert set(evaluation["module_episode_returns_mean"]) == {"p0", "p1"}
    assert evaluation["episode_return_mean"] == pytest.approx(
        sum(evaluation["agent_episode_returns_mean"].values()))


def test_a_killed_runner_is_restarted_and_training_goes_on(ray_session, algo_factory):
    config = (cartpole(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=1)
              .env_runners(num_env_runners=2, num_cpus_per_env_runner=0.25)
              .fault_tolerance(**SLOW_RESTARTS))
    algo = algo_factory(config)
    algo.train()
    pid = algo.env_runner_group.foreach_env_runner(lambda runner: os.getpid())[0]
    os.kill(pid, signal.SIGKILL)
    for _ in range(8):
        result = algo.train()
        if result["env_runners"]["num_env_runner_restarts"]:
            break
    assert result["env_runners"]["num_env_runner_restarts"] == 1
    assert result["env_runners"]["num_healthy_env_runners"] == 2
    assert algo.env_runner_group.foreach_env_runner(lambda runner: os.getpid())[0] != pid


def test_compute_actions_and_get_module_by_module_id(algo_factory):
    algo = algo_factory(cartpole())
    obs = np.zeros((3, 4), np.float32)
    actions = algo.compute_actions(obs, module_id="p1")
    module = algo.get_module("p1")
    with torch.no_grad():
        logits = module.forward_inference({"obs": torch.as_tensor(obs)})["action_dist_inputs"]
    np.testing.assert_array_equal(actions, logits.argmax(-1).numpy())
    with pytest.raises(ValueError, match="module_id"):
        algo.compute_actions(obs)
    with pytest.raises(KeyError, match="p0.*p1"):
        algo.get_module("main")


def test_too_few_steps_of_a_module_for_two_learners_is_a_clear_error():
    # 10 env steps in one sub-env: each agent's steps come in one chunk, which one learner gets;
    # refused at build (before, the first train() failed).
    config = (cartpole(train_batch_size_per_learner=5, minibatch_size=5, num_epochs=1)
              .env_runners(num_envs_per_env_runner=1, rollout_fragment_length=10)
              .learners(num_learners=2, num_cpus_per_learner=0.25))
    with pytest.raises(ConfigError, match=r"num_learners=2 .*whole episode chunks.*only 1 per "
                                          r"iteration.*num_envs_per_env_runner=2"):
        config.validate()
