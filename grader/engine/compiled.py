"""Records as data, for a student kit that must ship no answer in any form.

A record (grader.records) makes its cases, and recognises its named mistakes and checks its
properties, with NumPy code of grader.reference: the answers, written another way. A student kit
(`grader release student`) ships neither. It ships per exercise, next to the fixture of its cases
and expected outputs (grader.engine.references), a *compiled* record: the record's fields and,
for every public case, the output of each named mistake that applies to it (its `when` evaluated
at release) and the verdict of each property on the expected output and on those outputs.

`load_records` turns these files back into the Exercise, Part, Mistake and Property objects the
engine grades with, so a kit grades its public cases, names mistakes and words its messages as
the records do. One difference, by necessity: a property needs the reference to judge an output
it has not seen, so on an output of the right shape that is neither the expected one nor a named
mistake's (a wrong output, which the output check already fails), the kit's property check
fails saying it could not be judged here, where the records may say what is broken.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from grader.engine import compare
from grader.i18n import LANGUAGES, N_, language, speaking, tr
from grader.vocabulary.bundle import load_bundle, save_bundle
from grader.vocabulary.labels import LABELS, label_text
from grader.vocabulary.spec import Case, Exercise, Mistake, Part, Property, WrittenPart

# A compiled record lies next to its fixture: `8-2.npz` (cases, expected outputs) and
# `8-2.record.npz` (this module's).
SUFFIX = ".record.npz"
# 2: verdicts in every language, the words of the labels.
FORMAT = 2
EXPECTED = "expected"
NOT_JUDGED = N_(
    "not judged in the student kit: your output is neither the expected one nor a known "
    "mistake's, and judging this property on other outputs needs the reference solution; the "
    "output check above says what differs (your instructor's grading checks this property)"
)


class CompiledRecordError(RuntimeError):
    """A compiled record that cannot be read: the kit is broken, not the student's code."""


def case_key(case: Case) -> str:
    """A digest of everything that makes `case` what it is, equal for a case and its copy read
    back from a fixture (arrays by dtype, shape and bytes; params through JSON)."""
    digest = hashlib.sha256()
    head = [case.target, case.kind, case.label, case.dtype, case.params]
    digest.update(json.dumps(head, sort_keys=True, default=str).encode("utf-8"))
    named = [("input", case.inputs), ("weight", case.weights)]
    named.append(("upstream", {} if case.upstream is None else {"": case.upstream}))
    for kind, arrays in named:
        for name, value in arrays.items():
            array = np.ascontiguousarray(value)
            digest.update(f"{kind}/{name}/{array.dtype.str}/{array.shape}".encode())
            digest.update(array.tobytes())
    return digest.hexdigest()


def write_compiled(record: Exercise, cases: dict, expected: dict, path: str | Path) -> None:
    """Save `record` as data: for each public case (`cases`, `expected` by part name, as a
    reference gives them), the named mistakes' outputs and the properties' verdicts."""
    meta = {
        "format": FORMAT,
        "id": record.id,
        "title": record.title,
        "file": record.file,
        "section": record.section,
        "summary": record.summary,
        "timeout": record.timeout,
        "extra": dict(record.extra),
        # The words of the case labels, registered again where the kit loads the record (it has
        # no record module to register them), so that labels are shown translated there too.
        "label_texts": list(LABELS.texts()),
        "written": [
            {"name": w.name, "points": w.points, "prompt": w.prompt} for w in record.written
        ],
        "parts": [],
    }
    arrays: dict[str, np.ndarray] = {}
    for part_index, part in enumerate(record.parts):
        table: dict[str, dict] = {}
        for case_index, (case, want) in enumerate(
            zip(cases[part.name], expected[part.name], strict=True)
        ):
            if case.hidden or case.raises:
                # A contract case expects an exception: no output to compare, no mistake to name.
                continue
            prefix = f"p{part_index}/c{case_index}/"
            outputs: dict[str, np.ndarray] = {}
            if want.output is not None:
                outputs[prefix + EXPECTED] = np.asarray(want.output)
            mistakes = {}
            for index, mistake in enumerate(part.mistakes):
                output = mistake.output(case)
                if output is not None:
                    mistakes[str(index)] = prefix + f"m{index}"
                    outputs[prefix + f"m{index}"] = np.asarray(output, dtype=np.float64)
            verdicts = {}
            for index, prop in enumerate(carried(part)):
                if prop.targets and case.target not in prop.targets:
                    continue
                verdicts[str(index)] = [
                    [key, verdict]
                    for key, output in outputs.items()
                    if (verdict := _verdict(prop, case, output)) is not False
                ]
            arrays.update(outputs)
            table[case_key(case)] = {"mistakes": mistakes, "properties": verdicts}
        meta["parts"].append(
            {
                "name": part.name,
                "points": part.points,
                "targets": list(part.targets),
                "description": part.description,
                "mistakes": [
                    {"name": m.name, "explanation": m.explanation, "targets": list(m.targets)}
                    for m in part.mistakes
                ],
                "properties": [{"name": p.name, "targets": list(p.targets)} for p in carried(part)],
                "cases": table,
            }
        )
    save_bundle(path, meta, arrays)


def carried(part) -> list[Property]:
    """The properties a kit carries as verdicts on outputs. A property of the gradients
    (grader.engine.properties.gradients_sane) is judged on what the child returns, with the
    record's own code for where the masked keys are: a kit has no record code, so it leaves
    them out (the gradients are still compared with the reference's)."""
    return [prop for prop in part.properties if not prop.gradients]


def _verdict(prop: Property, case: Case, output: np.ndarray):
    """The property's word on `output` in every language ({"en": ..., "zh": ...}; None: it
    holds), or False where its check fails to run on it (then the kit will not claim to know)."""
    words = {}
    for code in LANGUAGES:
        with speaking(code):
            try:
                verdict = prop.check(case, output)
            except Exception:  # noqa: BLE001 - a record's check on a mistake's output of another shape
                return False
        if verdict is None:
            return None
        words[code] = str(verdict)
    return words


def load_records(folder: str | Path) -> list[Exercise]:
    """Every compiled record in `folder` (a kit's grader/fixtures)."""
    return [load_record(path) for path in sorted(Path(folder).glob("*" + SUFFIX))]


def load_record(path: str | Path) -> Exercise:
    meta, arrays = load_bundle(path)
    if meta.get("format") != FORMAT:
        raise CompiledRecordError(
            f"{Path(path).name} is a compiled record of format {meta.get('format')}, not "
            f"{FORMAT}: make the student kit again with this grader (grader release student)"
        )
    for text in meta["label_texts"]:
        label_text(text)
    parts = []
    for entry in meta["parts"]:
        table = entry["cases"]
        mistakes = tuple(
            Mistake(
                m["name"],
                m["explanation"],
                _stored_mistake(table, arrays, str(index)),
                tuple(m["targets"]),
            )
            for index, m in enumerate(entry["mistakes"])
        )
        properties = tuple(
            Property(p["name"], _stored_property(table, arrays, str(index)), tuple(p["targets"]))
            for index, p in enumerate(entry["properties"])
        )
        parts.append(
            Part(
                entry["name"],
                entry["points"],
                _fixture_cases_only(meta["id"]),
                tuple(entry["targets"]),
                mistakes,
                entry["description"],
                properties,
            )
        )
    return Exercise(
        id=meta["id"],
        title=meta["title"],
        file=meta["file"],
        section=meta["section"],
        summary=meta["summary"],
        parts=tuple(parts),
        timeout=meta["timeout"],
        written=tuple(WrittenPart(w["name"], w["points"], w["prompt"]) for w in meta["written"]),
        extra=meta["extra"],
    )


def _stored_mistake(table: dict, arrays: dict, index: str):
    def compute(case):
        key = table.get(case_key(case), {}).get("mistakes", {}).get(index)
        return None if key is None else arrays[key]

    return compute


def _stored_property(table: dict, arrays: dict, index: str):
    def check(case, output):
        known = table.get(case_key(case), {}).get("properties", {}).get(index)
        if known is None:
            return tr(NOT_JUDGED)
        received = np.asarray(output, dtype=np.float64)
        shapes = {arrays[key].shape for key, _ in known}
        if shapes and received.shape not in shapes:
            return None  # as the records do: the output check reports a wrong shape
        for key, verdict in known:
            if compare.matches(np.asarray(arrays[key], np.float64), received, case):
                return verdict if verdict is None else verdict.get(language(), verdict["en"])
        return tr(NOT_JUDGED)

    return check


def _fixture_cases_only(exercise_id: str):
    def make_cases(rng, hidden=False):
        raise CompiledRecordError(
            f"a student kit grades exercise {exercise_id} on the cases of its fixture only "
            "(the public seed); other seeds and hidden checks need the instructor's kit"
        )

    return make_cases
