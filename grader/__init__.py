"""The grader of the attnkit exercises (`grader` on the command line; see grader.cli)."""

from pathlib import Path

# The kit this grader belongs to: its exercises/, solutions/ (absent in a student kit), ...
KIT = Path(__file__).resolve().parent.parent
