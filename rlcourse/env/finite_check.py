"""No silent NaNs: non-finite observations and rewards are stopped on the runner, before any Learner.

One NaN or infinite reward (a reward of None arrives as NaN too) makes the advantages, the loss and,
after one optimizer step, every weight NaN, while `train()` keeps returning results. So:

  * the EnvRunner checks each sample's buffers with one `np.isfinite` over the whole [T, N] array
    (not per step: about 10 microseconds per 4096-step sample, under 0.01% of sampling time), and raises
    `NonFiniteEnvData` naming the env, the runner, the sub-env and the field;
  * with `restart_failed_sub_environments=True` the sub-env's wrapper (`sub_env_restarts.py`) checks
    every step it passes on and treats non-finite data like an exception: the sub-env is rebuilt and
    its broken episode dropped, so the runner's check never fires.
"""

from typing import Any

import numpy as np

FIX = ("Fix the env (return finite float values, never None), or set config.fault_tolerance("
       "restart_failed_sub_environments=True) to rebuild a sub-env that returns them and drop its "
       "broken episode.")


class NonFiniteEnvData(ValueError):
    """An env returned a NaN or infinite observation or reward (or a reward of None)."""


def non_finite_field(obs: Any, reward: Any = 0.0) -> str | None:
    """'obs' or 'reward' if that value of one env step is not finite, else None.

    Observations that are not numeric arrays (e.g. dicts for a custom module) are not checked."""
    if reward is None or not np.isfinite(reward):
        return "reward"
    obs = np.asarray(obs)
    if obs.dtype.kind in "fc" and not np.isfinite(obs).all():
        return "obs"
    return None


def check_finite_sample(obs: np.ndarray, rewards: np.ndarray,
                        final_obs: dict[tuple[int, int], np.ndarray], where: str) -> None:
    """Raise NonFiniteEnvData if any observation or reward of a sample is NaN or infinite.

    `obs` is [T+1, N, ...], `rewards` [T, N], `final_obs` maps (t, sub-env) to an episode's last
    observation; `where` names the env and the runner, e.g. "env 'CartPole-v1' on EnvRunner 1".
    """
    if not np.isfinite(rewards).all():  # the rare case: only then find where
        t, i = np.argwhere(~np.isfinite(rewards))[0]
        _fail(where, "reward", int(i), int(t), rewards[t, i])
    if obs.dtype.kind in "fc" and not np.isfinite(obs).all():
        t, i = np.argwhere(~np.isfinite(obs.reshape(*obs.shape[:2], -1)).all(axis=2))[0]
        _fail(where, "obs", int(i), int(t), obs[t, i])
    for (t, i), last in final_obs.items():
        if non_finite_field(last) is not None:
            _fail(where, "obs", i, t + 1, last)


def _fail(where: str, field: str, sub_env: int, t: int, value: Any) -> None:
    what = "reward (NaN here also means None)" if field == "reward" else "observation"
    raise NonFiniteEnvData(
        f"The {where}, sub-env {sub_env}, returned a non-finite {what} at time step {t} of this "
        f"sample (field {field!r}): {value!r}. NaN or infinite data would make every weight NaN. {FIX}")
