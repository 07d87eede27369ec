"""The grader of the attnkit exercises (`grader` on the command line; see grader.cli)."""


def check(exercise_id: str, notebook=None, *, seed: int = 0, lang: str | None = None):
    """In a notebook: `from grader import check; check("8-2")` grades the exercise as it stands
    in the saved notebook (see grader.notebook.live). Imported on use: `grader list` stays fast."""
    from grader.notebook.live import check as check_notebook

    return check_notebook(exercise_id, notebook, seed=seed, lang=lang)
