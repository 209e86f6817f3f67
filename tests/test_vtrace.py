"""V-trace against the paper's definition, written out directly (a sum, not the recursion)."""

import numpy as np
import pytest

from rlcourse.algorithms.impala.vtrace import vtrace

GAMMA = 0.9


def reference_vtrace(mu_logp, pi_logp, rewards, values, bootstrap, terminated, gamma,
                     rho_bar, pg_rho_bar, c_bar=1.0):
    """One chunk, straight from Espeholt et al. (2018), eq. (1):

    v_s = V(x_s) + sum_{t=s}^{n-1} gamma^(t-s) (prod_{i=s}^{t-1} c_i) rho_t delta_t,
    delta_t = r_t + gamma V(x_{t+1}) - V(x_t), with V(x_n) = bootstrap, or 0 after a termination.
    """
    n = len(rewards)
    ratio = np.exp(pi_logp - mu_logp)
    rho, c = np.minimum(rho_bar, ratio), np.minimum(c_bar, ratio)
    next_values = np.append(values[1:], 0.0 if terminated else bootstrap)
    delta = rewards + gamma * next_values - values
    vs = np.empty(n)
    for s in range(n):
        total = values[s]
        for t in range(s, n):
            total += gamma ** (t - s) * np.prod(c[s:t]) * rho[t] * delta[t]
        vs[s] = total
    next_vs = np.append(vs[1:], 0.0 if terminated else bootstrap)
    pg = np.minimum(pg_rho_bar, ratio) * (rewards + gamma * next_vs - values)
    return vs, pg


def random_chunk(rng, n):
    return {"mu_logp": np.log(rng.uniform(0.1, 0.9, n)), "pi_logp": np.log(rng.uniform(0.1, 0.9, n)),
            "rewards": rng.normal(size=n), "values": rng.normal(size=n), "bootstrap": rng.normal()}


def run_vtrace(chunks, rho_bar=1.0, pg_rho_bar=1.0):
    """Concatenate chunks [(chunk, terminated)] the way the learner does and call vtrace()."""
    cat = {k: np.concatenate([c[k] for c, _ in chunks]) for k in ("mu_logp", "pi_logp", "rewards",
                                                                  "values")}
    next_values, ends, terms = [], [], []
    for chunk, terminated in chunks:
        n = len(chunk["rewards"])
        next_values.append(np.append(chunk["values"][1:], chunk["bootstrap"]))
        ends.append(np.arange(n) == n - 1)
        terms.append((np.arange(n) == n - 1) & terminated)
    return vtrace(cat["mu_logp"], cat["pi_logp"], cat["rewards"], cat["values"],
                  np.concatenate(next_values), np.concatenate(terms), np.concatenate(ends), GAMMA,
                  rho_bar, pg_rho_bar)


@pytest.mark.parametrize("terminated", [False, True])
@pytest.mark.parametrize(("rho_bar", "pg_rho_bar"), [(1.0, 1.0), (0.5, 2.0), (100.0, 100.0)])
def test_matches_the_papers_definition(terminated, rho_bar, pg_rho_bar):
    chunk = random_chunk(np.random.default_rng(0), 7)
    vs, pg = run_vtrace([(chunk, terminated)], rho_bar, pg_rho_bar)
    ref_vs, ref_pg = reference_vtrace(chunk["mu_logp"], chunk["pi_logp"], chunk["rewards"],
                                      chunk["values"], chunk["bootstrap"], terminated, GAMMA,
                                      rho_bar, pg_rho_bar)
    np.testing.assert_allclose(vs, ref_vs, rtol=1e-10)
    np.testing.assert_allclose(pg, ref_pg, rtol=1e-10)


def test_ratios_of_one_give_n_step_bootstrapped_returns():
    chunk = random_chunk(np.random.default_rng(1), 5)
    chunk["pi_logp"] = chunk["mu_logp"]  # on-policy data
    vs, _ = run_vtrace([(chunk, False)])
    r, n = chunk["rewards"], 5
    expected = [sum(GAMMA ** (t - s) * r[t] for t in range(s, n)) + GAMMA ** (n - s) * chunk["bootstrap"]
                for s in range(n)]
    np.testing.assert_allclose(vs, expected, rtol=1e-10)


def test_clipping_takes_effect():
    chunk = random_chunk(np.random.default_rng(2), 6)
    chunk["pi_logp"] = chunk["mu_logp"] + np.log(3.0)  # every ratio pi/mu is 3
    clipped_vs, clipped_pg = run_vtrace([(chunk, False)], rho_bar=1.0, pg_rho_bar=1.0)
    loose_vs, loose_pg = run_vtrace([(chunk, False)], rho_bar=10.0, pg_rho_bar=10.0)
    assert not np.allclose(clipped_vs, loose_vs)
    # With rho_bar = 1 and all ratios clipped to 1, V-trace is the on-policy n-step return.
    on_policy = dict(chunk, pi_logp=chunk["mu_logp"])
    np.testing.assert_allclose(clipped_vs, run_vtrace([(on_policy, False)])[0], rtol=1e-10)
    # The policy-gradient weight is min(pg_rho_bar, ratio): the loose one is 3x the clipped one
    # where both use the same targets (the last step, whose v_{t+1} is the bootstrap).
    np.testing.assert_allclose(loose_pg[-1], 3.0 * clipped_pg[-1], rtol=1e-10)


def test_termination_cuts_the_bootstrap_and_chunks_do_not_leak():
    rng = np.random.default_rng(3)
    first, second = random_chunk(rng, 4), random_chunk(rng, 3)
    vs, _ = run_vtrace([(first, True), (second, False)])
    # The value after a termination does not matter...
    vs_other, _ = run_vtrace([(dict(first, bootstrap=1e6), True), (second, False)])
    np.testing.assert_allclose(vs[:4], vs_other[:4], rtol=1e-12)
    # ...nor what the next chunk (another episode) holds.
    vs_other, _ = run_vtrace([(first, True), (dict(second, rewards=second["rewards"] + 50), False)])
    np.testing.assert_allclose(vs[:4], vs_other[:4], rtol=1e-12)
    # A truncated chunk does bootstrap from its last observation's value.
    vs_trunc, _ = run_vtrace([(first, False), (second, False)])
    vs_trunc_other, _ = run_vtrace([(dict(first, bootstrap=first["bootstrap"] + 1), False),
                                    (second, False)])
    assert not np.allclose(vs_trunc[:4], vs_trunc_other[:4])
