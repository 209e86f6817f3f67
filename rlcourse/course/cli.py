"""The `rlcourse` command (also `python -m rlcourse`).

    rlcourse doctor     check this machine before a workshop, and say what to fix
    rlcourse train ...  train an algorithm from the command line (the entrypoint of Ray Jobs)
    rlcourse evaluate CHECKPOINT ...  play a checkpoint's greedy policy (and film it)
    rlcourse tuned-examples ...  run the tuned examples as a regression suite
    rlcourse tune FILE  run a sweep file (a tuned example with search spaces) on Ray Tune
    rlcourse serve CHECKPOINT  serve a checkpoint's greedy policy over HTTP with Ray Serve
"""

import argparse
import sys
from importlib import import_module

COMMANDS = {
    "doctor": ("rlcourse.course.doctor", "check Python, packages, CPUs, memory, Ray and widgets"),
    "train": ("rlcourse.course.train_job", "train PPO or IMPALA and print one line per iteration"),
    "evaluate": ("rlcourse.course.evaluate", "play a checkpoint's greedy policy for N episodes"),
    "tuned-examples": ("rlcourse.course.tuned_examples_suite",
                       "run tuned examples and print a pass/fail table"),
    "tune": ("rlcourse.course.tune_job", "run a sweep file (search spaces) on Ray Tune"),
    "serve": ("rlcourse.course.serve_command", "serve a checkpoint's policy over HTTP (Ray Serve)"),
}


def positive_int(text: str) -> int:
    """The argparse type of a count that must be at least 1 (iterations, episodes, samples)."""
    number = int(text)
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number}: give a whole number >= 1")
    return number


def main(argv: list[str] | None = None) -> int:
    """Dispatch to the module of the command; each has `main(argv) -> exit code`. Bad input, which
    rlcourse's own ValueErrors report (ConfigError, CheckpointError, TunedExampleError), is one line
    on stderr and exit code 2, as in argparse; any other error keeps its traceback."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="rlcourse", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=sorted(COMMANDS),
                        help="; ".join(f"{name}: {text}" for name, (_, text) in COMMANDS.items()))
    args, rest = parser.parse_known_args(argv[:1])
    module, _ = COMMANDS[args.command]
    try:
        return import_module(module).main(argv[1:] + rest)
    except ValueError as e:
        if not type(e).__module__.startswith("rlcourse."):
            raise
        print(f"rlcourse {args.command}: error: {e}", file=sys.stderr)
        return 2

