import torch


def my_dqn_target(batch, q_online, q_target, gamma):
    """The n-step double-DQN target y, one per row of `batch`."""
    with torch.no_grad():  # y is a constant the loss moves Q(s, a) towards: no gradient through it
        best = q_online(batch["new_obs"]).argmax(dim=1)  # the online network picks a* in s'
        next_value = q_target(batch["new_obs"]).gather(1, best[:, None]).squeeze(1)  # target values it
        not_terminated = 1.0 - batch["terminateds"].float()  # truncated rows still bootstrap
        return batch["rewards"] + gamma ** batch["n_step"].float() * not_terminated * next_value
