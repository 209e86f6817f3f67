"""The external server's own settings, read from `env_config` (its envs run outside Ray, so that
dict is free for them), checked at validate() so a typo or a bad value names its key."""

import math
from typing import Any

from rlcourse.env.external.rllink import MAX_MESSAGE_BYTES
from rlcourse.utils.validation import fail

# env_config keys the server reads, with their defaults.
SERVER_SETTINGS = {"host": "127.0.0.1", "port": 5555, "max_clients": 8, "client_timeout_s": 60.0,
                   "max_message_bytes": MAX_MESSAGE_BYTES, "max_episode_steps": 10_000}


def _whole(value: Any, low: int, high: float = math.inf) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def check_server_settings(config: Any) -> None:
    """Known keys only ('token' has its own refusal, in the runner), each of its type and range."""
    if unknown := sorted(set(config.env_config) - set(SERVER_SETTINGS) - {"token"}):
        fail(config, "env_config", f"the external server reads no {unknown}; its settings are "
             f"{sorted(SERVER_SETTINGS)} (defaults: {SERVER_SETTINGS}).")
    settings = {**SERVER_SETTINGS, **config.env_config}
    timeout = settings["client_timeout_s"]
    problems = {
        "host": not isinstance(settings["host"], str) and "an address string, e.g. '127.0.0.1'",
        "port": not _whole(settings["port"], 0, 65535) and "a TCP port in 0..65535 (0: any free)",
        "max_clients": not _whole(settings["max_clients"], 1) and "a whole number >= 1",
        "client_timeout_s": not (isinstance(timeout, int | float) and not isinstance(timeout, bool)
                                 and 0 < timeout < math.inf) and "seconds, a finite number > 0",
        "max_message_bytes": not _whole(settings["max_message_bytes"], 1024) and "bytes, >= 1024",
        "max_episode_steps": not _whole(settings["max_episode_steps"], 1) and "a whole number >= 1"}
    for key, fix in problems.items():
        if fix:
            fail(config, "env_config", f"env_config[{key!r}]={settings[key]!r}: use {fix}.")
