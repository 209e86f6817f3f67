import torch


def clipped_surrogate_loss(logp, old_logp, advantages, clip_param):
    """PPO's policy loss: -mean(min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A))."""
    ratio = torch.exp(logp - old_logp)  # pi_theta(a_t | s_t) / pi_old(a_t | s_t)
    clipped = torch.clamp(ratio, 1 - clip_param, 1 + clip_param)
    return -torch.min(ratio * advantages, clipped * advantages).mean()
