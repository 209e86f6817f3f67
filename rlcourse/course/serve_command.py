"""`rlcourse serve CHECKPOINT`: serve a checkpoint's greedy policy over HTTP until Ctrl-C; and
`build_app`, the same for `serve run deploy/serve_config.yaml`.

    python -m rlcourse serve /tmp/ckpt --port 8000 --num-replicas 2
    curl -s -X POST 127.0.0.1:8000/ -d '{"obs": [0.01, 0.0, 0.02, 0.0]}'   # {"actions":[0]}

Ray Serve on the course's Ray; the HTTP proxy listens on 127.0.0.1 only. Ctrl-C (or SIGTERM)
shuts Serve and Ray down, leaving no process.
"""

import argparse
import signal
import time
from typing import Any

from ray.serve import Application

from rlcourse.serve.app import (
    DEFAULT_BATCH_WAIT_TIMEOUT_S,
    DEFAULT_MAX_BATCH_SIZE,
    DEFAULT_PORT,
    PolicyDeployment,
    policy_app,
    shutdown,
    start,
)
from rlcourse.utils.checkpoints import CheckpointError, checkpoint_root


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlcourse serve", description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="a directory written by algo.save_to_path()")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port on 127.0.0.1")
    parser.add_argument("--num-replicas", type=int, default=1)
    parser.add_argument("--max-batch-size", type=int, default=DEFAULT_MAX_BATCH_SIZE,
                        help="requests per module call; 1 turns batching off")
    parser.add_argument("--batch-wait-timeout-s", type=float, default=DEFAULT_BATCH_WAIT_TIMEOUT_S)
    return parser


def main(argv: list[str] | None = None) -> int:
    from rlcourse.course.evaluate import COURSE_ENVS

    args = build_parser().parse_args(argv)
    # Ctrl-C (and `kill`) end the loop below and shut down cleanly, also where this process was
    # started with SIGINT ignored, as a shell script's background jobs are (Python keeps it so).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if args.num_replicas < 1 or args.max_batch_size < 1:
        raise SystemExit("--num-replicas and --max-batch-size: give at least 1.")
    try:
        checkpoint_root(args.checkpoint)  # a wrong path fails now, before Ray and Serve start
    except CheckpointError as e:
        raise SystemExit(str(e)) from None
    try:
        url = start(policy_app(args.checkpoint, COURSE_ENVS, args.num_replicas, args.max_batch_size,
                               args.batch_wait_timeout_s), args.port)
        print(f"serving {args.checkpoint} at {url} ({args.num_replicas} replicas); Ctrl-C stops",
              flush=True)
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        print("shutting down", flush=True)
    except RuntimeError as e:  # the deployment failed: a checkpoint that cannot load, named
        raise SystemExit(str(e)) from None
    finally:
        shutdown()
    return 0


def build_app(args: dict[str, Any]) -> Application:
    """Serve's application builder (deploy/serve_config.yaml): `args` holds `checkpoint` and
    optionally `max_batch_size`, `batch_wait_timeout_s`. Envs of the course are allowed."""
    from rlcourse.course.evaluate import COURSE_ENVS

    known = {"checkpoint", "max_batch_size", "batch_wait_timeout_s"}
    if "checkpoint" not in args or set(args) - known:
        raise ValueError(f"args {sorted(args)}: give 'checkpoint' (a directory that "
                         f"algo.save_to_path() wrote), and optionally {sorted(known - {'checkpoint'})}.")
    return PolicyDeployment.bind(  # the file's `deployments` say how many replicas
        str(args["checkpoint"]), list(COURSE_ENVS),
        int(args.get("max_batch_size", DEFAULT_MAX_BATCH_SIZE)),
        float(args.get("batch_wait_timeout_s", DEFAULT_BATCH_WAIT_TIMEOUT_S)))
