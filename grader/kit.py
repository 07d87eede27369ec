"""Where this grader's kit is: the folder that holds grader/, exercises/, solutions/ (absent in
a student kit), attnkit/ and fixtures. At the bottom of the layers (docs/architecture.md), so
that any module may know it without importing the package's front door (`grader.check`)."""

from pathlib import Path

KIT = Path(__file__).resolve().parent.parent


def kit_version() -> str:
    """The installed attnkit's version, or "unknown" where it is not installed (run from a
    copy of the folder)."""
    from importlib import metadata

    try:
        return metadata.version("attnkit")
    except metadata.PackageNotFoundError:
        return "unknown"
