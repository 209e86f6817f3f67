"""A served policy under load: N concurrent HTTP clients on loopback, batching on and off, against
calling the module in this process.

What is measured, in one run: Ray Serve (the course's Ray, 2 CPUs) serves a CartPole PPO
checkpoint's policy with one replica; the HTTP proxy listens on 127.0.0.1. Each of N client threads
keeps one persistent HTTP connection and sends one observation per request, REQUESTS in all,
as fast as answers come. Latency is per request (send to answer read); actions/s is answers per
second of wall time. Batching on: `@serve.batch` (max_batch_size 32, 2 ms wait); off:
max_batch_size=1, each request runs the module alone. Two baselines: `greedy_env_actions(module,
obs)` called in this process, one observation at a time; and Serve's own floor, a no-op deployment
that reads the request body and answers a constant (what any policy served this way costs at least).
Goal: >= 2,000 actions/s at 32 clients with batching, p99 <= 50 ms, 0 failed requests.

    python benchmarks/serve_load.py [--requests 3000] [--port 8123] [--obs-per-request 1]

`--obs-per-request K` makes each request carry K observations (a client stepping K envs at once):
Serve's cost is per request (proxy and replica, several ms of CPU each on a loaded 2-core machine;
the table prints it), the module's per observation, so actions/s grows almost K-fold.
benchmarks/serve_ingress.py measures the same load without the Python proxy (Ray's direct
ingress and HAProxy modes): 5-7x the actions/s at 32 clients, and why neither is the default.
"""

import argparse
import tempfile

import numpy as np
import psutil
from common import course_cartpole_config, goal, print_table

from rlcourse.course.load_test import run_in_process, run_load

CLIENTS = (1, 8, 32)
CPU_KINDS = ("clients", "proxy", "replica")
GOAL_ACTIONS_PER_S, GOAL_P99_MS = 2000, 50


def noop_app():
    """A deployment that reads the body and answers a constant: Serve's own cost per request."""
    from ray import serve

    @serve.deployment(ray_actor_options={"num_cpus": 0.5}, max_ongoing_requests=256)
    class NoopDeployment:
        async def __call__(self, request) -> dict:
            await request.body()
            return {"actions": [0]}

    return NoopDeployment.bind()


def make_checkpoint(path: str) -> str:
    """A CartPole PPO checkpoint (one training iteration: the network's size is what matters)."""
    config = (course_cartpole_config("ppo").env_runners(num_env_runners=0)
              .training(train_batch_size_per_learner=200, minibatch_size=100).debugging(seed=0))
    with config.build_algo() as algo:
        algo.train()
        return algo.save_to_path(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests per row of the table")
    parser.add_argument("--port", type=int, default=8123)
    parser.add_argument("--obs-per-request", type=int, default=1,
                        help="observations in each request (a client stepping a vector of envs)")
    args = parser.parse_args()
    import torch

    from rlcourse.core.rl_module.rl_module import RLModule
    from rlcourse.serve.app import deploy, policy_app, shutdown, start
    from rlcourse.utils.local_ray import LOOPBACK

    torch.set_num_threads(1)
    url = f"http://{LOOPBACK}:{args.port}/"
    rows_per_request = args.obs_per_request
    obs = np.random.default_rng(0).uniform(-0.3, 0.3, (args.requests + rows_per_request, 4)
                                           ).astype(np.float32)
    rows, results = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = make_checkpoint(tmp)
        base = run_in_process(RLModule.from_checkpoint(checkpoint), obs[:args.requests])
        rows.append(["in-process module", 1, f"{base['p50']:.3f}", f"{base['p99']:.3f}",
                     f"{base['actions_per_s']:,.0f}", 0,
                     f"{1000 / base['actions_per_s']:.2f}", "", ""])
        apps = {"batching on": policy_app(checkpoint, max_batch_size=32),
                "batching off": policy_app(checkpoint, max_batch_size=1),
                "no-op (Serve's floor)": noop_app()}
        try:
            for i, (label, app) in enumerate(apps.items()):
                start(app, args.port) if i == 0 else deploy(app)  # deploy replaces the app
                run_load(url, 8, 200, obs)  # warm up: connections, the replica's first calls
                for n in CLIENTS:
                    r = results[label, n] = run_load(url, n, args.requests, obs, rows_per_request)
                    rows.append([f"Serve, {label}", n, f"{r['p50']:.1f}",
                                 f"{r['p99']:.1f}", f"{r['actions_per_s']:,.0f}", r["failed"],
                                 *(f"{r.get('cpu_' + k, 0):.2f}" for k in CPU_KINDS)])
                    print(f"  {label}, {n} clients: {r['actions_per_s']:,.0f} actions/s", flush=True)
        finally:
            shutdown()
    print_table(f"Serving a CartPole policy on loopback (1 replica, {rows_per_request} "
                "observation(s) per request)",
                ["path", "clients", "p50 ms", "p99 ms", "actions/s", "failed",
                 *(f"CPU ms/req {k}" for k in CPU_KINDS)], rows)
    print(f"machine load average over the run: {psutil.getloadavg()[1]:.1f} "
          f"on {psutil.cpu_count()} CPUs (others' processes included)")
    on, off = results["batching on", 32], results["batching off", 32]
    print(f"\nbatching's gain at 32 clients: {on['actions_per_s'] / off['actions_per_s']:.2f}x "
          "actions/s")
    failed = sum(r["failed"] for r in results.values())
    print(f"goal >= {GOAL_ACTIONS_PER_S:,} actions/s at 32 clients with batching: "
          f"{on['actions_per_s']:,.0f} ({goal(on['actions_per_s'] >= GOAL_ACTIONS_PER_S)}); "
          f"p99 <= {GOAL_P99_MS} ms: {on['p99']:.1f} ({goal(on['p99'] <= GOAL_P99_MS)}); "
          f"failed requests: {failed} ({goal(failed == 0)})")


if __name__ == "__main__":
    main()
