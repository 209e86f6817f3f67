"""`python -m rlcourse`: the course's command line (rlcourse/course/cli.py)."""

import sys

from rlcourse.course.cli import main

if __name__ == "__main__":
    sys.exit(main())
