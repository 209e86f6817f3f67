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


def main(argv: list[str] | None = None) -> int:
    """Dispatch to the module of the command; each has `main(argv) -> exit code`."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="rlcourse", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=sorted(COMMANDS),
                        help="; ".join(f"{name}: {text}" for name, (_, text) in COMMANDS.items()))
    args, rest = parser.parse_known_args(argv[:1])
    module, _ = COMMANDS[args.command]
    return import_module(module).main(argv[1:] + rest)

