"""`rlcourse serve CHECKPOINT`: serve a checkpoint's greedy policy over HTTP until Ctrl-C; and
`build_app`, the same for `serve run deploy/serve_config.yaml`.

    python -m rlcourse serve /tmp/ckpt --port 8000 --num-replicas 2
    curl -s -X POST 127.0.0.1:8000/ -d '{"obs": [0.01, 0.0, 0.02, 0.0]}'   # {"actions":[0]}

Ray Serve on the course's Ray; the HTTP proxy listens on 127.0.0.1 only. Ctrl-C (or SIGTERM)
shuts Serve and Ray down, leaving no process.
"""

import argparse
import contextlib
import math
import signal
import socket
import time
from typing import Any

from ray.serve import Application

from rlcourse.course.cli import positive_int
from rlcourse.serve.app import (
    DEFAULT_BATCH_WAIT_TIMEOUT_S,
    DEFAULT_MAX_BATCH_SIZE,
    DEFAULT_PORT,
    PolicyDeployment,
    check_batching,
    policy_app,
    shutdown,
    start,
)
from rlcourse.utils.checkpoints import CheckpointError, checkpoint_root
from rlcourse.utils.local_ray import LOOPBACK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlcourse serve", description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="a directory written by algo.save_to_path()")
    parser.add_argument("--port", type=port, default=DEFAULT_PORT, help="port on 127.0.0.1")
    parser.add_argument("--num-replicas", type=positive_int, default=1)
    parser.add_argument("--max-batch-size", type=positive_int, default=DEFAULT_MAX_BATCH_SIZE,
                        help="requests per module call; 1 turns batching off")
    parser.add_argument("--batch-wait-timeout-s", type=seconds, default=DEFAULT_BATCH_WAIT_TIMEOUT_S,
                        help="how long a batch's first request waits for others")
    return parser


def seconds(text: str) -> float:
    """The argparse type of --batch-wait-timeout-s: a finite number of seconds, 0 or more."""
    number = float(text)
    if not math.isfinite(number) or number < 0:
        raise argparse.ArgumentTypeError(f"{text}: give a finite number of seconds >= 0")
    return number


def port(text: str) -> int:
    """The argparse type of --port: a TCP port, 1 to 65535."""
    number = int(text)
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{number} is no TCP port; give one in 1..65535")
    return number


def check_port_free(number: int) -> None:
    """Bind 127.0.0.1:`number` for a moment, so that a busy port fails before Ray and Serve start
    (with SO_REUSEADDR, as servers bind: a port in TIME_WAIT is free, one listened on is not)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOOPBACK, number))
        except OSError as e:
            raise SystemExit(f"--port {number}: {LOOPBACK}:{number} is busy ({e.strerror}); stop what "
                             f"listens there, or pick another port, e.g. --port {number + 1}.") from None


def main(argv: list[str] | None = None) -> int:
    from rlcourse.course.evaluate import COURSE_ENVS

    args = build_parser().parse_args(argv)
    try:
        checkpoint_root(args.checkpoint)  # a wrong path fails now, before Ray and Serve start
    except CheckpointError as e:
        raise SystemExit(str(e)) from None
    check_port_free(args.port)
    # Ctrl-C (and `kill`) end the loop below and shut down cleanly, also where this process was
    # started with SIGINT ignored, as a shell script's background jobs are (Python keeps it so).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
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
    max_batch_size = _number(args.get("max_batch_size", DEFAULT_MAX_BATCH_SIZE), int)
    batch_wait_timeout_s = _number(args.get("batch_wait_timeout_s", DEFAULT_BATCH_WAIT_TIMEOUT_S), float)
    check_batching(max_batch_size, batch_wait_timeout_s)
    return PolicyDeployment.bind(  # the file's `deployments` say how many replicas
        str(args["checkpoint"]), list(COURSE_ENVS), max_batch_size, batch_wait_timeout_s)


def _number(value: Any, kind: type) -> Any:
    """`serve run ... max_batch_size=8` passes text: read it as `kind`; text that is no number stays
    text, for check_batching to name."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return kind(value)
    return value
