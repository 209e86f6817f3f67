from dataclasses import dataclass

from rlcourse.env.single_agent_episode import SingleAgentEpisode


@dataclass
class SampleResult:
    """A runner's answer to one sample request (`EnvRunner.sample_and_get_metrics`): episodes, their
    metrics, the weights version they were sampled with (IMPALA's policy lag) and the runner's process
    id (a new one means Ray restarted it)."""

    episodes: list[SingleAgentEpisode]
    metrics: dict  # what get_metrics() reports: finished episodes' returns and lengths, env steps
    weights_seq_no: int
    pid: int
    env_to_module_buffers: list | None = None  # connector statistics new since the last result
