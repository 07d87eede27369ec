"""A unit: what one child runs, the parts of one or more files of one submission, in order
(grader.sandbox.processes.describe_units makes them, grader.sandbox.scheduler runs them). Each
part names its file (`module`, else the unit's); the parts of one file follow one another, a
segment, and the file is imported before its first part."""

from __future__ import annotations


def segments(parts: list[dict], default_module: str | None = None) -> list[tuple[int, int]]:
    """(first, end) of each run of parts that import the same file, in order."""
    found, first = [], 0
    for index in range(1, len(parts) + 1):
        if index == len(parts) or _module(parts[index], default_module) != _module(
            parts[first], default_module
        ):
            found.append((first, index))
            first = index
    return found


def _module(part: dict, default: str | None) -> str | None:
    return part.get("module", default)


def ready_marker(job: dict, first: int) -> str:
    """The file a child makes once the file of its part `first` is imported (or failed to)."""
    return job["ready"] if first == 0 else f"{job['ready']}.{first}"
