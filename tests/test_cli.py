"""The `rlcourse` command's bad input fails before Ray starts, as one line that names the option and
the fix: rlcourse's own errors exit 2 without a traceback, counts must be >= 1, a checkpoint folder
is checked before training, YAML reads 1e-3 as a number, `serve --port` must be free and its
batch wait finite. (Commands that run are tested where they are taught: test_cluster.py,
test_tuned_examples.py, test_tune.py, test_cli_evaluate.py, test_serve.py.)"""

import re
import socket

import pytest

from rlcourse.course import serve_command, train_job, tune_job
from rlcourse.course.cli import main
from rlcourse.course.tuned_examples_suite import TUNED_EXAMPLES
from rlcourse.serve.app import policy_app
from rlcourse.utils.checkpoints import STATE_FILE, CheckpointError, check_checkpoint_dir

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def no_ray(monkeypatch):
    """Each case must fail before Ray starts: starting it fails the test."""
    def init_ray(*args, **kwargs):
        raise AssertionError("Ray started before the bad input was refused")
    monkeypatch.setattr(train_job, "init_ray", init_ray)


def test_rlcourse_errors_are_one_line_on_stderr_and_exit_2(capsys):
    assert main(["train", "--set", "lamda=0.9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rlcourse train: error: Invalid setting lamda=0.9")
    assert "did you mean 'lambda_'" in err and len(err.splitlines()) == 1
    assert main(["evaluate", "/nope"]) == 2
    assert capsys.readouterr().err.startswith("rlcourse evaluate: error: No checkpoint at /nope")


@pytest.mark.parametrize("argv", [["train", "--max-iterations", "0"],
                                  ["tune", "x.py", "--num-samples", "-1"],
                                  ["evaluate", "ckpt", "--episodes", "0"],
                                  ["serve", "ckpt", "--num-replicas", "0"],
                                  ["serve", "ckpt", "--max-batch-size", "-2"]])
def test_counts_below_1_are_refused_by_argparse(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert f"argument {argv[-2]}: {argv[-1]}: give a whole number >= 1" in capsys.readouterr().err


def not_empty(tmp_path):
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "notes.txt").touch()
    return tmp_path / "ck"


def a_file(tmp_path):
    (tmp_path / "f").touch()
    return tmp_path / "f"


@pytest.mark.parametrize("folder, expected", [
    (not_empty, r"ck holds \['notes.txt'\], which are not part of a checkpoint: save into a new"),
    (a_file, "f is a file; pass a directory"),
    (lambda tmp_path: a_file(tmp_path) / "ck", "f is a file; pass a directory")])
def test_a_checkpoint_dir_that_cannot_take_a_checkpoint_fails_before_training(folder, expected,
                                                                              tmp_path):
    target, example = str(folder(tmp_path)), str(TUNED_EXAMPLES / "ppo" / "cartpole_ppo.py")
    for argv in (["--checkpoint-dir", target], ["--config", example, "--checkpoint-dir", target]):
        with pytest.raises(CheckpointError, match=expected):
            train_job.main(argv)
    assert check_checkpoint_dir(tmp_path / "new" / "ck") == tmp_path / "new" / "ck"  # made on save


def test_set_values_are_yaml_with_1e_minus_3_a_number_and_a_syntax_error_named():
    config = train_job.build_config(train_job.build_parser().parse_args(
        ["--algo", "dqn", "--set", "replay_buffer_config={capacity: 1e5}", "lr=1e-3"]))
    assert (config.replay_buffer_config["capacity"], config.lr) == (1e5, 1e-3)
    with pytest.raises(ValueError, match=r"--set model_config, line 1.*not valid YAML"):
        train_job.parse_settings(["model_config={fcnet_hiddens: [64"])


def test_tune_resume_with_nothing_to_resume_names_the_folder(tmp_path):
    with pytest.raises(SystemExit, match=r"cartpole_ppo_lr_sweep holds no sweep to resume; leave "
                                         "--resume out"):
        tune_job.main([str(TUNED_EXAMPLES / "ppo" / "cartpole_ppo_lr_sweep.py"), "--resume",
                       "--storage-path", str(tmp_path)])


def test_serve_refuses_a_busy_or_impossible_port_before_ray_starts(tmp_path, capsys):
    (tmp_path / STATE_FILE).touch()  # enough for the cheap checkpoint check
    with pytest.raises(SystemExit):
        serve_command.build_parser().parse_args([str(tmp_path), "--port", "70000"])
    assert "70000 is no TCP port; give one in 1..65535" in capsys.readouterr().err
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(SystemExit, match=f"--port {port}: 127.0.0.1:{port} is busy.*another port"):
            serve_command.main([str(tmp_path), "--port", str(port)])


@pytest.mark.parametrize("value", ["-1", "inf", "nan", "-0.5"])
def test_serve_refuses_a_batch_wait_that_is_negative_or_endless(value, capsys):
    """Serve itself takes inf: a lone request would wait for a full batch forever."""
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "ckpt", "--batch-wait-timeout-s", value])
    assert exit_.value.code == 2
    assert (f"argument --batch-wait-timeout-s: {value}: give a finite number of seconds >= 0"
            in capsys.readouterr().err)


@pytest.mark.parametrize("settings, name", [
    ({"max_batch_size": 0}, "max_batch_size=0"),
    ({"max_batch_size": 2.5}, "max_batch_size=2.5"),
    ({"max_batch_size": True}, "max_batch_size=True"),
    ({"max_batch_size": "eight"}, "max_batch_size='eight'"),
    ({"batch_wait_timeout_s": float("inf")}, "batch_wait_timeout_s=inf"),
    ({"batch_wait_timeout_s": "inf"}, "batch_wait_timeout_s=inf"),
    ({"batch_wait_timeout_s": -0.1}, "batch_wait_timeout_s=-0.1"),
    ({"batch_wait_timeout_s": "soon"}, "batch_wait_timeout_s='soon'"),
])
def test_serve_apps_refuse_bad_batching_by_name_before_serve_starts(settings, name):
    """The same settings through Python (policy_app) and `serve run` (build_app, text or YAML)."""
    with pytest.raises(ValueError, match=re.escape(name)):
        serve_command.build_app({"checkpoint": "ckpt", **settings})
    if not isinstance(next(iter(settings.values())), str):
        with pytest.raises(ValueError, match=re.escape(name)):
            policy_app("ckpt", **settings)


def test_serve_run_reads_batching_settings_given_as_text():
    app = serve_command.build_app({"checkpoint": "ckpt", "max_batch_size": "8",
                                   "batch_wait_timeout_s": "0.01"})
    assert app._bound_deployment.init_args[2:] == (8, 0.01)
