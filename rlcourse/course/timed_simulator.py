"""A simulator process that times its policy's answers (lesson 14, benchmarks/external_sampling.py):
client.py's loop on CartPole with each observation -> action timed, client-side (the local forward
pass) or server-side (the GET_ACTION -> ACTION round trip over TCP). It prints the times, the env
steps sent and the seconds they took as JSON. It imports client.py and gymnasium only (no Ray).

    RLCOURSE_EXTERNAL_TOKEN=... python -m rlcourse.course.timed_simulator PORT client|server STEPS
"""

import json
import os
import sys
import time

import gymnasium as gym

from rlcourse.env.external import client


def main(port: int, inference: str, env_steps: int) -> None:
    times = []
    owner, name = (client.Policy, "act") if inference == "client" else (client, "get_action")
    untimed = getattr(owner, name)

    def timed(*args):
        start = time.perf_counter()
        out = untimed(*args)
        times.append(time.perf_counter() - start)
        return out

    setattr(owner, name, timed)
    start = time.perf_counter()
    sent = client.run(gym.make("CartPole-v1"), "127.0.0.1", port, os.environ[client.TOKEN_ENV_VAR],
                      max_env_steps=env_steps, seed=0, inference=inference)
    print(json.dumps({"times": times, "steps": sent, "seconds": time.perf_counter() - start}))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
