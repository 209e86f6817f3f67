"""What every exercise checker shares: the error for a wrong answer, the message for a right one."""


class ExerciseError(AssertionError):
    """A wrong answer: the message says what is off and gives a hint."""


def passed(what: str) -> None:
    """Tell the learner their answer is right."""
    print(f"Correct: {what}")
