"""The package's shape: every public name imports from `rlcourse`, and the light paths stay light."""

import subprocess
import sys
import textwrap

import rlcourse
from rlcourse.algorithms.registry import ALGORITHMS, get_algorithm_class


def test_every_public_name_imports_from_the_package_root():
    for name in rlcourse.__all__:
        obj = getattr(rlcourse, name)
        assert obj.__name__ == name, (name, obj)
    assert rlcourse.PPOConfig().algo_class is rlcourse.PPO


def test_every_registered_algorithm_and_its_config_import_from_the_package_root():
    for name in ALGORITHMS:  # CQL once was missing: `from rlcourse import CQLConfig` failed
        assert getattr(rlcourse, name) is get_algorithm_class(name)
        assert getattr(rlcourse, f"{name}Config")().algo_class is get_algorithm_class(name)


def test_importing_rlcourse_or_an_env_runner_imports_no_torch_tune_or_serve():
    """A runner process imports rlcourse.env.env_runner (and a config travels to it): torch would
    cost it ~120 MB and seconds of start-up."""
    code = textwrap.dedent("""
        import sys
        import rlcourse
        from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner
        from rlcourse.algorithms.ppo import PPOConfig
        from rlcourse.algorithms.impala import IMPALAConfig
        PPOConfig().environment("CartPole-v1").validate()
        heavy = sorted(m for m in ("torch", "ray.tune", "ray.serve", "ray.rllib") if m in sys.modules)
        print(",".join(heavy))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"imported: {out.stdout.strip()}"
