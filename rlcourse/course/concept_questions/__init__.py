"""The concept checks' questions, by lesson ("01" .. "15"): 3-5 questions where each lesson's idea is,
every choice with its explanation. Shown by rlcourse.course.concept_checks."""

from rlcourse.course.concept_questions import lessons_01_04, lessons_05_08, lessons_09_12, lessons_13_15

QUESTIONS = {**lessons_01_04.QUESTIONS, **lessons_05_08.QUESTIONS, **lessons_09_12.QUESTIONS,
             **lessons_13_15.QUESTIONS}
