"""MultiAgentEpisode from hand-made step sequences: turns, agents that finish early, cuts, returns,
module mapping, and the env mistakes it must refuse with the agent's name."""

import numpy as np
import pytest

from rlcourse.env.multi_agent_episode import MultiAgentEpisode

pytestmark = pytest.mark.timeout(30)

F, T = False, True


def obs(x: float) -> np.ndarray:
    return np.array([x], dtype=np.float32)


def step(ep, observations, actions, rewards, terminateds=None, truncateds=None, extra=None):
    ep.add_env_step({a: obs(v) for a, v in observations.items()}, actions, rewards,
                    {"__all__": F, **(terminateds or {})}, {"__all__": F, **(truncateds or {})},
                    extra_model_outputs=extra)


def turn_based_episode() -> MultiAgentEpisode:
    """a acts on even steps, b on odd steps; both rewarded at the end (a wins)."""
    ep = MultiAgentEpisode(agent_to_module_mapping_fn=lambda aid, episode: f"pol_{aid}")
    ep.add_env_reset({"a": obs(0)})
    step(ep, {"b": 1}, {"a": 10}, {})
    step(ep, {"a": 2}, {"b": 20}, {"a": 0.5})      # a's first transition closes: 0 -> 2
    step(ep, {"b": 3}, {"a": 11}, {"b": -0.25})    # b's first transition closes: 1 -> 3
    return ep


def test_agents_that_take_turns_each_get_their_own_transitions():
    ep = turn_based_episode()
    step(ep, {"a": 4, "b": 4}, {"b": 21}, {"a": 1.0, "b": -1.0}, terminateds={"__all__": T})
    assert ep.is_terminated and ep.is_done and len(ep) == 4
    a, b = ep.agent_episodes["a"], ep.agent_episodes["b"]
    assert a.observations[:, 0].tolist() == [0, 2, 4] and a.actions.tolist() == [10, 11]
    assert a.rewards.tolist() == [0.5, 1.0] and a.is_terminated
    assert b.observations[:, 0].tolist() == [1, 3, 4] and b.actions.tolist() == [20, 21]
    assert b.rewards.tolist() == [-0.25, -1.0] and b.is_terminated
    assert ep.get_agent_returns() == {"a": 1.5, "b": -1.25}
    assert ep.get_return() == pytest.approx(0.25)
    assert ep.agent_to_module_mapping == {"a": "pol_a", "b": "pol_b"}
    assert ep.module_for("b") == "pol_b"
    assert ep.agent_steps() == 4


def test_rewards_between_an_action_and_the_next_observation_add_up():
    ep = MultiAgentEpisode()
    ep.add_env_reset({"a": obs(0), "b": obs(0)})
    step(ep, {"b": 1}, {"a": 1, "b": 1}, {"a": 1.0, "b": 0.0})
    step(ep, {"b": 2}, {"b": 2}, {"a": 2.0})
    step(ep, {"a": 3, "b": 3}, {"b": 3}, {"a": 4.0})
    assert ep.agent_episodes["a"].rewards.tolist() == [7.0]
    assert ep.agent_episodes["a"].observations[:, 0].tolist() == [0, 3]
    assert ep.get_agents_to_act() == ["a", "b"]


def test_an_agent_that_finishes_early_is_done_while_the_episode_goes_on():
    ep = MultiAgentEpisode()
    ep.add_env_reset({"a": obs(0), "b": obs(0)})
    step(ep, {"a": 1, "b": 1}, {"a": 0, "b": 0}, {"a": 1.0, "b": 1.0}, terminateds={"a": T})
    assert not ep.is_done and ep.get_agents_to_act() == ["b"]
    assert ep.agent_episodes["a"].is_terminated and len(ep.agent_episodes["a"]) == 1
    step(ep, {"b": 2}, {"b": 0}, {"b": 1.0}, truncateds={"b": T, "__all__": T})
    assert ep.is_truncated and not ep.is_terminated
    assert ep.agent_episodes["b"].is_truncated and len(ep.agent_episodes["b"]) == 2


def test_all_done_ends_open_actions_at_the_agents_last_observation():
    ep = turn_based_episode()  # a acted at step 3 and has not observed since
    step(ep, {"b": 4}, {"b": 21}, {"a": 3.0}, terminateds={"__all__": T})
    a = ep.agent_episodes["a"]
    assert a.is_terminated and a.actions.tolist() == [10, 11]
    assert a.observations[:, 0].tolist() == [0, 2, 2] and a.rewards.tolist() == [0.5, 3.0]


def test_cut_carries_open_actions_and_their_rewards_into_the_next_chunk():
    ep = turn_based_episode()  # a's action 11 is open (taken at step 3)
    ep_id, a_id = ep.id_, ep.agent_episodes["a"].id_
    chunk = ep.cut()
    assert chunk.id_ == ep_id and chunk.env_t_started == 3 == ep.env_t
    assert chunk.agent_to_module_mapping == ep.agent_to_module_mapping
    assert len(chunk.agent_episodes["a"]) == 0 and chunk.agent_episodes["a"].t_started == 1
    step(chunk, {"a": 4}, {"b": 21}, {"a": 2.0, "b": 5.0})
    a, b = chunk.agent_episodes["a"], chunk.agent_episodes["b"]
    assert a.id_ == a_id and a.t_started == 1 and a.actions.tolist() == [11]
    assert a.observations[:, 0].tolist() == [2, 4] and a.rewards.tolist() == [2.0]
    assert b.actions.size == 0 and chunk.get_return(include_hanging_rewards=True) == 7.0
    # the chunks' agent data joins into the agent's whole episode
    joined = ep.agent_episodes["a"].concat_episode(a)
    assert joined.observations[:, 0].tolist() == [0, 2, 4] and joined.actions.tolist() == [10, 11]
    assert ep.agent_episodes["a"].actions.tolist() == [10]  # the first chunk is unchanged


def test_cut_drops_done_agents_and_refuses_a_done_episode():
    ep = MultiAgentEpisode()
    ep.add_env_reset({"a": obs(0), "b": obs(0)})
    step(ep, {"a": 1, "b": 1}, {"a": 0, "b": 0}, {"a": 1.0}, terminateds={"a": T})
    chunk = ep.cut()
    assert chunk.agent_ids == {"b"}
    with pytest.raises(ValueError, match="'a'.*already done"):
        step(chunk, {"a": 2, "b": 2}, {"b": 0}, {})
    step(ep.cut(), {"b": 2}, {"b": 0}, {}, terminateds={"a": T})  # a repeated done flag is fine
    done = MultiAgentEpisode()
    done.add_env_reset({"a": obs(0)})
    step(done, {"a": 1}, {"a": 0}, {}, terminateds={"__all__": T})
    with pytest.raises(ValueError, match="done"):
        done.cut()
    with pytest.raises(ValueError, match="ended"):
        step(done, {"a": 2}, {"a": 0}, {})


def test_the_mapping_fn_is_asked_once_per_agent_and_episode():
    calls = []

    def mapping(agent_id, episode):
        calls.append(agent_id)
        return "shared"

    ep = MultiAgentEpisode(agent_to_module_mapping_fn=mapping)
    ep.add_env_reset({"a": obs(0)})
    step(ep, {"a": 1, "b": 1}, {"a": 0}, {})
    step(ep.cut(), {"a": 2, "b": 2}, {"a": 0, "b": 0}, {})
    assert calls == ["a", "b"]


def test_extra_model_outputs_line_up_with_actions():
    ep = MultiAgentEpisode()
    ep.add_env_reset({"a": obs(0)})
    step(ep, {"a": 1}, {"a": 1}, {"a": 1.0}, extra={"a": {"action_logp": np.float32(-0.5)}})
    step(ep, {"a": 2}, {"a": 0}, {"a": 1.0}, extra={"a": {"action_logp": np.float32(-0.7)}})
    assert ep.agent_episodes["a"].extra_model_outputs["action_logp"].tolist() == pytest.approx(
        [-0.5, -0.7])


# -- the env's mistakes -------------------------------------------------------------------

def test_a_reward_for_an_agent_that_never_observed_names_the_agent():
    ep = MultiAgentEpisode(env_name="MyEnv")
    ep.add_env_reset({"a": obs(0)})
    with pytest.raises(ValueError, match="MyEnv rewarded agent 'ghost'.*never observed.*Fix the env"):
        step(ep, {"a": 1}, {"a": 0}, {"a": 1.0, "ghost": 1.0})


def test_a_reward_in_the_step_of_an_agents_first_observation_is_refused():
    ep = MultiAgentEpisode()
    ep.add_env_reset({"a": obs(0)})
    with pytest.raises(ValueError, match="agent 'b'.*never observed"):
        step(ep, {"a": 1, "b": 1}, {"a": 0}, {"b": 1.0})
    ep = MultiAgentEpisode()
    ep.add_env_reset({"a": obs(0)})
    step(ep, {"a": 1, "b": 1}, {"a": 0}, {})
    step(ep, {"a": 2}, {"a": 0, "b": 0}, {"b": 1.0})  # b observed, then acted: its reward counts
    step(ep, {"a": 3, "b": 3}, {"a": 0}, {})
    assert ep.agent_episodes["b"].rewards.tolist() == [1.0]


def test_a_done_flag_for_an_agent_that_never_observed_is_refused():
    ep = MultiAgentEpisode()
    ep.add_env_reset({"a": obs(0)})
    with pytest.raises(ValueError, match="ended the episode of agent 'z'"):
        step(ep, {"a": 1}, {"a": 0}, {}, terminateds={"z": T})


def test_an_agent_that_observed_must_act():
    ep = MultiAgentEpisode(env_name="MyEnv")
    ep.add_env_reset({"a": obs(0), "b": obs(0)})
    with pytest.raises(ValueError, match="agent 'b' observed at env step 0 but got no action"):
        step(ep, {"a": 1}, {"a": 0}, {})
    ep = MultiAgentEpisode()
    ep.add_env_reset({"a": obs(0), "b": obs(0)})
    with pytest.raises(ValueError, match="action for agent 'c'.*no new observation"):
        step(ep, {"a": 1}, {"a": 0, "b": 0, "c": 0}, {})


def test_terminateds_without_all_is_refused():
    ep = MultiAgentEpisode()
    ep.add_env_reset({"a": obs(0)})
    with pytest.raises(ValueError, match="__all__"):
        ep.add_env_step({"a": obs(1)}, {"a": 0}, {}, {"a": F}, {"a": F})


def test_to_numpy_freezes_the_chunk_and_pickles_without_the_mapping_fn():
    import pickle

    runner_state = object()  # stands for the runner that a bound-method mapping fn would drag along
    ep = MultiAgentEpisode(agent_to_module_mapping_fn=lambda aid, e: str(id(runner_state)))
    ep.add_env_reset({"a": obs(0)})
    step(ep, {"a": 1}, {"a": 1}, {"a": 2.0}, extra={"a": {"action_logp": -0.5}})
    chunk = ep.cut()
    ep.to_numpy()
    assert isinstance(ep.agent_episodes["a"].observations, np.ndarray)
    with pytest.raises(ValueError, match="read-only"):
        step(ep, {"a": 2}, {"a": 0}, {})
    step(chunk, {"a": 2}, {"a": 0}, {"a": 1.0})  # the next chunk goes on
    copy = pickle.loads(pickle.dumps(ep))
    assert copy.agent_to_module_mapping_fn is None
    assert copy.module_for("a") == ep.module_for("a") and copy.get_return() == 2.0
    assert copy.agent_episodes["a"].extra_model_outputs["action_logp"].tolist() == [-0.5]
