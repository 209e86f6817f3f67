"""RLlib's column names (rllib/core/columns.py) and episodes as rows in its columnar layout: one row
per step, as RLlib 2.60's OfflineSingleAgentEnvRunner writes with `output_write_episodes=False`."""

import numpy as np
import pyarrow as pa
from ray.data.extensions import ArrowTensorArray

from rlcourse.env.single_agent_episode import SingleAgentEpisode

EPS_ID = "eps_id"
AGENT_ID = "agent_id"
MODULE_ID = "module_id"
OBS = "obs"
ACTIONS = "actions"
REWARDS = "rewards"
NEXT_OBS = "new_obs"
TERMINATEDS = "terminateds"
TRUNCATEDS = "truncateds"
ACTION_LOGP = "action_logp"


def _column(values: np.ndarray) -> pa.Array:
    """A plain Arrow column for one value per row; Ray Data's tensor column (as in RLlib's
    recordings) for arrays, so both libraries read them as arrays."""
    if values.ndim == 1:
        return pa.array(values)
    return ArrowTensorArray.from_numpy(np.ascontiguousarray(values))


def episodes_to_table(episodes: list[SingleAgentEpisode]) -> pa.Table:
    """One row per step of every chunk: `terminateds`/`truncateds` are True only on a chunk's last
    step, as RLlib writes them, and each of the episodes' `extra_model_outputs` is a column."""
    episodes = [episode for episode in episodes if len(episode)]
    if not episodes:
        return pa.table({})
    lengths = [len(episode) for episode in episodes]
    ends = np.cumsum(lengths) - 1
    terminateds, truncateds = np.zeros(ends[-1] + 1, bool), np.zeros(ends[-1] + 1, bool)
    terminateds[ends] = [episode.is_terminated for episode in episodes]
    truncateds[ends] = [episode.is_truncated for episode in episodes]
    columns = {
        EPS_ID: pa.array(np.repeat([e.id_ for e in episodes], lengths)),
        AGENT_ID: pa.nulls(len(terminateds), pa.string()),  # single-agent: None, as in RLlib
        MODULE_ID: pa.nulls(len(terminateds), pa.string()),
        OBS: _column(np.concatenate([e.observations[:-1] for e in episodes])),
        ACTIONS: _column(np.concatenate([e.actions for e in episodes])),
        REWARDS: _column(np.concatenate([e.rewards for e in episodes])),
        NEXT_OBS: _column(np.concatenate([e.observations[1:] for e in episodes])),
        TERMINATEDS: pa.array(terminateds),
        TRUNCATEDS: pa.array(truncateds),
    }
    for key in episodes[0].extra_model_outputs:
        columns[key] = _column(np.concatenate([e.extra_model_outputs[key] for e in episodes]))
    return pa.table(columns)
