"""`rlcourse tune FILE`: run a sweep file (a tuned example with Ray Tune search spaces) on Ray Tune.

    python -m rlcourse tune tuned_examples/ppo/cartpole_ppo_lr_sweep.py --num-samples 2
    python -m rlcourse tune FILE --scheduler asha       # stop bad trials early
    python -m rlcourse tune FILE --resume               # continue an interrupted sweep

The file is checked before Ray starts: its search spaces value by value, its stop and pass keys
against the results the algorithm reports (Ray Tune itself only warns about a stop key no result
has, and the trial then runs until its other stop values). Each trial is the file's algorithm as a
Tune Trainable, one placement group per trial. The best config is the one whose trials (seeds,
samples) have the best mean of the first pass key; its best trial's checkpoint is printed, which
`rlcourse evaluate CHECKPOINT` plays. Exit code 0 if that trial passed.
"""

import argparse
import math
from pathlib import Path
from typing import Any

from rlcourse.course.cli import positive_int
from rlcourse.course.tuned_example import TunedExample, load_tuned_example, result_value
from rlcourse.course.tuned_examples_suite import print_table
from rlcourse.tune.search_space import is_search_space

# Iterations every trial runs before ASHA may stop it: learning must have begun (lesson 07, section 4).
ASHA_GRACE_PERIOD = 4


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlcourse tune", description=__doc__.splitlines()[0])
    parser.add_argument("file", help="a tuned example whose config holds tune search spaces")
    parser.add_argument("--num-samples", type=positive_int, default=1,
                        help="samples of the search space (each grid point this many times)")
    parser.add_argument("--scheduler", choices=["fifo", "asha"], default="fifo",
                        help="asha: stop trials early that trail the others (Tune's ASHA), "
                             f"after at least {ASHA_GRACE_PERIOD} iterations each")
    parser.add_argument("--storage-path", default=str(Path("~/ray_results").expanduser()),
                        help="where Tune writes results and checkpoints")
    parser.add_argument("--resume", action="store_true",
                        help="continue the sweep of this name in --storage-path")
    return parser


def varied_settings(example: TunedExample) -> list[str]:
    """The settings the sweep varies (those holding a search space)."""
    return [name for name, value in vars(example.config).items() if is_search_space(value)]


def build_tuner(example: TunedExample, args: argparse.Namespace) -> Any:
    """A Tuner for the sweep: metric = the first pass key (maximized), stop = the file's stop."""
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    trainable = example.config.algo_class.as_trainable()
    path = Path(args.storage_path) / example.name
    if args.resume:
        if not tune.Tuner.can_restore(str(path)):
            raise SystemExit(f"rlcourse tune --resume: {path} holds no sweep to resume; leave "
                             "--resume out to start it, or pass the --storage-path that holds it.")
        return tune.Tuner.restore(str(path), trainable=trainable, resume_errored=True)
    metric = next(iter(example.pass_criteria))
    asha = ASHAScheduler(grace_period=ASHA_GRACE_PERIOD) if args.scheduler == "asha" else None
    return tune.Tuner(
        trainable, param_space=example.config,
        tune_config=tune.TuneConfig(
            metric=metric, mode="max", num_samples=args.num_samples, reuse_actors=True,
            scheduler=asha),
        run_config=tune.RunConfig(
            name=example.name, storage_path=args.storage_path, stop=example.stop, verbose=1,
            checkpoint_config=tune.CheckpointConfig(num_to_keep=1, checkpoint_at_end=True)))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    example = load_tuned_example(args.file)  # checked before Ray starts
    if not example.is_sweep:
        raise SystemExit(f"rlcourse tune: {args.file} has no search space; put one in a setter, "
                         "e.g. .training(lr=tune.grid_search([1e-3, 3e-4])), or train it with "
                         "`rlcourse train --config`.")
    results = build_tuner(example, args).fit()
    metric = next(iter(example.pass_criteria))
    varied = varied_settings(example)
    rows = [[result.metrics.get("trial_id", "-") if result.metrics else "-",
             ", ".join(f"{name}={result.config.get(name)}" for name in varied),
             "ERROR" if result.error else f"{value(result.metrics, metric):.4g}",
             f"{value(result.metrics, 'training_iteration'):.0f}"] for result in results]
    print()
    print_table(rows, ["trial", "varied", metric, "iterations"])
    best = best_of_best_config(results, varied, metric)
    passed = all(value(best.metrics, key) >= mark for key, mark in example.pass_criteria.items())
    print(f"best config (by its trials' mean {metric}): "
          f"{', '.join(f'{n}={best.config.get(n)}' for n in varied if n != 'seed') or 'the only one'}"
          f"; its best trial: {metric} {value(best.metrics, metric):.4g} "
          f"({'PASSED' if passed else 'FAILED'} {example.pass_criteria}); "
          f"checkpoint: {best.checkpoint.path if best.checkpoint else '-'}", flush=True)
    return 0 if passed else 1


def best_of_best_config(results: Any, varied: list[str], metric: str) -> Any:
    """The best trial of the config whose trials have the best mean last `metric` (seeds and
    samples of one config averaged, as lesson 07 teaches: the single best trial is often a lucky
    seed). Errored trials are left out."""
    trials = [r for r in results if r.error is None and not math.isnan(value(r.metrics, metric))]
    if not trials:
        raise SystemExit(f"rlcourse tune: no trial reported {metric}; see the errors above.")
    by_config: dict[tuple, list] = {}
    for trial in trials:
        key = tuple(repr(trial.config.get(n)) for n in varied if n != "seed")
        by_config.setdefault(key, []).append(trial)
    best_config = max(by_config.values(),
                      key=lambda group: sum(value(r.metrics, metric) for r in group) / len(group))
    return max(best_config, key=lambda r: value(r.metrics, metric))


def value(metrics: dict[str, Any] | None, key: str) -> float:
    """A trial's last reported `key` (nested result), NaN when it reported none."""
    try:
        return float(result_value(metrics or {}, key))
    except KeyError:
        return float("nan")
