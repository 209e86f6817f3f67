"""client.py is one file a simulator can copy: it imports neither rlcourse nor Ray nor torch, and
its copies of the framing (rllink.py) and of the runners' forward pass (numpy_mlp.py) agree."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from external_helpers import made_up_weights, start_runner

from rlcourse.core.rl_module.default_model_config import space_info
from rlcourse.core.rl_module.numpy_mlp import LOG_STD_MAX, LOG_STD_MIN, NumpyMLP
from rlcourse.env.external import client, rllink

pytestmark = pytest.mark.timeout(30)
CLIENT = Path(client.__file__)
BLOCKER = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {'rlcourse', 'ray', 'torch', 'gymnasium'}:
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
import importlib.util
spec = importlib.util.spec_from_file_location('client', sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(sorted(m for m in sys.modules if m.split('.')[0] in {'rlcourse', 'ray', 'torch'}))
"""


def test_the_client_imports_with_rlcourse_ray_torch_and_gymnasium_blocked():
    out = subprocess.run([sys.executable, "-c", BLOCKER, str(CLIENT)], capture_output=True,
                         text=True, timeout=30, cwd="/")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_clients_framing_is_rllinks():
    assert client.PROTOCOL_VERSION == rllink.PROTOCOL_VERSION
    assert client.HEADER.format == rllink.HEADER.format
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert np.array_equal(rllink.decode_array("x", client.encode_array(values)), values)
    assert np.array_equal(client.decode_array(rllink.encode_array(values)), values)


def test_the_clients_forward_pass_is_the_runners():
    runner = start_runner()
    try:
        message = json.loads(json.dumps(runner.state_message()[0]))  # as it travels
        config = json.loads(json.dumps(runner.config_message()))
    finally:
        runner.stop()
    policy = client.Policy(config, seed=0)
    policy.set_state(message)
    network = NumpyMLP(space_info(runner.observation_space, runner.action_space),
                       {"fcnet_activation": "tanh"})
    network.set_state(made_up_weights())
    obs = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
    np.testing.assert_allclose(policy.forward(obs), network.action_dist_inputs(obs), rtol=1e-5,
                               atol=1e-6)
    action, logp = policy.act(obs[0])
    logits = network.action_dist_inputs(obs[:1])[0].astype(np.float64)
    assert action in (0, 1)
    assert logp == pytest.approx(logits[action] - np.log(np.exp(logits).sum()), abs=1e-5)
    probs = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    actions = [policy.act(obs[0])[0] for _ in range(4000)]  # sampled as the policy says
    assert np.mean(actions) == pytest.approx(probs[1], abs=0.03)
    assert (client.LOG_STD_MIN, client.LOG_STD_MAX) == (LOG_STD_MIN, LOG_STD_MAX)  # SAC's clamp
