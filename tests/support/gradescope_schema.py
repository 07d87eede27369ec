"""Gradescope's results.json as a JSON Schema, written from its documented format
("Autograder Specifications", gradescope-autograders.readthedocs.io/en/latest/specs/): every
key it lists, with the values it allows, and nothing else. A test's `status` may only be
"passed" or "failed"; visibility is one of four words; scores are numbers.

`read_results` is how every test reads a results.json the grader wrote: it validates first.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

VISIBILITY = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
FORMAT = {"enum": ["text", "html", "simple_format", "md", "ansi"]}

TEST = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "score": {"type": "number"},
        "max_score": {"type": "number"},
        "status": {"enum": ["passed", "failed"]},
        "name": {"type": "string"},
        "name_format": FORMAT,
        "number": {"type": "string"},
        "output": {"type": "string"},
        "output_format": FORMAT,
        "tags": {"type": "array", "items": {"type": "string"}},
        "visibility": VISIBILITY,
        "extra_data": {"type": "object"},
    },
}

RESULTS = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Gradescope autograder results.json",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "output_format": FORMAT,
        "test_output_format": FORMAT,
        "test_name_format": FORMAT,
        "visibility": VISIBILITY,
        "stdout_visibility": VISIBILITY,
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": TEST},
        "leaderboard": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "value"],
                "properties": {
                    "name": {"type": "string"},
                    "value": {"type": ["number", "string"]},
                    "order": {"enum": ["asc", "desc"]},
                },
            },
        },
    },
    # "score" is optional only where every test carries one.
    "anyOf": [
        {"required": ["score"]},
        {
            "required": ["tests"],
            "properties": {"tests": {"items": {"required": ["score"]}}},
        },
    ],
}


def validate(results: dict) -> dict:
    jsonschema.validate(results, RESULTS, cls=jsonschema.Draft202012Validator)
    return results


def read_results(path: Path) -> dict:
    """A results.json the grader wrote, validated against Gradescope's schema."""
    return validate(json.loads(Path(path).read_text(encoding="utf-8")))
