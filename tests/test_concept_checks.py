"""The concept checks: every lesson has 3-5 well-formed questions in a cell before its final check, the
widget answers a click with right or wrong and why, and the static form (the book's) folds the answer."""

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from rlcourse.course import book, concept_checks
from rlcourse.course.book_outputs import run_record
from rlcourse.course.concept_checks import question_widget, static_html
from rlcourse.course.concept_question import NumberQuestion, Question
from rlcourse.course.concept_questions import QUESTIONS

LESSONS = sorted((Path(__file__).resolve().parents[1] / "lessons").glob("[0-9][0-9]_*.ipynb"))
ALL = [(lesson, i, q) for lesson, questions in QUESTIONS.items() for i, q in enumerate(questions)]


def test_every_lesson_shows_3_to_5_questions_before_its_final_check():
    assert sorted(QUESTIONS) == [path.name[:2] for path in LESSONS]
    for path in LESSONS:
        lesson = path.name[:2]
        assert 3 <= len(QUESTIONS[lesson]) <= 5, f"lesson {lesson}: 3-5 concept checks"
        cells = nbformat.read(path, as_version=4).cells
        assert f'concept_checks("{lesson}")' in cells[-2].source, f"{path.name}: the checks' cell"


@pytest.mark.parametrize(("lesson", "index", "question"), ALL,
                         ids=[f"{lesson}-{i}" for lesson, i, _ in ALL])
def test_each_question_has_one_right_answer_and_an_explanation_per_choice(lesson, index, question):
    assert question.prompt.rstrip().endswith("?")
    if isinstance(question, NumberQuestion):  # one right number; each usual slip explained, outside it
        numbers = [number for number, _ in question.wrong]
        whys = [question.explanation] + [why for _, why in question.wrong]
        assert len(numbers) >= 2 and len(set(numbers)) == len(numbers) and question.tolerance >= 0
        assert not any(question.matches(number, question.value) for number in numbers)
    else:
        texts = [text.strip() for text, _ in question.choices]
        whys = [why.strip() for _, why in question.choices]
        assert 3 <= len(texts) <= 5 and len(set(texts)) == len(texts) and all(texts)
        assert 0 <= question.answer < len(texts)
    assert all(len(why) > 20 for why in whys) and len(set(whys)) == len(whys)


def test_a_question_with_no_single_right_answer_is_refused():
    with pytest.raises(ValueError, match="answer=3 is not the index"):
        Question("Which?", 3, (("a", "because a"), ("b", "because b"), ("c", "because c")))
    with pytest.raises(ValueError, match="wrong answer 2.7 is within tolerance=0.1"):
        NumberQuestion("How much?", 2.71, 0.1, "because", ((2.7, "a slip"),))


@pytest.mark.parametrize("lesson", ["01", "02", "12"])
def test_the_widget_says_right_or_wrong_and_why_when_a_choice_is_clicked(lesson):
    for number, question in enumerate(QUESTIONS[lesson], 1):
        prompt, answer, feedback = question_widget(question, number).children
        assert f"<b>{number}.</b>" in prompt.value and feedback.value == ""
        if isinstance(question, NumberQuestion):
            box, button = answer.children
            for typed, why in [(str(n), w) for n, w in question.wrong] + [("12345", "once more"),
                                                                          ("two", "Type a number")]:
                box.value = typed
                button.click()
                assert "Not quite." in feedback.value and concept_checks.as_html(why) in feedback.value
            box.value = f"{question.value + question.tolerance / 2:.4f}"
            button.click()
            assert feedback.value.count("Right.") == 1
            assert concept_checks.as_html(question.explanation) in feedback.value
            continue
        assert answer.value is None
        for picked in [i for i in range(len(question.choices)) if i != question.answer] + [
                question.answer]:
            answer.value = picked
            right = picked == question.answer
            assert ("Right." in feedback.value) == right and ("Not quite." in feedback.value) != right
            assert concept_checks.as_html(question.choices[picked][1]) in feedback.value


def test_the_static_form_folds_each_answer_and_its_explanations():
    questions = QUESTIONS["03"]
    page = static_html(questions)
    parts = page.split("<details>")
    assert len(parts) == len(questions) + 1 and page.count("</details>") == len(questions)
    for k, question in enumerate(questions):
        shown, hidden = parts[k].split("</details>")[-1], parts[k + 1].split("</details>")[0]
        right, why = question.choices[question.answer]
        assert concept_checks.as_html(question.prompt) in shown
        assert concept_checks.as_html(right) in shown  # every choice shown, none marked
        assert "(right)" not in shown and concept_checks.as_html(why) not in shown
        assert f"{'ABCDE'[question.answer]} is right" in hidden and concept_checks.as_html(why) in hidden
    number = QUESTIONS["01"][0]
    shown, hidden = static_html([number]).split("<details>")
    assert "Answer with a number" in shown and f"{number.value:g}" not in shown
    assert f"{number.value:g} (within" in hidden and concept_checks.as_html(number.wrong[0][1]) in hidden


def test_the_lesson_cell_displays_the_widget_and_the_static_form_and_the_book_keeps_the_form(
        monkeypatch):
    shown = []
    monkeypatch.setattr(concept_checks, "display", lambda bundle, raw: shown.append(bundle))
    assert concept_checks.concept_checks("07") is None  # returns at once: nothing waits for a click
    (bundle,) = shown
    assert book.WIDGET in bundle and "<details>" in bundle["text/html"]
    assert bundle["text/plain"].startswith("Concept checks: 4 questions")
    with pytest.raises(KeyError, match="two digits"):
        concept_checks.concept_checks("7")

    notebook = new_notebook(metadata={"rlcourse": {"run": run_record()}}, cells=[
        new_markdown_cell("# Lesson"),
        new_code_cell('concept_checks("07")', outputs=[new_output("display_data", data=bundle)])])
    page = book.book_page(notebook).cells[-1]
    assert page.outputs[0].data == {"text/html": bundle["text/html"]}


def test_the_discounted_return_question_takes_the_lessons_rounding_and_refuses_near_misses():
    question = QUESTIONS["01"][0]
    assert question.matches(2.71, question.value) and question.matches(2.7, question.value)
    assert not any(question.matches(x, question.value) for x in (3.0, 2.439, 0.81, 2.69, 1.9, 271.0))
