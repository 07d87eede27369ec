"""`grader`: a thin Click layer, one module per reader, each of which only parses and
delegates: `student` (list, show, check, watch), `instructor` (batch, gather, merge, export,
release), `cluster` (slurm, kubernetes, actions-matrix), `review` (the TA workbench) and
`maintainer` (stubs, fixtures). The work is in grader.grading, grader.student and
grader.instructor.

Exit codes: 0 every part passed, 1 some part did not, 2 a usage error.
"""

from __future__ import annotations

import click

from grader.cli import cluster, instructor, maintainer, review, student
from grader.i18n import lang_option, localized_group_class


@click.group(cls=localized_group_class(), context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="attnkit")
@lang_option
def main():
    """Grade the attention chapter's exercises: outputs and gradients, with feedback."""
    from grader import quiet

    quiet.install()


for reader in (student, instructor, cluster, review, maintainer):
    for command in reader.COMMANDS:
        main.add_command(command)
