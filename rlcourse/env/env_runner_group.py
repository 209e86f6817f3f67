"""EnvRunnerGroup: an Algorithm's EnvRunners, one in this process (num_env_runners=0) or N Ray
actors; a failed or hung request loses its sample, and env_runner_health.py decides what next."""

import contextlib
import math
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError
from ray.util.placement_group import remove_placement_group

from rlcourse.connectors.env_to_module.env_to_module_pipeline import EnvToModulePipeline
from rlcourse.env.env_runner import EnvRunner
from rlcourse.env.env_runner_health import EnvRunnerHealth
from rlcourse.env.multi_agent_env_runner import MultiAgentEnvRunner
from rlcourse.env.registry import EnvCreator
from rlcourse.env.sample_result import SampleResult
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.resources import current_placement_group, env_runner_options, make_placement_group

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig

STARTUP_TIMEOUT_S = 120


class EnvRunnerGroup:
    """Creates the runners, samples from all of them at once, and keeps their weights in sync."""

    def __init__(self, config: "AlgorithmConfig", env_creator: EnvCreator,
                 num_env_runners: int | None = None,
                 on_recreated: Callable[[list[int]], None] | None = None,
                 env_to_module: EnvToModulePipeline | None = None):
        self.config = config
        # Runners' new connector statistics are merged by `env_to_module`, and sent with the weights.
        self.env_to_module, self.env_to_module_state = env_to_module, None
        n = config.num_env_runners if num_env_runners is None else num_env_runners
        # config.offline_data(output=...) names a runner that also records (offline/).
        runner_class = config.env_runner_cls or (
            MultiAgentEnvRunner if config.is_multi_agent else SingleAgentEnvRunner)
        self.local_env_runner = runner_class(config, env_creator) if n == 0 else None
        # Inside a Tune trial, the runners go into the trial's placement group, which reserved them.
        own_group = n and config.placement_strategy and current_placement_group() is None
        self.placement_group = make_placement_group(config, n) if own_group else None
        self.remote_env_runners = [
            ray.remote(runner_class).options(**env_runner_options(config, self.placement_group, i))
            .remote(config, env_creator, worker_index=i + 1) for i in range(n)]
        # The actors start in the background; wait_until_ready() collects these answers.
        self._pings = [r.ping.remote() for r in self.remote_env_runners]
        self.health = EnvRunnerHealth(config, self.remote_env_runners, on_recreated) if n else None
        self.weights_seq_no = -1  # the version of the last weights sent; 0 = the initial ones
        # What goes with the weights to the actors: the merged connector statistics (put once), epsilon.
        self._weights_ref: ray.ObjectRef | None = None
        self._state_ref: ray.ObjectRef | None = None
        self._epsilon: float | None = None
        self._weight_deliveries: list[ray.ObjectRef] = []  # set_weights calls not yet collected
        # Async sample requests (IMPALA, Ape-X): request -> runner; since when a runner owes one.
        self._in_flight: dict[ray.ObjectRef, int] = {}
        self._owing_since: dict[int, float] = {}

    def wait_until_ready(self, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        """Wait until every runner actor is up; a runner whose env fails to build raises here."""
        if not self._pings:  # no actors (and ray.get([]) would start Ray just to return [])
            return
        for i, pid in enumerate(ray.get(self._pings, timeout=timeout_s)):
            self.health.note_pid(i, pid)

    def get_node_names(self) -> list[str]:
        """Each runner's node name (`ray start --node-name`, else its IP; "driver": this process)."""
        node_ids = self.foreach_env_runner(lambda runner: runner.node_id)
        names = {node["NodeID"]: node["NodeName"] for node in ray.nodes()} if any(node_ids) else {}
        return [names.get(node_id, node_id) if node_id else "driver" for node_id in node_ids]

    @property
    def num_remote_env_runners(self) -> int:
        return len(self.remote_env_runners)

    @property
    def num_healthy_env_runners(self) -> int:
        return sum(self.health.healthy) if self.remote_env_runners else 1

    @property
    def num_env_runner_restarts(self) -> int:
        return self.health.num_restarts if self.health else 0

    @property
    def num_env_runner_failures(self) -> int:
        return self.health.num_failures if self.health else 0

    # -- weights ----------------------------------------------------------------------------
    def sync_weights(self, weights: dict[str, Any], weights_seq_no: int | None = None,
                     env_to_module_state: list | None = None, epsilon: float | None = None) -> None:
        """Give every runner `weights` (one `ray.put`; each sample request carries it, so a restarted
        runner catches up), the merged connector statistics (or `env_to_module_state`) and
        `epsilon`. Versions only grow (IMPALA's count updates): restored weights count as new."""
        self.weights_seq_no = max(self.weights_seq_no + 1, weights_seq_no or 0)
        if env_to_module_state is not None:
            self.env_to_module_state = env_to_module_state
        state = self.env_to_module_state
        if self.local_env_runner is not None:
            self.local_env_runner.set_weights(weights, self.weights_seq_no, state, epsilon)
        if self.remote_env_runners:
            self._weights_ref = ray.put(weights)
            self._state_ref = None if state is None else ray.put(state)
            self._epsilon = epsilon
            # Take finished deliveries' answers (a runner that died fails or catches up next request).
            done, self._weight_deliveries = ray.wait(
                self._weight_deliveries, num_returns=len(self._weight_deliveries), timeout=0)
            for ref in done:
                with contextlib.suppress(RayActorError, ActorUnavailableError):
                    ray.get(ref)
            self._weight_deliveries += [
                self.remote_env_runners[i].set_weights.remote(
                    self._weights_ref, self.weights_seq_no, self._state_ref, self._epsilon)
                for i, healthy in enumerate(self.health.healthy) if healthy]

    def _merge_env_to_module_buffers(self, buffers: list | None) -> None:
        """Add a runner's new connector statistics to the merged ones."""
        if buffers is not None and self.env_to_module is not None:
            self.env_to_module_state = self.env_to_module.merge_states(self.env_to_module_state,
                                                                       [buffers])

    def _sample_locally(self, **sample_kwargs: Any) -> SampleResult:
        result = self.local_env_runner.sample_and_get_metrics(**sample_kwargs)
        self._merge_env_to_module_buffers(result.env_to_module_buffers)
        return result

    def _request(self, i: int, **sample_kwargs: Any) -> ray.ObjectRef:
        return self.remote_env_runners[i].sample_and_get_metrics.remote(
            self._weights_ref, self.weights_seq_no, self._state_ref, self._epsilon, **sample_kwargs)

    # -- synchronous sampling ---------------------------------------------------------------
    def sample(self, num_timesteps: int | None = None, num_episodes: int | None = None,
               explore: bool | None = None) -> tuple[list[SingleAgentEpisode], list[dict]]:
        """Sample `num_timesteps` (or `num_episodes`) in total, split over the healthy runners; a
        failed runner's share is asked again of the others. Returns episodes and runners' metrics."""
        if self.local_env_runner is not None:
            result = self._sample_locally(num_timesteps=num_timesteps, num_episodes=num_episodes,
                                          explore=explore)
            return result.episodes, [result.metrics]
        episodes, metrics = [], []
        steps = done = 0  # env steps and finished episodes received so far
        while True:
            runners = self.health.healthy_indices()
            share = {"num_timesteps": None if num_timesteps is None
                     else math.ceil((num_timesteps - steps) / len(runners)),
                     "num_episodes": None if num_episodes is None
                     else math.ceil((num_episodes - done) / len(runners))}
            refs = {self._request(i, **share, explore=explore): i for i in runners}
            for ref, i in refs.items():
                result = self._get(ref, i, self.config.sample_timeout_s)
                if result is not None:
                    episodes += result.episodes
                    metrics.append(result.metrics)
            steps = sum(len(e) for e in episodes)
            done = sum(e.is_done for e in episodes)
            if ((num_timesteps is None or steps >= num_timesteps)
                    and (num_episodes is None or done >= num_episodes)
                    and (num_timesteps is not None or num_episodes is not None or metrics)):
                return episodes, metrics

    # -- asynchronous sampling (IMPALA, Ape-X) ----------------------------------------------
    def fetch_ready_async_samples(self, max_requests_in_flight: int, timeout_s: float = 1.0
                                  ) -> list[SampleResult]:
        """Keep up to `max_requests_in_flight` sample requests running on each healthy runner and
        return the results of those that are done, without waiting for the slowest runner."""
        if self.local_env_runner is not None:  # no actors: sample here, synchronously
            return [self._sample_locally()]
        refs = self._top_up(max_requests_in_flight)
        ready, _ = ray.wait(refs, num_returns=1, timeout=timeout_s)
        if ready:  # take everything else that is done by now, too
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        results = [self._get(ref, self._answered(ref), timeout_s=None) for ref in ready]
        self._end_round(max_requests_in_flight)
        return [result for result in results if result is not None]

    def fetch_ready_async_sample_refs(self, max_requests_in_flight: int, timeout_s: float = 0.0
                                      ) -> list[tuple[int, ray.ObjectRef]]:
        """As `fetch_ready_async_samples`, but (runner index, ObjectRef of its SampleResult), not
        fetched: Ape-X's replay shards resolve them. Settle each with `settle_async_sample`."""
        refs = self._top_up(max_requests_in_flight)
        ready = ray.wait(refs, num_returns=len(refs), timeout=timeout_s,
                         fetch_local=False)[0] if refs else []
        finished = [(self._answered(ref), ref) for ref in ready]
        self._end_round(max_requests_in_flight)
        return finished

    def settle_async_sample(self, i: int, pid_or_error: int | Exception,
                            env_to_module_buffers: list | None = None) -> None:
        """Runner i's forwarded sample was consumed (pid, connector statistics) or failed (error)."""
        if isinstance(pid_or_error, Exception):
            self._handle_failure(i, pid_or_error)
        else:
            self.health.answered(i, pid_or_error)
            self._merge_env_to_module_buffers(env_to_module_buffers)

    @property
    def in_flight_sample_requests(self) -> list[ray.ObjectRef]:
        """The async requests still running (for a caller's own `ray.wait` beside its requests)."""
        return list(self._in_flight)

    def _top_up(self, max_per_runner: int) -> list[ray.ObjectRef]:
        """Send requests until each healthy runner has `max_per_runner` in flight; return them all."""
        counts = Counter(self._in_flight.values())
        for i in self.health.healthy_indices():
            if counts[i] == 0:  # idle until now: the clock for its answer starts
                self._owing_since[i] = time.monotonic()
            for _ in range(max_per_runner - counts[i]):
                self._in_flight[self._request(i)] = i
        return list(self._in_flight)

    def _answered(self, ref: ray.ObjectRef) -> int:
        """Take the finished request `ref` out of flight; returns its runner, whose clock restarts."""
        i = self._in_flight.pop(ref)
        self._owing_since[i] = time.monotonic()
        return i

    def _end_round(self, max_per_runner: int) -> None:
        """Fail the runners owing an answer for over `sample_timeout_s`, then top up."""
        timeout_s = self.config.sample_timeout_s
        for i in set(self._in_flight.values()):
            if time.monotonic() - self._owing_since[i] > timeout_s:
                self._in_flight = {ref: j for ref, j in self._in_flight.items() if j != i}
                self._handle_failure(i, GetTimeoutError(
                    f"no answer to a sample request within sample_timeout_s={timeout_s} s"))
        self._top_up(max_per_runner)

    # -- failures ---------------------------------------------------------------------------
    def _get(self, ref: ray.ObjectRef, i: int, timeout_s: float | None) -> SampleResult | None:
        """The result of runner i's request, or None if the runner failed (handled here)."""
        try:
            result = ray.get(ref, timeout=timeout_s)
        except (RayActorError, GetTimeoutError) as e:
            self._handle_failure(i, e)
            return None
        self.health.answered(i, result.pid)
        self._merge_env_to_module_buffers(result.env_to_module_buffers)
        return result

    def _handle_failure(self, i: int, error: Exception) -> None:
        if isinstance(error, GetTimeoutError):  # hung, not dead: end it, so that Ray restarts it
            ray.kill(self.remote_env_runners[i], no_restart=False)
        if not self.health.came_back_after(i, error):
            self._in_flight = {ref: j for ref, j in self._in_flight.items() if j != i}  # its requests
            self.health.give_up_on(i, error)

    # -- state, calls, life cycle -----------------------------------------------------------
    def get_state(self) -> list[dict]:
        """Each runner's state (EnvRunner.get_state), for checkpoints."""
        return self.foreach_env_runner(lambda runner: runner.get_state())

    def check_state(self, states: list[dict], where: str) -> None:
        """Refuse saved runner states before any runner takes one (EnvRunner.check_state)."""
        runners = self.remote_env_runners
        if self.local_env_runner is not None and len(states) == 1:
            problems = [self.local_env_runner.check_state(states[0], f"{where}[0]")]
        elif runners and len(states) == len(runners):
            problems = ray.get([r.check_state.remote(state, f"{where}[{i}]")
                                for i, (r, state) in enumerate(zip(runners, states, strict=True))])
        else:
            problems = []
        for problem in filter(None, problems):
            raise CheckpointError(problem)

    def set_state(self, states: list[dict]) -> None:
        """Give each runner its saved state; with another number of runners, episodes restart."""
        runners = self.remote_env_runners
        if self.local_env_runner is not None and len(states) == 1:
            self.local_env_runner.set_state(states[0])
        elif runners and len(states) == len(runners):
            ray.get([r.set_state.remote(state) for r, state in zip(runners, states, strict=True)])

    def foreach_env_runner(self, fn: Callable[[EnvRunner], Any]) -> list[Any]:
        """Call `fn(runner)` on every runner (in its own process for actors) and return results."""
        if self.local_env_runner is not None:
            return [fn(self.local_env_runner)]
        return ray.get([r.__ray_call__.remote(fn) for r in self.remote_env_runners])

    def stop(self, kill_actors: bool = True) -> None:
        """Close the local runner's envs, end the actors (`kill_actors=False`: Ray ended them)."""
        self._in_flight, self._owing_since, self._weight_deliveries = {}, {}, []
        if self.health is not None:
            self.health.stop()
        if self.local_env_runner is not None:
            self.local_env_runner.stop()
        if kill_actors and self.remote_env_runners and self.config.output_write_remaining_data:
            # Recording runners write their last rows in stop() (offline/offline_env_runner.py).
            ray.wait([r.stop.remote() for r in self.remote_env_runners],
                     num_returns=len(self.remote_env_runners), timeout=STARTUP_TIMEOUT_S)
        for runner in self.remote_env_runners if kill_actors else []:
            ray.kill(runner)
        self.remote_env_runners = []
        if self.placement_group is not None and kill_actors:
            remove_placement_group(self.placement_group)
        self.placement_group = None
