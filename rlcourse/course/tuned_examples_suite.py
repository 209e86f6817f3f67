"""`rlcourse tuned-examples`: run tuned examples one after another, as RLlib's regression suite does.

    python -m rlcourse tuned-examples                       # every file under tuned_examples/
    python -m rlcourse tuned-examples --filter impala       # those whose path contains "impala"
    python -m rlcourse tuned-examples tuned_examples/ppo    # files or folders

Every file is loaded and checked before the first one trains, so a typo in the last one fails in
seconds. Ray starts once; each example's algorithm is stopped before the next starts. The exit code
is 0 only if every example passed.
"""

import argparse
import time
from pathlib import Path

from rlcourse.course.train_job import ExampleRun, run_tuned_example
from rlcourse.course.tuned_example import TunedExample, load_tuned_example, result_value
from rlcourse.utils.resources import init_ray

TUNED_EXAMPLES = Path(__file__).resolve().parents[2] / "tuned_examples"
SUFFIXES = (".py", ".yaml", ".yml")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlcourse tuned-examples",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help=f"files or folders (default: {TUNED_EXAMPLES})")
    parser.add_argument("--filter", default="", metavar="SUBSTRING",
                        help="run only the files whose path contains this")
    return parser


def find_examples(paths: list[str], substring: str = "") -> list[Path]:
    """The tuned-example files in `paths` (folders searched recursively), sorted, filtered."""
    files: list[Path] = []
    for path in map(Path, paths or [TUNED_EXAMPLES]):
        if not path.exists():
            raise SystemExit(f"rlcourse tuned-examples: {path} does not exist; pass tuned-example "
                             "files or folders (the course's are in tuned_examples/).")
        files += sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES) if path.is_dir() \
            else [path]
    files = [f for f in files if substring in str(f) and not f.name.startswith("_")]
    if not files:
        raise SystemExit(f"rlcourse tuned-examples: no tuned examples in {paths or [TUNED_EXAMPLES]}"
                         + (f" whose path contains {substring!r}" if substring else "") + ".")
    return files


def table_row(example: TunedExample, run: ExampleRun | None, error: str = "") -> list[str]:
    """example | PASS/FAIL/ERROR | each pass metric reached / its mark | env steps | wall time."""
    if run is None:
        return [example.name, "ERROR", error, "-", "-"]
    metrics = ", ".join(f"{key} {result_value(run.result, key):.4g}/{mark:g}"
                        for key, mark in example.pass_criteria.items())
    return [example.name, "PASS" if run.passed else "FAIL", metrics,
            str(run.result["num_env_steps_sampled_lifetime"]), f"{run.elapsed_s:.1f} s"]


HEADER = ["example", "result", "pass metric reached / mark", "env steps", "wall time"]


def print_table(rows: list[list[str]], header: list[str] = HEADER) -> None:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *rows]:
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)), flush=True)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    examples = [load_tuned_example(path) for path in find_examples(args.paths, args.filter)]
    for sweep in (e for e in examples if e.is_sweep):
        print(f"skipping {sweep.path}: a sweep (search spaces); run it with `rlcourse tune`.")
    examples = [e for e in examples if not e.is_sweep]
    init_ray()
    rows = []
    start = time.perf_counter()
    for example in examples:
        try:
            rows.append(table_row(example, run_tuned_example(example)))
        except Exception as e:  # one broken example must not hide the others' results
            rows.append(table_row(example, None, f"{type(e).__name__}: {str(e).splitlines()[0]}"))
    print()
    print_table(rows)
    failed = sum(row[1] != "PASS" for row in rows)
    print(f"{len(rows) - failed} of {len(rows)} tuned examples passed "
          f"({time.perf_counter() - start:.0f} s)", flush=True)
    return 0 if failed == 0 else 1
