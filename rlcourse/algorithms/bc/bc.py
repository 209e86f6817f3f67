"""BC (behavior cloning; Pomerleau 1991): learn a policy from recorded data alone, by supervised
learning of the recorded actions. As in RLlib, BC is MARWIL with beta 0 (`marwil/marwil.py`): the
same training loop, and MARWIL's loss with every advantage weight 1, -mean log pi(a|s)
(`marwil/marwil_learner.py`); it evaluates in the real env, as online algorithms do."""

from rlcourse.algorithms.marwil.marwil import MARWIL, MARWILConfig
from rlcourse.utils.validation import fail


class BCConfig(MARWILConfig):
    """MARWIL's settings (RLlib 2.60's: lr 1e-4, 2,000-row batches) with beta 0."""

    @property
    def algo_class(self) -> type["BC"]:
        return BC

    def __init__(self) -> None:
        super().__init__()
        self.beta = 0.0

    def validate(self) -> None:
        super().validate()
        if self.beta != 0.0:
            fail(self, "beta", "BC imitates every recorded action alike (beta 0): use "
                 "MARWILConfig for beta > 0.")


class BC(MARWIL):
    """MARWIL's loop on BCConfig: one supervised step per batch of recorded rows; the runners only
    evaluate (config.evaluation(...))."""

    @classmethod
    def get_default_config(cls) -> BCConfig:
        return BCConfig()
