"""A simulator's side of RLlink, one file to copy next to your simulator (stdlib and NumPy only).
It gets the config and weights from a server EnvRunner, runs the policy, and sends whole
episodes in batches, taking new weights with each answer (EPISODES_AND_GET_STATE waits for them:
on-policy sampling). Its forward pass copies numpy_mlp.py's (tests/test_external_client.py checks
they agree); rllink.py takes its framing from here. `--inference server`: the server acts.

    RLCOURSE_EXTERNAL_TOKEN=SECRET python client.py --port 5556 --env CartPole-v1  # needs gymnasium
"""

import argparse
import base64
import json
import os
import socket
import struct
import time
from typing import Any

import numpy as np

PROTOCOL_VERSION = 1
TOKEN_ENV_VAR = "RLCOURSE_EXTERNAL_TOKEN"  # the server's shared secret (also on the command line)
HEADER = struct.Struct("!I")  # a 4-byte big-endian length, then UTF-8 JSON
ACTIVATIONS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0), "linear": lambda x: x}
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # SAC's clamp on the policy's log-stds (numpy_mlp.py)


class ServerError(RuntimeError):
    """The server refused something (it sent ERROR and hung up): retrying the same will not help."""


def encode_array(values: np.ndarray) -> dict:  # dtype, shape and raw bytes: exact, and compact
    values = np.ascontiguousarray(values)
    return {"dtype": values.dtype.name, "shape": list(values.shape),
            "b64": base64.b64encode(values.tobytes()).decode("ascii")}


def frame(message: dict) -> bytes:  # a message as it travels
    body = json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
    return HEADER.pack(len(body)) + body


def read_exactly(sock: socket.socket, n: int) -> bytes:
    """`n` bytes from `sock`; ConnectionError if the peer hangs up first."""
    chunks, left = [], n
    while left:
        chunks.append(sock.recv(min(left, 2**20)))
        if not chunks[-1]:
            raise ConnectionError(f"the peer closed the connection after {n - left} of {n} bytes")
        left -= len(chunks[-1])
    return b"".join(chunks)


def decode_array(value: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(value["b64"]), dtype=value["dtype"]).reshape(value["shape"])


class Connection:
    """One TCP connection to a server runner, with the handshake done (PING with the token)."""

    def __init__(self, host: str, port: int, token: str, timeout_s: float = 60.0):
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout_s)
            if self.sock.getsockname() == self.sock.getpeername():  # TCP's self-connect: it holds
                self.sock.close()  # the port a restarting server needs (an ephemeral port on loopback)
                raise ConnectionRefusedError("nothing listens there yet")
        except OSError as e:
            raise ConnectionError(f"cannot reach the server runner at {host}:{port} ({e}): start the "
                                  "algorithm first; runner i listens on env_config['port'] + i.") from e
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.wire_bytes = 0
        self.request({"type": "PING", "token": token, "protocol_version": PROTOCOL_VERSION}, "PONG")

    def send(self, message: dict) -> None:
        self.sock.sendall(data := frame(message))
        self.wire_bytes += len(data)

    def receive(self) -> dict:
        (length,) = HEADER.unpack(read_exactly(self.sock, HEADER.size))
        message = json.loads(read_exactly(self.sock, length))
        self.wire_bytes += HEADER.size + length
        if message["type"] == "ERROR":  # the server hangs up after it
            raise ServerError(message["message"])
        return message

    def request(self, message: dict, answer: str) -> dict:
        """The server's answer to `message`, of type `answer`; any error closes the connection."""
        try:
            self.send(message)
            if (reply := self.receive())["type"] != answer:
                raise ServerError(f"expected {answer}, got {reply['type']}")
        except BaseException:
            self.close()
            raise
        return reply

    def close(self) -> None:
        self.sock.close()


class Policy:
    """The runners' network and action head, from SET_CONFIG and SET_STATE messages."""

    def __init__(self, config: dict, seed: int | None = None, on_weights: Any = None):
        self.on_weights = on_weights or (lambda weights_seq_no: None)
        self.activation = ACTIVATIONS[config["activation"]]
        self.head = config["head"]  # "categorical", "gaussian", "epsilon_greedy" or "squashed_gaussian"
        self.explore = config["explore"]
        box = config["action_space"]  # a Box's bounds: SAC's squashed Gaussian acts within them
        self.bounds = [decode_array(box[k]).astype(np.float32) for k in ("low", "high") if k in box]
        self.rng = np.random.default_rng(seed)
        self.layers: list[tuple[np.ndarray, np.ndarray]] = []

    def set_state(self, state: dict) -> None:
        self.layers = [(decode_array(w), decode_array(b)) for w, b in state["layers"]]
        self.weights_seq_no = state["weights_seq_no"]
        self.epsilon = state.get("epsilon", 0.0)  # epsilon_greedy: the algorithm's, with each state
        self.on_weights(self.weights_seq_no)

    def forward(self, obs: np.ndarray) -> np.ndarray:
        """Logits (categorical) or means and log-stds (gaussian) for a batch of observations."""
        x = np.asarray(obs, dtype=np.float32).reshape(len(obs), -1)
        for w, b in self.layers[:-1]:
            x = self.activation(x @ w + b)
        return x @ self.layers[-1][0] + self.layers[-1][1]

    def act(self, obs: np.ndarray) -> tuple[Any, float]:
        """One action for one observation, and its log-probability (log-density)."""
        return head_action(self.head, self.forward(obs[None])[0], self.rng, self.explore,
                           self.epsilon, self.bounds)


def head_action(head: str, out: np.ndarray, rng: np.random.Generator, explore: bool,
                epsilon: float = 0.0, bounds: list | tuple = ()) -> tuple[Any, float]:
    """The action of `head` for one row `out` of the network's outputs, and its log-probability."""
    if head == "squashed_gaussian":  # in float32, as the runners' SquashedGaussian
        return squashed_gaussian(out, *bounds, rng if explore else None)
    out = out.astype(np.float64)
    if head == "epsilon_greedy":  # Q-values: a random action with probability epsilon
        return epsilon_greedy(out, epsilon if explore else 0.0, rng)
    if head == "categorical":  # inverse-CDF sampling, as the runners' (numpy_mlp.py)
        cdf = np.cumsum(np.exp(shifted := out - out.max()))
        action = int(np.count_nonzero(cdf[:-1] <= rng.random() * cdf[-1])) if explore \
            else int(out.argmax())
        return action, float(shifted[action] - np.log(cdf[-1]))
    mean, log_std = np.split(out, 2)  # a diagonal Gaussian's means and log-stds
    action = mean + np.exp(log_std) * rng.standard_normal(mean.shape) if explore else mean
    z = (action - mean) / np.exp(log_std)
    return action, float(np.sum(-0.5 * z**2 - log_std - 0.5 * np.log(2 * np.pi)))


def epsilon_greedy(q_values: np.ndarray, epsilon: float, rng: np.random.Generator) -> tuple[int, float]:
    """DQN's action as the runners' EpsilonGreedy picks it, and its probability's log."""
    best = int(q_values.argmax())
    action = int(rng.integers(len(q_values))) if rng.random() < epsilon else best
    return action, float(np.log(epsilon / len(q_values) + (1.0 - epsilon) * (action == best)))


def squashed_gaussian(out: np.ndarray, low: np.ndarray, high: np.ndarray,
                      rng: np.random.Generator | None) -> tuple[np.ndarray, float]:
    """SAC's action as the runners' SquashedGaussian: tanh(u) rescaled into [low, high] for u ~ N(mean,
    std) (u = mean without `rng`); and log pi(tanh(u)), as sac_rl_module.py defines it."""
    mean, log_std = out[:len(out) // 2], np.clip(out[len(out) // 2:], LOG_STD_MIN, LOG_STD_MAX)
    noise = np.zeros_like(mean) if rng is None else rng.standard_normal(mean.shape, dtype=np.float32)
    u = mean + np.exp(log_std) * noise
    logp = -0.5 * noise**2 - log_std - 0.5 * np.log(2 * np.pi) - 2 * (
        np.log(2.0) - u - np.logaddexp(0.0, -2.0 * u))  # minus log(1 - tanh(u)^2)
    return low + (np.tanh(u) + 1.0) * 0.5 * (high - low), float(logp.sum())


def to_env_action(action: Any, space: dict) -> Any:
    """The env's action from the module's: shifted by a Discrete start, clipped into a Box."""
    return action + space["start"] if space["type"] == "Discrete" else np.clip(
        action, decode_array(space["low"]), decode_array(space["high"]))


def episode_entry(observations: list, actions: list, rewards: list, logps: list, terminated: bool,
                  discrete: bool = True) -> dict:
    """One whole episode as an EPISODES entry: T+1 observations, T actions, rewards, log-probs."""
    return {"actions": encode_array(np.asarray(actions, dtype=np.int64 if discrete else np.float32)),
            **{k: encode_array(np.asarray(v, dtype=np.float32)) for k, v in
               (("obs", observations), ("rewards", rewards), ("action_logp", logps))},
            "terminated": bool(terminated), "truncated": not terminated}


def run_episode(env: Any, policy: Policy, config: dict, seed: int | None = None) -> dict:
    """One whole episode, as an EPISODES entry (cut and marked truncated at max_episode_steps)."""
    obs, _ = env.reset(seed=seed)
    observations, steps = [obs], []  # steps: (action, reward, log-probability)
    terminated = truncated = False
    while not (terminated or truncated):
        action, logp = policy.act(np.asarray(obs, dtype=np.float32))
        obs, reward, terminated, truncated, _ = env.step(to_env_action(action, config["action_space"]))
        observations.append(obs)
        steps.append((action, reward, logp))
        truncated = bool(truncated or (not terminated and len(steps) >= config["max_episode_steps"]))
    actions, rewards, logps = zip(*steps, strict=True)
    return episode_entry(observations, actions, rewards, logps, terminated,
                         config["action_space"]["type"] == "Discrete")


def get_action(connection: Connection, obs: Any, reward: float | None) -> Any:
    """Server-side inference: the env's action for `obs` (GET_ACTION; `reward`: the last action's)."""
    message = {"type": "GET_ACTION", "obs": encode_array(np.asarray(obs, dtype=np.float32)),
               **({} if reward is None else {"reward": float(reward)})}
    action = connection.request(message, "ACTION")["action"]
    return action if isinstance(action, int) else decode_array(action)


def run_episode_on_server(env: Any, conn: Connection, config: dict, seed: int | None = None) -> int:
    """One whole episode, the server choosing each action (END_EPISODE ends it); its env steps."""
    obs, _ = env.reset(seed=seed)
    reward, steps = None, 0
    while True:
        obs, reward, terminated, truncated, _ = env.step(get_action(conn, obs, reward))
        steps += 1
        if terminated or truncated or steps >= config["max_episode_steps"]:
            conn.send({"type": "END_EPISODE", "obs": encode_array(np.asarray(obs, np.float32)),
                       "reward": float(reward), "terminated": bool(terminated),
                       "truncated": not terminated})
            return steps


def run(env: Any, host: str, port: int, token: str, steps_per_batch: int = 500,
        max_env_steps: int | None = None, reconnect_timeout_s: float = 30.0,
        seed: int | None = None, on_weights: Any = None, connect: Any = Connection,
        inference: str = "client") -> int:
    """Sample `env`'s episodes until `max_env_steps` (None: no end), sending them every `steps_per_batch`
    env steps; return the env steps sent. Reconnect when the connection drops (its batch in flight is
    lost). `on_weights(weights_seq_no)` runs on each SET_STATE; `connect` opens each Connection."""
    if inference not in ("client", "server") or steps_per_batch < 1:
        raise ValueError(f"inference={inference!r}, steps_per_batch={steps_per_batch}: inference is "
                         "'client' (run the policy here) or 'server'; send at least 1 step per batch.")
    sent, connection, lost_since = 0, None, None  # lost_since: lost, and no batch went through since
    while max_env_steps is None or sent < max_env_steps:
        try:
            if connection is None:
                connection = connect(host, port, token)
                config = connection.request({"type": "GET_CONFIG"}, "SET_CONFIG")
                for name in ("observation_space", "action_space"):  # the server's, as env's?
                    want, ours = config[name].get("n") or config[name]["shape"], getattr(env, name, None)
                    if ours is not None and getattr(ours, "n", list(ours.shape)) != want:
                        raise ValueError(f"env.{name} is {ours}, the server runner's {name} is "
                                         f"{config[name]['type']} {want}: run the simulator its "
                                         "config describes.")
                if inference == "client":
                    policy = Policy(config, seed, on_weights)
                    policy.set_state(connection.request({"type": "GET_STATE"}, "SET_STATE"))
            if inference == "server":
                steps = run_episode_on_server(env, connection, config, seed if sent == 0 else None)
            else:
                batch, steps = [], 0
                while steps < steps_per_batch:
                    batch.append(run_episode(env, policy, config, seed if sent == steps == 0 else None))
                    steps += batch[-1]["rewards"]["shape"][0]
                if max_env_steps is not None and sent + steps >= max_env_steps:  # the last batch
                    connection.send({"type": "EPISODES", "episodes": batch})
                else:
                    policy.set_state(connection.request(
                        {"type": "EPISODES_AND_GET_STATE", "episodes": batch}, "SET_STATE"))
            sent, lost_since = sent + steps, None  # (not at PONG: a server may hang up after it)
        except BaseException as e:  # a refusal, a bad space, the simulator's error: no socket left
            if connection is not None:
                connection.close()
            connection = None
            if not isinstance(e, OSError):  # (ConnectionError and socket.timeout are OSErrors)
                raise
            lost_since = lost_since or time.monotonic()
            if time.monotonic() - lost_since > reconnect_timeout_s:
                raise ConnectionError(f"nothing reached the server runner at {host}:{port} for "
                                      f"reconnect_timeout_s={reconnect_timeout_s}: {e}") from e
            time.sleep(0.2)
    if connection is not None:
        connection.close()
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    for flag, default in (("--port", 5555), ("--steps-per-batch", 500), ("--max-env-steps", None),
                          ("--seed", None)):
        parser.add_argument(flag, type=int, default=default)
    parser.add_argument("--token", default=os.environ.get(TOKEN_ENV_VAR),
                        help=f"the server's shared secret (default: ${TOKEN_ENV_VAR})")
    parser.add_argument("--env", default="CartPole-v1", help="a gymnasium id (needs gymnasium)")
    parser.add_argument("--inference", choices=("client", "server"), default="client",
                        help="where the policy runs: here, or on the server")
    args = parser.parse_args()
    if not args.token or args.steps_per_batch < 1:
        parser.error(f"--steps-per-batch {args.steps_per_batch}: at least 1" if args.token else
                     f"no token: set {TOKEN_ENV_VAR} (as the server's driver has it) or --token")
    import gymnasium as gym  # only the example simulator needs it
    sent = run(gym.make(args.env), args.host, args.port, args.token, args.steps_per_batch,
               args.max_env_steps, seed=args.seed, inference=args.inference)
    print(f"sent {sent} env steps")


if __name__ == "__main__":
    main()
