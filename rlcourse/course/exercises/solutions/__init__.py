"""One solution per exercise, named after it: `show_solution(name)` prints one, and
tests/test_exercise_solutions.py puts each into its lesson's stub and expects "Correct".

These files are read as text, never imported by rlcourse.
"""
