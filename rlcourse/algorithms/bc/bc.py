"""BC (behavior cloning; Pomerleau 1991): supervised learning of recorded actions. As in RLlib, it is
MARWIL with beta 0 (`marwil/marwil.py`): its loop, and its loss with every weight 1."""

from rlcourse.algorithms.marwil.marwil import MARWIL, MARWILConfig
from rlcourse.utils.validation import fail


class BCConfig(MARWILConfig):
    """MARWIL's settings with beta 0."""

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
