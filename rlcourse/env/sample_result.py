"""SampleResult: what a runner actor answers to one sample request (`sample_and_get_metrics`).

EnvRunner and MultiAgentEnvRunner both answer with it; EnvRunnerGroup reads it, and Ape-X's replay
shards take it straight from the runner's ObjectRef.
"""

from dataclasses import dataclass

from rlcourse.env.single_agent_episode import SingleAgentEpisode


@dataclass
class SampleResult:
    """A runner's answer to one sample request: episodes and their metrics, plus where they came from
    (the weights version they were sampled with, for IMPALA's policy lag, and the runner's process,
    for noticing that Ray restarted it)."""

    episodes: list[SingleAgentEpisode]
    metrics: dict  # what get_metrics() reports: finished episodes' returns and lengths, env steps
    weights_seq_no: int
    pid: int
    env_to_module_buffers: list | None = None  # connector statistics new since the last result
