"""How long each exercise record is against its solution, with and without its teaching.

    python benchmarks/record_size.py

A record (grader/records/<file>) holds what the solution cannot: how cases are drawn, and the
teaching: each known mistake and property with its explanation, the part descriptions, the
summary and the words of its labels. The "rest" column is the record without that teaching
(and without blank and comment lines); the ratio compares it with the solution file (code plus
docstrings). Issue 13 asked for records no longer than their solutions; this prints how far each
one is from it.
"""

from __future__ import annotations

import ast
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
# Keyword arguments of a Part whose values are teaching, whatever they hold.
TEACHING_ARGUMENTS = {"mistakes", "properties", "relations"}
# A string this long is a text a student reads, not a name or a shape.
TEXT_LENGTH = 25


def _is_teaching_call(node: ast.Call) -> bool:
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
    owner = getattr(function.value, "id", "") if isinstance(function, ast.Attribute) else ""
    return owner in ("Mistake", "relations") or name in ("Property", "Gate", "N_", "label_texts")


def _only_teaching(value: ast.AST) -> bool:
    calls = [node for node in ast.walk(value) if isinstance(node, ast.Call)]
    inside = {id(node) for call in calls if _is_teaching_call(call) for node in ast.walk(call)}
    return bool(inside) and all(id(call) in inside for call in calls)


def teaching_lines(source: str) -> set[int]:
    """Line numbers of a record's teaching: mistakes, properties, relations and texts."""
    tree, lines = ast.parse(source), set()

    def cover(node):
        lines.update(range(node.lineno, node.end_lineno + 1))

    # A gate's check (a lab that trains a model) is teaching, as a Property's is.
    gate_checks = {
        argument.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Gate"
        for argument in node.args[1:]
        if isinstance(argument, ast.Name)
    }
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in gate_checks:
            cover(node)
        named = isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
        if named and node.targets[0].id != "RECORD" and _only_teaching(node.value):
            cover(node)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_teaching_call(node):
            cover(node)
        elif isinstance(node, ast.keyword) and node.arg in TEACHING_ARGUMENTS:
            cover(node.value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if len(node.value) > TEXT_LENGTH:
                cover(node)
    return lines


def measure(record: Path) -> dict:
    source = record.read_text(encoding="utf-8")
    lines = source.splitlines()
    quiet = {n for n, line in enumerate(lines, 1) if not line.strip() or line.strip()[0] == "#"}
    teaching = teaching_lines(source)
    solution = len((KIT / "solutions" / record.name).read_text(encoding="utf-8").splitlines())
    rest = len(lines) - len(teaching | quiet)
    return dict(record=record.stem, lines=len(lines), teaching=len(teaching), rest=rest,
                solution=solution)  # fmt: skip


def main() -> None:
    rows = [measure(path) for path in sorted((KIT / "grader" / "records").glob("*.py"))
            if path.name != "__init__.py"]  # fmt: skip
    print(
        f"{'record':24}{'lines':>6}{'teaching':>9}{'rest':>6}{'solution':>9}{'rest/solution':>14}"
    )
    for row in rows:
        ratio = row["rest"] / row["solution"]
        print(f"{row['record']:24}{row['lines']:6}{row['teaching']:9}{row['rest']:6}"
              f"{row['solution']:9}{ratio:14.2f}")  # fmt: skip
    over = [row["record"] for row in rows if row["rest"] > row["solution"]]
    print(f"records whose rest is longer than their solution: {', '.join(over) or 'none'}")


if __name__ == "__main__":
    main()
