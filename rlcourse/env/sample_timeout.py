"""`sample_timeout_s` for a runner in the driver's own process (num_env_runners=0, and evaluation
with evaluation_num_env_runners=0).

A runner actor that takes too long is ended and restarted by its EnvRunnerGroup (a `ray.get` with a
timeout, then `ray.kill`). A runner in the driver cannot be killed, so it watches the clock itself:
before each vector step it compares the time with the request's deadline and raises
`SampleTimeoutError` once it has passed. What this bounds: envs whose episodes never end while
whole episodes are asked for (evaluation), and envs that are slow step after step. What it cannot
bound: one `env.step` that never returns, because nothing in this process runs until it does; sample
on runner actors for that.
"""

import time


class SampleTimeoutError(TimeoutError):
    """A runner in this process took longer than `sample_timeout_s` for one sample request."""


def sample_deadline(config, worker_index: int) -> float | None:
    """When the request starting now must be done: for the runner in this process (worker_index 0)
    only; runner actors are timed by their EnvRunnerGroup."""
    return None if worker_index else time.monotonic() + config.sample_timeout_s


def check_deadline(deadline: float | None, config, runner_name: str) -> None:
    """Raise SampleTimeoutError if `deadline` has passed (costs one clock read per vector step)."""
    if deadline is None or time.monotonic() <= deadline:
        return
    raise SampleTimeoutError(
        f"The {runner_name} did not finish a sample request within sample_timeout_s="
        f"{config.sample_timeout_s} s. Its env may hang, or its episodes never end (whole episodes,"
        " as evaluation samples, need an end: wrap the env in gymnasium.wrappers.TimeLimit). If "
        "sampling is just slow, raise config.env_runners(sample_timeout_s=...). Only the time "
        "between env steps is bounded in this process: to also end an env.step that never "
        "returns, sample on runner actors (num_env_runners >= 1, evaluation_num_env_runners >= 1), "
        "which are ended and restarted.")
