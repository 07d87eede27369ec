"""`grader check` as the command line runs it, with what the sandbox refused each graded exercise
written to stderr (one `REFUSED {json}` line each), which `grader check` shows no student: for
the tests of what is flagged on that path (tests/grader/test_honest_imports.py).

Run as `python -m tests.support.check_refusals check ...` from the kit's folder: the checkout is
then first on sys.path, as when `python -m grader` runs from it (Gradescope's run_autograder, an
Actions step in the kit's repository)."""

from __future__ import annotations

import json
import sys

from grader import cli, grading


def main() -> None:
    graded = grading.grade  # imported by the command when it runs

    def grade(*args, **kwargs):
        result = graded(*args, **kwargs)
        told = {"exercise": result.exercise, "refused": result.refused}
        told["examples"] = result.refused_examples
        print("REFUSED " + json.dumps(told), file=sys.stderr, flush=True)
        return result

    grading.grade = grade
    cli.main(sys.argv[1:], prog_name="grader")


if __name__ == "__main__":
    main()
