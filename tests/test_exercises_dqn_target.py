"""check_dqn_target accepts the double-DQN target, agrees with DQNLearner.compute_loss, and names each
typical mistake in its hint."""

import numpy as np
import pytest
import torch

from rlcourse.course.exercises import ExerciseError, check_dqn_target
from rlcourse.course.exercises.dqn_target import (
    _batch,
    _learner,
    learner_target,
    reference_dqn_target,
)

pytestmark = pytest.mark.timeout(60)


def learners_answer(batch, q_online, q_target, gamma, *, select="online", value="target",
                    terminations=True, truncations=False, discount="n", no_grad=True):
    """A learner's answer; the keywords make it wrong on purpose (select/value: which network picks
    a* and which values it, or "stored" to value the batch's own action)."""
    nets = {"online": q_online, "target": q_target}
    context = torch.no_grad() if no_grad else torch.enable_grad()
    with context:
        stored = select == "stored"
        best = batch["actions"] if stored else nets[select](batch["new_obs"]).argmax(dim=1)
        next_value = nets[value](batch["new_obs"]).gather(1, best[:, None]).squeeze(1)
        done = torch.zeros_like(batch["terminateds"])
        if terminations:
            done = done | batch["terminateds"]
        if truncations:
            done = done | batch["truncateds"]
        power = {"n": batch["n_step"].float(), "1": 1.0, "3": 3.0}[discount]
        return batch["rewards"] + gamma ** power * (1.0 - done.float()) * next_value


def test_a_right_answer_passes_and_is_returned(capsys):
    assert check_dqn_target(learners_answer) is learners_answer
    assert "Correct" in capsys.readouterr().out


def test_the_reference_is_the_target_inside_dqn_learner_compute_loss():
    batch, learner = _batch(np.random.default_rng(0), 64), _learner(3, 0.97)
    module = learner.module
    expected = learner_target(learner, batch)
    got = reference_dqn_target(batch, module.compute_q_values, module.compute_target_q_values, 0.97)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    # The checker's data has what makes each mistake visible: both endings, short rows, and a*
    # of the online network differing from the target network's.
    assert batch["terminateds"].any() and batch["truncateds"].any()
    assert (batch["n_step"] < 3).any() and (batch["n_step"] == 3).any()
    online, target = module.compute_q_values(batch["new_obs"]), module.compute_target_q_values(
        batch["new_obs"])
    assert (online.argmax(1) != target.argmax(1)).any()


@pytest.mark.parametrize(("mistake", "words"), [
    ({"terminations": False}, "bootstrap after a termination"),
    ({"truncations": True}, "truncated row still bootstraps"),
    ({"value": "online"}, "online network to pick a\\* and to value it"),
    ({"select": "target"}, "plain DQN"),
    ({"select": "target", "value": "online"}, "roles are swapped"),
    ({"select": "stored"}, "stored action"),
    ({"discount": "1"}, "gamma \\*\\* n_step"),
    ({"discount": "3"}, "each row's own"),
], ids=["ignores-terminations", "stops-at-truncations", "online-for-both", "target-for-both",
        "roles-swapped", "stored-action", "gamma-not-gamma-n", "fixed-n"])
def test_each_mistake_is_rejected_with_its_hint(mistake, words):
    def wrong(batch, q_online, q_target, gamma):
        return learners_answer(batch, q_online, q_target, gamma, **mistake)

    with pytest.raises(ExerciseError, match=words):
        check_dqn_target(wrong)


def test_the_lessons_gamma_instead_of_the_argument_is_named():
    def lessons_gamma(batch, q_online, q_target, gamma):
        return learners_answer(batch, q_online, q_target, 0.9)

    with pytest.raises(ExerciseError, match="use the gamma argument"):
        check_dqn_target(lessons_gamma)


def test_a_target_with_a_gradient_is_rejected():
    def with_gradient(batch, q_online, q_target, gamma):
        y = learners_answer(batch, q_online, q_target, gamma)
        return y + 0.0 * q_online(batch["obs"]).sum()  # right values, but through the online net

    with pytest.raises(ExerciseError, match="gradient"):
        check_dqn_target(with_gradient)


def test_changing_the_batch_in_place_is_rejected():
    def in_place(batch, q_online, q_target, gamma):
        y = learners_answer(batch, q_online, q_target, gamma)
        batch["rewards"] += 0.0 * y + 1.0  # e.g. reusing rewards as the output tensor
        return y

    def replaces_a_key(batch, q_online, q_target, gamma):
        batch["n_step"] = batch["n_step"].float()  # same values, but the caller's dict changed
        return learners_answer(batch, q_online, q_target, gamma)

    for wrong in (in_place, replaces_a_key):
        with pytest.raises(ExerciseError, match="in place"):
            check_dqn_target(wrong)


def test_a_wrong_shape_a_wrong_type_and_typed_numbers_are_rejected():
    first = {}

    def typed(batch, q_online, q_target, gamma):  # the right numbers for the first batch only
        if not first:
            first["y"] = learners_answer(batch, q_online, q_target, gamma).clone()
        return first["y"]

    with pytest.raises(ExerciseError, match="same numbers for two different batches"):
        check_dqn_target(typed)
    with pytest.raises(ExerciseError, match="shape \\(32, 1\\)"):
        check_dqn_target(lambda *args: learners_answer(*args)[:, None])
    with pytest.raises(ExerciseError, match="torch"):
        check_dqn_target(lambda *args: learners_answer(*args).numpy())
    with pytest.raises(ExerciseError, match="Hint: y = R"):
        check_dqn_target(lambda *args: learners_answer(*args) + 0.5)
    with pytest.raises(ExerciseError, match="raised ZeroDivisionError"):
        check_dqn_target(lambda *args: 1 / 0)


def test_torchs_own_not_implemented_error_is_a_wrong_answer_not_the_stub():
    def float_bitwise_or(batch, q_online, q_target, gamma):
        done = batch["terminateds"].float() | batch["truncateds"].float()  # torch: not for floats
        return learners_answer(batch, q_online, q_target, gamma) * done


    with pytest.raises(ExerciseError, match="raised RuntimeError: torch"):
        check_dqn_target(float_bitwise_or)


def test_the_stub_is_not_attempted_and_the_lesson_goes_on_with_the_reference(capsys):
    def my_dqn_target(batch, q_online, q_target, gamma):
        raise NotImplementedError("TODO: the n-step double-DQN target")

    reference = check_dqn_target(my_dqn_target)
    out = capsys.readouterr().out
    assert "Not attempted yet" in out and "show_solution('dqn_target')" in out
    assert reference is reference_dqn_target and check_dqn_target(reference) is reference
