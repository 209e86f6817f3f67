"""APPO: bad settings are named, the loss is the clipped surrogate on V-trace advantages, the target
network follows the policy on RLlib's schedule, the circular buffer hands each batch out K times,
and a checkpoint restores the target network. (Learning CartPole: tests/test_learning.py runs
tuned_examples/appo/cartpole_appo.py.)"""

import queue

import gymnasium as gym
import numpy as np
import pytest
import torch
from helpers import SMALL_MODEL

from rlcourse.algorithms.appo.appo import APPOConfig
from rlcourse.algorithms.appo.appo_learner import APPOLearner
from rlcourse.algorithms.impala.circular_buffer import CircularBuffer
from rlcourse.algorithms.impala.vtrace import vtrace
from rlcourse.utils.checkpoints import read_checkpoint
from rlcourse.utils.validation import ConfigError

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize(("settings", "setting"), [
    ({"clip_param": 0.0}, "clip_param"),
    ({"use_kl_loss": "yes"}, "use_kl_loss"),
    ({"kl_coeff": -1.0}, "kl_coeff"),
    ({"kl_target": 0.0}, "kl_target"),
    ({"target_worker_clipping": 0.0}, "target_worker_clipping"),
    ({"tau": 1.5}, "tau"),
    ({"target_network_update_freq": 0}, "target_network_update_freq"),
    ({"circular_buffer_num_batches": 0}, "circular_buffer_num_batches"),
    ({"circular_buffer_iterations_per_batch": 1.5}, "circular_buffer_iterations_per_batch"),
    ({"learner_queue_size": 16}, "learner_queue_size"),  # APPO's queue is the circular buffer
])
def test_bad_settings_are_named(settings, setting):
    config = APPOConfig().environment("CartPole-v1").training(**settings)
    with pytest.raises(ConfigError) as err:
        config.validate()
    assert err.value.setting == setting and setting in str(err.value)


def _learner(**training) -> APPOLearner:
    config = (APPOConfig().environment("CartPole-v1").debugging(seed=0)
              .rl_module(model_config=SMALL_MODEL).training(**training))
    config.validate()
    env = gym.make("CartPole-v1")
    return APPOLearner(config, env.observation_space, env.action_space)


def _batch(learner: APPOLearner, steps: int = 12) -> dict[str, torch.Tensor]:
    """Two fragments of `steps // 2` steps (the first ends in a termination), with behaviour
    log-probs near the target network's."""
    rng = np.random.default_rng(0)
    all_obs = torch.tensor(rng.normal(size=(steps + 2, 4)), dtype=torch.float32)
    obs_index = torch.tensor([*range(steps // 2), *range(steps // 2 + 1, steps + 1)])
    actions = torch.tensor(rng.integers(0, 2, steps))
    with torch.no_grad():
        logits = learner.target_module.forward_train({"obs": all_obs[obs_index]})["action_dist_inputs"]
    old_logp = torch.log_softmax(logits, -1).gather(1, actions[:, None]).squeeze(1)
    chunk_ends = np.zeros(steps, bool)
    chunk_ends[[steps // 2 - 1, -1]] = True
    terminateds = np.zeros(steps, bool)
    terminateds[steps // 2 - 1] = True
    return {"all_obs": all_obs, "obs_index": obs_index, "actions": actions,
            "action_logp": old_logp + torch.tensor(rng.normal(0, 0.5, steps), dtype=torch.float32),
            "rewards": torch.ones(steps), "terminateds": torch.tensor(terminateds),
            "chunk_ends": torch.tensor(chunk_ends)}


def _logp_entropy(module, batch):
    logits = module.forward_train({"obs": batch["all_obs"][batch["obs_index"]]})["action_dist_inputs"]
    log_probs = torch.log_softmax(logits, -1).double()
    return (log_probs.gather(1, batch["actions"][:, None]).squeeze(1).numpy(),
            log_probs.numpy())


@pytest.mark.parametrize("use_kl_loss", [False, True])
def test_the_loss_is_the_clipped_surrogate_on_vtrace_advantages(use_kl_loss):
    clip, coeffs = 0.1, {"vf_loss_coeff": 0.5, "entropy_coeff": 0.01, "kl_coeff": 0.3}
    learner = _learner(clip_param=clip, use_kl_loss=use_kl_loss, **coeffs)
    with torch.no_grad():  # the policy moves away from the target network (the old policy)
        for param in learner.module.parameters():
            param.add_(0.3 * torch.randn_like(param))
    batch = _batch(learner)
    total, stats = learner.compute_loss(batch)

    with torch.no_grad():
        logp, log_probs = _logp_entropy(learner.module, batch)
        old_logp, old_log_probs = _logp_entropy(learner.target_module, batch)
        all_values = learner.module.compute_values({"obs": batch["all_obs"]}).double().numpy()
    index, mu = batch["obs_index"].numpy(), batch["action_logp"].double().numpy()
    values = all_values[index]
    vs, advantages = vtrace(mu, old_logp, batch["rewards"].numpy(), values, all_values[index + 1],
                            batch["terminateds"].numpy(), batch["chunk_ends"].numpy(), 0.99)
    ratio = np.minimum(np.exp(mu - old_logp), 2.0) * np.exp(logp - mu)
    assert np.any(np.abs(ratio - 1) > clip)  # the clip is in play
    policy_loss = -np.mean(np.minimum(ratio * advantages,
                                      np.clip(ratio, 1 - clip, 1 + clip) * advantages))
    vf_loss = 0.5 * np.mean((values - vs) ** 2)
    entropy = -np.mean(np.sum(np.exp(log_probs) * log_probs, axis=1))
    kl = np.mean(np.sum(np.exp(old_log_probs) * (old_log_probs - log_probs), axis=1))
    expected = (policy_loss + coeffs["vf_loss_coeff"] * vf_loss - coeffs["entropy_coeff"] * entropy
                + (coeffs["kl_coeff"] * kl if use_kl_loss else 0.0))
    assert float(stats["policy_loss"]) == pytest.approx(policy_loss, rel=1e-4, abs=1e-6)
    assert float(stats["mean_kl_loss"]) == pytest.approx(kl if use_kl_loss else 0.0, rel=1e-4,
                                                         abs=1e-7)
    assert float(total.detach()) == pytest.approx(expected, rel=1e-4, abs=1e-6)
    assert ("curr_kl_coeff" in stats) == use_kl_loss


@pytest.mark.parametrize(("training", "interval"), [
    ({"target_network_update_freq": 3, "circular_buffer_num_batches": 1,
      "circular_buffer_iterations_per_batch": 1}, 3),
    ({"target_network_update_freq": 1, "circular_buffer_num_batches": 2,
      "circular_buffer_iterations_per_batch": 2}, 4),  # RLlib's unit: freq x N x K batches
])
def test_the_target_network_follows_the_policy_exactly_every_interval(training, interval):
    learner = _learner(lr=1e-2, **training)
    assert learner.config.target_network_update_interval == interval
    batch = {k: v.numpy() for k, v in _batch(learner).items()}
    learner.build_batch = lambda episodes: batch

    def weights(module):
        return torch.cat([p.detach().flatten().clone() for p in module.parameters()])

    target = weights(learner.target_module)
    for update in range(1, 3 * interval + 1):
        result = learner.update(episodes=[])
        now = weights(learner.target_module)
        if update % interval == 0:
            assert torch.equal(now, weights(learner.module)), update  # tau = 1: a copy
            target = now
        else:
            assert torch.equal(now, target) and not torch.equal(now, weights(learner.module)), update
        assert result["num_target_updates"] == update // interval


def test_the_circular_buffer_hands_each_batch_out_k_times_and_evicts_the_oldest():
    buffer = CircularBuffer(num_batches=2, iterations_per_batch=3, seed=0)
    assert buffer.put("a") == 0 and buffer.put("b") == 0 and buffer.qsize() == 6
    taken = [buffer.get_nowait() for _ in range(2)]  # neither batch is used up yet
    assert buffer.put("c") == 1  # the oldest, "a", is evicted with whatever uses it had left
    taken += [buffer.get_nowait() for _ in range(buffer.qsize())]
    assert "a" not in taken[2:] and taken.count("b") == 3 and taken.count("c") == 3
    assert buffer.empty()
    with pytest.raises(queue.Empty):
        buffer.get(timeout=0.01)


def test_a_checkpoint_restores_the_target_network_and_kl_coefficient(tmp_path):
    config = (APPOConfig().environment("CartPole-v1").debugging(seed=0)
              .env_runners(num_env_runners=0, max_requests_in_flight_per_env_runner=2)
              .rl_module(model_config={"fcnet_hiddens": [8]})
              .training(lr=1e-3, train_batch_size_per_learner=100, use_kl_loss=True,
                        target_network_update_freq=1, circular_buffer_num_batches=2,
                        circular_buffer_iterations_per_batch=1))
    with config.build_algo() as algo:
        for _ in range(3):
            algo.train()
        path = algo.save_to_path(tmp_path / "ckpt")
    state, tensors = read_checkpoint(path)
    saved = state["learner"]
    assert saved["num_target_updates"] >= 1 and saved["curr_kl_coeff"] != 1.0
    with config.build_algo() as restored:
        restored.restore_from_path(path)
        with restored.learner_thread.lock:
            learner = restored.learner_group.local_learner
            for name, value in tensors["learner.pt"]["target_module"].items():
                torch.testing.assert_close(learner.target_module.state_dict()[name], value)
            assert learner.curr_kl_coeff == saved["curr_kl_coeff"]
            assert learner.num_target_updates == saved["num_target_updates"]
        assert restored.train()["training_iteration"] == state["algorithm"]["iteration"] + 1


def test_a_learner_joining_a_group_takes_rank_0s_target_network_too(monkeypatch):
    """join_group broadcast the policy only: unseeded, rank 1 kept a random target network of its
    own, and the learners' averaged gradients mixed ratios against unrelated networks."""
    config = APPOConfig().environment("CartPole-v1").rl_module(model_config=SMALL_MODEL)
    env = gym.make("CartPole-v1")
    rank_0, rank_1 = (APPOLearner(config, env.observation_space, env.action_space) for _ in "01")
    sent = iter([p.data for p in rank_0.module.parameters()])
    monkeypatch.setattr(torch.distributed, "broadcast", lambda tensor, src: tensor.copy_(next(sent)))
    rank_1.join_group(1, 2)
    for name, value in rank_0.target_module.state_dict().items():
        assert torch.equal(value, rank_1.target_module.state_dict()[name]), name
