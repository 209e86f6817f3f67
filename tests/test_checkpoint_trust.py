"""An edited checkpoint cannot run code or reach outside its directory.

Each edit below would run code if loading imported or called what the file names: a module that
writes a marker file when imported, or `subprocess:run` as the env creator (it would run
`touch <marker>`: EnvContext is a dict, and Popen runs the list of its keys). The edits are loaded in
a fresh process, which must refuse each one, name the JSON field, and leave no marker.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import small_ppo

from rlcourse.callbacks import Callbacks
from rlcourse.utils.checkpoint_contents import PACKAGE_CLASSES, config_from_json
from rlcourse.utils.checkpoints import STATE_FILE, STATE_JSON, CheckpointError, read_checkpoint
from rlcourse.utils.imports import import_attr

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    config = small_ppo().environment("CartPole-v1").training(train_batch_size_per_learner=200,
                                                             minibatch_size=100, num_epochs=1)
    with config.build_algo() as algo:
        return Path(algo.save_to_path(tmp_path_factory.mktemp("saved") / "ckpt"))


def _copy(checkpoint: Path, to: Path) -> Path:
    shutil.copytree(checkpoint, to)
    return to


def _version(checkpoint: Path) -> Path:
    return checkpoint / json.loads((checkpoint / STATE_FILE).read_text())["version"]


def _edit_manifest(checkpoint: Path, edit: Callable[[dict], None]) -> None:
    """Edit the manifest and update its own SHA-256, as an attacker who knows the format would."""
    manifest = json.loads((checkpoint / STATE_FILE).read_text())
    edit(manifest)
    fields = {k: v for k, v in manifest.items() if k != "sha256"}
    manifest["sha256"] = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()
    (checkpoint / STATE_FILE).write_text(json.dumps(manifest))


def _edit_state(checkpoint: Path, edit: Callable[[dict], None], rehash: bool = True) -> None:
    """Edit state.json; with `rehash`, record its new SHA-256 in the manifest too."""
    file = _version(checkpoint) / STATE_JSON
    state = json.loads(file.read_text())
    edit(state)
    file.write_text(json.dumps(state))
    if rehash:
        digest = hashlib.sha256(file.read_bytes()).hexdigest()
        _edit_manifest(checkpoint, lambda m: m["files"].__setitem__(STATE_JSON, digest))


def _set(**settings) -> Callable[[dict], None]:
    return lambda state: state["config"].update(settings)


# Loads each checkpoint in a fresh process whose path holds the payload modules; prints the errors.
LOAD = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from rlcourse.algorithms.algorithm import Algorithm
    errors = {}
    for path in sys.argv[2:]:
        try:
            Algorithm.from_checkpoint(path).stop()
            errors[path] = None
        except Exception as e:
            errors[path] = f"{type(e).__name__}: {e}"
    print(json.dumps(errors))
""")


def test_edited_checkpoints_are_refused_and_run_nothing(checkpoint, tmp_path):
    payloads = tmp_path / "payloads"
    payloads.mkdir()
    markers = tmp_path / "markers"
    markers.mkdir()
    for name in ("evil_config", "evil_callbacks", "evil_module", "evil_env", "evil_probe"):
        (payloads / f"{name}.py").write_text(
            f"open({str(markers / name)!r}, 'w').close()\nclass X:\n    pass\n")
    touch = {"touch": 0, str(markers / "subprocess_run"): 0}  # subprocess.run(ctx) runs its keys
    cases = {  # name -> (edit, the field the error must name)
        "os_system": (_set(callbacks_class={"__import__": "os:system"}), "config.callbacks_class"),
        "subprocess_run": (_set(env={"__import__": "subprocess:run"}, env_config=touch),
                           "config.env"),
        "config_class": (_set(config_class="evil_config:X"), "config.config_class"),
        "callbacks": (_set(callbacks_class={"__import__": "evil_callbacks:X"}),
                      "config.callbacks_class"),
        "rl_module": (_set(rl_module_class={"__import__": "evil_module:X"}),
                      "config.rl_module_class"),
        "gym_id_module": (_set(env="evil_env:CartPole-v1"), "config.env"),
        "tampered_without_rehash": (None, STATE_JSON),
    }
    paths = []
    for case, (edit, _) in cases.items():
        path = _copy(checkpoint, tmp_path / case)
        if edit is None:  # a payload, but the old SHA-256: the integrity check refuses it
            _edit_state(path, _set(env={"__import__": "subprocess:run"}, env_config=touch),
                        rehash=False)
        else:
            _edit_state(path, edit)
        paths.append(str(path))
    out = subprocess.run([sys.executable, "-c", LOAD, str(payloads), *paths], cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                         text=True, timeout=240, check=True)
    errors = json.loads(out.stdout.strip().splitlines()[-1])
    assert sorted(p.name for p in markers.iterdir()) == []  # nothing ran
    for (case, (_, field)), path in zip(cases.items(), paths, strict=True):
        assert errors[path] is not None, f"{case}: loaded"
        assert errors[path].startswith("CheckpointError"), (case, errors[path])
        assert path in errors[path] and field in errors[path], (case, errors[path])
    assert "does not match the SHA-256" in errors[paths[-1]]
    assert "allowed=[" in errors[paths[0]]  # says how to allow a class of one's own
    # The payloads do work when imported (so the empty folder above means something).
    sys.path.insert(0, str(payloads))
    try:
        import_attr("evil_probe:X")
    finally:
        sys.path.remove(str(payloads))
    assert (markers / "evil_probe").exists()


class MyCallbacks(Callbacks):
    pass


def test_classes_of_ones_own_load_only_when_allowed(checkpoint):
    state, _ = read_checkpoint(checkpoint)
    document = {**state["config"], "callbacks_class": {"__import__": f"{__name__}:MyCallbacks"}}
    with pytest.raises(CheckpointError, match=r"ckpt: config.callbacks_class names .*"
                                              r"allowed=\[MyCallbacks\]"):
        config_from_json(document, "ckpt")
    assert config_from_json(document, "ckpt", allowed=[MyCallbacks]).callbacks_class is MyCallbacks


def test_old_class_paths_map_to_the_package_classes_and_the_table_is_right():
    """A checkpoint keeps the paths classes had when it was saved (rlcourse.config:AlgorithmConfig,
    rlcourse.algorithms.ppo:PPOConfig, rlcourse.rl_module:...): any path inside rlcourse with a
    listed name gives today's class; the same name outside rlcourse is refused."""
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig
    from rlcourse.connectors.connector_v2 import ConnectorV2
    from rlcourse.core.rl_module.rl_module import RLModule
    from rlcourse.env.env_runner import EnvRunner

    for name, module in PACKAGE_CLASSES.items():
        cls = import_attr(f"{module}:{name}")
        assert (issubclass(cls, AlgorithmConfig | Callbacks | RLModule | ConnectorV2 | EnvRunner)
                and cls.__qualname__ == name)
    document = {"config_class": "rlcourse.config:AlgorithmConfig", "env": "CartPole-v1",
                "callbacks_class": {"__import__": "rlcourse.callbacks:Callbacks"},
                "rl_module_class": {"__import__": "rlcourse.rl_module:DefaultActorCriticModule"}}
    config = config_from_json(document, "old")
    assert type(config) is AlgorithmConfig and config.callbacks_class is Callbacks
    assert config.rl_module_class.__module__ == "rlcourse.core.rl_module.rl_module"
    with pytest.raises(CheckpointError, match="config.config_class names 'evil:PPOConfig'"):
        config_from_json({**document, "config_class": "evil:PPOConfig"}, "old")


def test_every_config_class_of_the_package_is_listed():
    import rlcourse.algorithms.impala.impala  # noqa: F401  (defines IMPALAConfig)
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig

    def subclasses(cls):
        return {cls} | {s for sub in cls.__subclasses__() for s in subclasses(sub)}

    ours = {c.__qualname__ for c in subclasses(AlgorithmConfig) if c.__module__.startswith("rlcourse.")}
    assert ours <= set(PACKAGE_CLASSES)


def test_a_random_generator_state_may_name_only_a_bit_generator(checkpoint, tmp_path):
    from rlcourse.algorithms.algorithm import Algorithm

    path = _copy(checkpoint, tmp_path / "ckpt")
    _edit_state(path, lambda s: s["learner"]["rngs"][0]["__generator__"].update(
        bit_generator="seed"))  # from_plain would call np.random.seed()
    with pytest.raises(CheckpointError, match="bit_generator 'seed'"):
        Algorithm.from_checkpoint(path).stop()


def test_an_edited_manifest_is_refused(checkpoint, tmp_path):
    path = _copy(checkpoint, tmp_path / "ckpt")
    manifest = json.loads((path / STATE_FILE).read_text())
    manifest["files"][STATE_JSON] = hashlib.sha256(b"{}").hexdigest()
    (path / STATE_FILE).write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match=f"{STATE_FILE} does not match its own SHA-256"):
        read_checkpoint(path)


# -- the manifest's file names --------------------------------------------------------------------

def _rename_in_manifest(path: Path, old: str, new: str) -> None:
    _edit_manifest(path, lambda m: m["files"].__setitem__(new, m["files"].pop(old)))


@pytest.mark.parametrize("name", ["../learner.pt", "/etc/passwd", "sub/learner.pt", ".."])
def test_file_names_leaving_the_directory_are_refused(checkpoint, tmp_path, name):
    path = _copy(checkpoint, tmp_path / "ckpt")
    _rename_in_manifest(path, "learner.pt", name)
    with pytest.raises(CheckpointError, match="plain names inside its directory"):
        read_checkpoint(path)


def test_a_version_outside_the_directory_is_refused(checkpoint, tmp_path):
    path = _copy(checkpoint, tmp_path / "ckpt")
    shutil.copytree(_version(path), tmp_path / "elsewhere")
    _edit_manifest(path, lambda m: m.__setitem__("version", "../elsewhere"))
    with pytest.raises(CheckpointError, match="plain names inside its directory"):
        read_checkpoint(path)


def test_symlinks_out_of_the_directory_are_refused(checkpoint, tmp_path):
    path = _copy(checkpoint, tmp_path / "ckpt")
    outside = tmp_path / "outside.pt"
    shutil.copy(_version(path) / "learner.pt", outside)  # same bytes, so its SHA-256 matches
    (_version(path) / "learner.pt").unlink()
    (_version(path) / "learner.pt").symlink_to(outside)
    with pytest.raises(CheckpointError, match="outside the checkpoint's directory"):
        read_checkpoint(path)
    # the manifest as a link to one elsewhere
    path = _copy(checkpoint, tmp_path / "ckpt3")
    shutil.move(path / STATE_FILE, tmp_path / "manifest.json")
    (path / STATE_FILE).symlink_to(tmp_path / "manifest.json")
    with pytest.raises(CheckpointError, match="outside the checkpoint's directory"):
        read_checkpoint(path)
    # and a version directory that is a link to a copy elsewhere
    path = _copy(checkpoint, tmp_path / "ckpt2")
    shutil.move(_version(path), tmp_path / "moved")
    _version(path).symlink_to(tmp_path / "moved")
    with pytest.raises(CheckpointError, match="outside the checkpoint's directory"):
        read_checkpoint(path)
