"""EnvRunnerGroup: the EnvRunners of an Algorithm, in this process or as Ray actors.

With `num_env_runners=0` one EnvRunner samples in the driver. With N > 0, N EnvRunner actors sample
in parallel, each with the CPUs (fractions allowed) and GPUs the config asks for. New weights are put
into Ray's object store once per sync and every runner receives the same reference.
"""

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import ray

from rlcourse.env_runner import EnvRunner
from rlcourse.episode import SingleAgentEpisode
from rlcourse.registry import EnvCreator

STARTUP_TIMEOUT_S = 120


class EnvRunnerGroup:
    """Creates the runners, samples from all of them at once, and keeps their weights in sync."""

    def __init__(self, config, env_creator: EnvCreator, num_env_runners: int | None = None):
        self.config = config
        n = config.num_env_runners if num_env_runners is None else num_env_runners
        self.local_env_runner = EnvRunner(config, env_creator) if n == 0 else None
        remote_cls = ray.remote(EnvRunner).options(
            num_cpus=config.num_cpus_per_env_runner, num_gpus=config.num_gpus_per_env_runner)
        self.remote_env_runners = [remote_cls.remote(config, env_creator, worker_index=i)
                                   for i in range(1, n + 1)]
        # The actors start in the background (a new process each); wait_until_ready() collects
        # these answers, so the driver can build its learners meanwhile.
        self._pings = [r.ping.remote() for r in self.remote_env_runners]
        self.weights_seq_no = -1  # the version of the last weights sent; 0 = the initial ones
        self._in_flight: dict[ray.ObjectRef, int] = {}  # async sample request -> runner index
        self._runner_seq_no = [-1] * n

    def wait_until_ready(self, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        """Wait until every runner actor is up; a runner whose env fails to build raises here."""
        ray.get(self._pings, timeout=timeout_s)

    @property
    def num_remote_env_runners(self) -> int:
        return len(self.remote_env_runners)

    def sample(self, num_timesteps: int | None = None, num_episodes: int | None = None,
               explore: bool | None = None) -> tuple[list[SingleAgentEpisode], list[dict]]:
        """Sample `num_timesteps` (or `num_episodes`) in total, split evenly over the runners.

        Returns the episodes and each runner's metrics (finished episodes' returns and lengths).
        """
        if self.local_env_runner is not None:
            episodes = self.local_env_runner.sample(num_timesteps, num_episodes, explore)
            return episodes, [self.local_env_runner.get_metrics()]
        n = self.num_remote_env_runners
        per_runner = {"num_timesteps": None if num_timesteps is None else math.ceil(num_timesteps / n),
                      "num_episodes": None if num_episodes is None else math.ceil(num_episodes / n)}
        episode_refs = [r.sample.remote(**per_runner, explore=explore)
                        for r in self.remote_env_runners]
        metric_refs = [r.get_metrics.remote() for r in self.remote_env_runners]
        results = ray.get(episode_refs + metric_refs)
        episodes = [ep for runner_episodes in results[:n] for ep in runner_episodes]
        return episodes, results[n:]

    def fetch_ready_async_samples(self, max_requests_in_flight: int,
                                  weights: tuple[Any, int] | None = None,
                                  timeout_s: float = 1.0) -> list[tuple[list, dict]]:
        """Asynchronous sampling: keep up to `max_requests_in_flight` `sample()` requests running on
        each runner and return the (episodes, metrics) of those that are done, without waiting for
        the slowest runner. `weights` is (weights, version), the weights as an ObjectRef when the
        runners are actors: a runner whose request came back gets them before its next request, if
        it holds an older version.
        """
        if self.local_env_runner is not None:  # no actors: sample here, synchronously
            runner = self.local_env_runner
            if weights is not None and runner.weights_seq_no < weights[1]:
                runner.set_weights(*weights)
            return [runner.sample_and_get_metrics()]
        self._top_up_requests(max_requests_in_flight)
        refs = list(self._in_flight)
        ready, _ = ray.wait(refs, num_returns=1, timeout=timeout_s)
        if ready:  # take everything else that is done by now, too
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        results = []
        for ref in ready:
            i = self._in_flight.pop(ref)
            results.append(ray.get(ref))
            if weights is not None and self._runner_seq_no[i] < weights[1]:
                self.remote_env_runners[i].set_weights.remote(weights[0], weights[1])
                self._runner_seq_no[i] = weights[1]
        self._top_up_requests(max_requests_in_flight)
        return results

    def _top_up_requests(self, max_requests_in_flight: int) -> None:
        counts = np.bincount(list(self._in_flight.values()), minlength=len(self.remote_env_runners))
        for i, runner in enumerate(self.remote_env_runners):
            for _ in range(max_requests_in_flight - counts[i]):
                self._in_flight[runner.sample_and_get_metrics.remote()] = i

    def sync_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Send new weights to every runner: one `ray.put`, then one small call per runner."""
        self.weights_seq_no += 1
        self._runner_seq_no = [self.weights_seq_no] * len(self.remote_env_runners)
        if self.local_env_runner is not None:
            self.local_env_runner.set_weights(weights, self.weights_seq_no)
        if self.remote_env_runners:
            ref = ray.put(weights)
            ray.get([r.set_weights.remote(ref, self.weights_seq_no)
                     for r in self.remote_env_runners])

    def foreach_env_runner(self, fn: Callable[[EnvRunner], Any]) -> list[Any]:
        """Call `fn(runner)` on every runner (in its own process for actors) and return results."""
        if self.local_env_runner is not None:
            return [fn(self.local_env_runner)]
        return ray.get([r.__ray_call__.remote(fn) for r in self.remote_env_runners])

    def stop(self) -> None:
        self._in_flight.clear()
        if self.local_env_runner is not None:
            self.local_env_runner.stop()
        for runner in self.remote_env_runners:
            ray.kill(runner)
        self.remote_env_runners = []
