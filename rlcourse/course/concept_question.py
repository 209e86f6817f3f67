"""The two kinds of concept check (rlcourse/course/concept_checks.py shows them): a multiple-choice
question and a question answered with a number, each explaining every answer."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    """A multiple-choice question: `choices` are (text, explanation) pairs in the order shown;
    `answer` is the index of the one right choice. Every choice explains itself, right or wrong."""

    prompt: str
    answer: int
    choices: tuple[tuple[str, str], ...]

    def __post_init__(self):
        if not 0 <= self.answer < len(self.choices):
            raise ValueError(f"Question {self.prompt[:40]!r}: answer={self.answer} is not the index of "
                             f"one of its {len(self.choices)} choices (0-based)")


@dataclass(frozen=True)
class NumberQuestion:
    """A question answered with a number: right within `tolerance` of `value` (`explanation` says
    why); `wrong` holds the numbers the usual slips give, each with what went wrong."""

    prompt: str
    value: float
    tolerance: float
    explanation: str
    wrong: tuple[tuple[float, str], ...]

    def __post_init__(self):
        for number, _ in self.wrong:
            if self.matches(number, self.value):
                raise ValueError(f"NumberQuestion {self.prompt[:40]!r}: the wrong answer {number} is "
                                 f"within tolerance={self.tolerance} of value={self.value}; make the "
                                 f"tolerance smaller or drop that wrong answer")

    def matches(self, number: float, target: float) -> bool:
        return abs(number - target) <= self.tolerance
