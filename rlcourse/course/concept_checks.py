"""Concept checks: a few questions at the end of each lesson (multiple choice, or a number within a
tolerance), answered in a small widget that says right or wrong and why; the book shows the same
questions as static HTML with the answer folded away. The questions live in
rlcourse/course/concept_questions/.

    concept_checks("12")   # the last cells of lesson 12
"""

import html
import re

import ipywidgets as widgets
from IPython.display import display

from rlcourse.course.concept_question import NumberQuestion, Question
from rlcourse.course.concept_questions import QUESTIONS

LETTERS = "ABCDEFGH"
RIGHT, WRONG = "<b style='color:#1a7f37'>Right.</b>", "<b style='color:#cf222e'>Not quite.</b>"


def as_html(text: str) -> str:
    """`text` escaped for HTML, with `code` in backticks shown as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text, quote=False))


def verdict(question: Question, picked: int) -> str:
    """What the widget says when choice `picked` is clicked: right or wrong, and why."""
    why = as_html(question.choices[picked][1])
    return f"{RIGHT} {why}" if picked == question.answer else f"{WRONG} {why} Try another answer."


def number_verdict(question: NumberQuestion, typed: str) -> str:
    """What the widget says to the number `typed`: right, a known slip and why, or try again."""
    try:
        number = float(typed)
    except ValueError:
        return f"{WRONG} Type a number, such as 0.5."
    if question.matches(number, question.value):
        return f"{RIGHT} {as_html(question.explanation)}"
    slips = [why for wrong, why in question.wrong if question.matches(number, wrong)]
    return f"{WRONG} {as_html(slips[0]) if slips else 'Work it through once more.'} Try again."


def question_widget(question: Question | NumberQuestion, number: int) -> widgets.VBox:
    """The question, its answer (radio buttons with none picked, or a number box and a button), and
    the verdict under them."""
    feedback = widgets.HTML()
    if isinstance(question, NumberQuestion):
        box, check = widgets.Text(placeholder="a number"), widgets.Button(description="Check")
        check.on_click(lambda _: setattr(feedback, "value", number_verdict(question, box.value)))
        answer = widgets.HBox([box, check])
    else:
        answer = widgets.RadioButtons(options=[(text.replace("`", ""), i) for i, (text, _) in
                                               enumerate(question.choices)],
                                      value=None, layout=widgets.Layout(width="auto"))
        answer.observe(lambda change: setattr(feedback, "value", "" if change["new"] is None else
                                              verdict(question, change["new"])), names="value")
    return widgets.VBox([widgets.HTML(f"<b>{number}.</b> {as_html(question.prompt)}"), answer,
                         feedback])


def checks_widget(questions: list) -> widgets.VBox:
    """All of a lesson's questions, numbered, under one heading."""
    return widgets.VBox([widgets.HTML("<h3>Concept checks</h3>")] +
                        [question_widget(q, i) for i, q in enumerate(questions, 1)])


def static_item(question: Question | NumberQuestion) -> str:
    """One question as a page shows it: the choices lettered (or a note to answer with a number), and
    the answer with every explanation folded in a <details> element."""
    if isinstance(question, NumberQuestion):
        whys = "".join(f"<li>{wrong:g}: {as_html(why)}</li>" for wrong, why in question.wrong)
        return (f"<li><p>{as_html(question.prompt)}</p><p><i>Answer with a number.</i></p><details>"
                f"<summary>Answer</summary><p>{question.value:g} (within {question.tolerance:g}) is "
                f"right: {as_html(question.explanation)}</p><ul>{whys}</ul></details></li>")
    choices = "".join(f"<li>{as_html(text)}</li>" for text, _ in question.choices)
    whys = "".join(f"<li><b>{LETTERS[i]}</b>{' (right)' if i == question.answer else ''}: "
                   f"{as_html(why)}</li>" for i, (_, why) in enumerate(question.choices))
    return (f"<li><p>{as_html(question.prompt)}</p><ol type='A'>{choices}</ol><details><summary>"
            f"Answer</summary><p>{LETTERS[question.answer]} is right.</p><ul>{whys}</ul></details></li>")


def static_html(questions: list) -> str:
    """The questions as the book shows them, each answer folded."""
    items = "".join(static_item(question) for question in questions)
    return f"<div class='concept-checks'><h3>Concept checks</h3><ol>{items}</ol></div>"


def lesson_questions(lesson: str) -> list:
    """Lesson `lesson`'s questions ("01" .. "15")."""
    if lesson not in QUESTIONS:
        raise KeyError(f"no concept checks for lesson {lesson!r}: lessons are named by their two "
                       f"digits, one of {sorted(QUESTIONS)}")
    return QUESTIONS[lesson]


def concept_checks(lesson: str) -> None:
    """Show lesson `lesson`'s questions: the live widget in JupyterLab, the static HTML (answers
    folded) wherever there is no widget manager, as in the book. Nothing waits for a click."""
    questions = lesson_questions(lesson)
    bundle = checks_widget(questions)._repr_mimebundle_()
    display({**bundle, "text/html": static_html(questions),
             "text/plain": f"Concept checks: {len(questions)} questions (answer them in JupyterLab)"},
            raw=True)
