"""The grader's imports point one way: down the layers written in docs/architecture.md.

The import graph is read from the source with `ast` (never by importing it), imports inside
functions and under `if TYPE_CHECKING:` included: an import put off until a function runs is
still a dependency, only a later one. A module may import its own layer and the layers below
it; layers on one row are siblings and import neither each other nor anything above. Apart
from the layering, no two packages may import each other, even through others (a cycle).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parent.parent

# Bottom row first; each row holds layers that are siblings. A layer is a list of modules or
# packages (a package stands for everything under it). Keep docs/architecture.md in step.
LAYERS: list[dict[str, tuple[str, ...]]] = [
    {"base": ("grader.i18n", "grader.quiet", "grader.kit")},
    {"vocabulary": ("grader.vocabulary",)},
    {"reference": ("grader.reference",), "sandbox": ("grader.sandbox",)},
    {"engine": ("grader.engine",)},
    {"records": ("grader.records",)},
    {"grading": ("grader.grading", "grader.saved")},
    {"views": ("grader.report", "grader.pictures", "grader.notebook")},
    {"instructor.files": ("grader.instructor.files",)},
    {"instructor.course": ("grader.instructor.course",)},
    {"instructor.review": ("grader.instructor.review",)},
    {"instructor.workbench": ("grader.instructor.workbench",)},
    {"instructor.outputs": ("grader.instructor.outputs",)},
    {
        "instructor.runs": (
            "grader.instructor",  # its __init__ only: the subpackages have layers of their own
            "grader.instructor.batch",
            "grader.instructor.cluster",
            "grader.instructor.gather",
            "grader.instructor.gradescope",
            "grader.instructor.console",
            "grader.instructor.reviewed",
        ),
        "student": ("grader.student",),
    },
    {
        "commands": (
            "grader",  # its __init__ only: `from grader import check`, the notebooks' door
            "grader.__main__",
            "grader.cli",
            "grader.watch",
            "grader.locale",
        )
    },
]
# Names that stand for their own module only, not for a package's contents.
ONLY_ITSELF = {"grader", "grader.instructor"}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (the nearest one, for a name taken from a module)
    path: Path
    line: int

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root).as_posix()}:{self.line}"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path, package: str = "grader") -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted((root / package).rglob("*.py"))}


def _nearest(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(root: Path, package: str = "grader") -> list[Import]:
    """Every import of a module of `package` by a module of `package`, at any depth of the
    code; `importlib.import_module("...")` with a literal name counts as one."""
    known = modules(root, package)
    found = []
    for source, path in known.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = source.split(".")
                    base = base[: len(base) - node.level + (1 if is_package else 0)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                # `from grader import sandbox` imports a module; `from grader.x import name`
                # takes a name from grader.x.
                targets = [
                    f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in known else stem
                    for alias in node.names
                ]
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                targets = [node.args[0].value]
            for target in targets:
                if target == package or target.startswith(package + "."):
                    nearest = _nearest(target, known)
                    if nearest and nearest != source:
                        found.append(Import(source, nearest, path, node.lineno))
    return found


def layer_of(module: str, layers=LAYERS) -> tuple[int, str] | None:
    """(row, layer name) of the most specific entry naming `module`, or None."""
    best = None
    for row, siblings in enumerate(layers):
        for name, entries in siblings.items():
            for entry in entries:
                covers = module == entry or (
                    entry not in ONLY_ITSELF and module.startswith(entry + ".")
                )
                if covers and (best is None or len(entry) > best[0]):
                    best = (len(entry), row, name)
    return best and best[1:]


def upward_imports(found: list[Import], layers=LAYERS) -> list[tuple[Import, str, str]]:
    """The imports that go against the layering: to a row above, or to a sibling."""
    wrong = []
    for edge in found:
        (row, name), (to_row, to_name) = (
            layer_of(edge.source, layers),
            layer_of(edge.target, layers),
        )
        if to_row > row or (to_row == row and to_name != name):
            wrong.append((edge, name, to_name))
    return wrong


def unit(module: str, known: dict[str, Path]) -> str:
    """The package a module belongs to, for cycles. The modules beside subpackages (grader's
    own, and instructor's batch, gradescope and files) are units of their own: they are
    layers apart from their neighbours."""
    if known[module].name == "__init__.py":
        return module
    parent = module.rpartition(".")[0]
    beside_subpackages = any(
        other.startswith(parent + ".") and "." in other[len(parent) + 1 :] for other in known
    )
    return module if beside_subpackages else parent


def package_cycles(found: list[Import], known: dict[str, Path]) -> list[list[Import]]:
    """Each set of packages that import each other (a strongly connected component of the
    package graph, Tarjan's algorithm), as the imports that join them."""
    graph: dict[str, dict[str, Import]] = {}
    for edge in found:
        a, b = unit(edge.source, known), unit(edge.target, known)
        if a != b:
            graph.setdefault(a, {}).setdefault(b, edge)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(set(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [
        sorted(
            (e for a in c for b, e in graph.get(a, {}).items() if b in c),
            key=lambda e: (e.source, e.line),
        )
        for c in components
    ]


def describe_upward(wrong, root: Path) -> str:
    return "\n".join(
        f"{edge.where(root)}: {edge.source} ({name}) imports {edge.target} ({to_name})"
        for edge, name, to_name in wrong
    )


def describe_cycles(cycles, root: Path) -> str:
    return "\n".join(
        "packages importing each other:\n"
        + "\n".join(f"  {e.where(root)}: {e.source} imports {e.target}" for e in cycle)
        for cycle in cycles
    )


@pytest.fixture(scope="module")
def graph():
    return modules(KIT), imports(KIT)


def test_every_module_of_the_grader_has_a_layer(graph):
    known, _ = graph
    missing = [name for name in known if layer_of(name) is None]
    assert not missing, (
        f"in no layer: {', '.join(missing)}; add each to LAYERS here and to docs/architecture.md"
    )


def test_no_import_goes_up_the_layers(graph):
    _, found = graph
    assert len(found) > 500  # the reader sees the grader's imports (a broken reader sees none)
    wrong = upward_imports(found)
    assert not wrong, "imports against docs/architecture.md:\n" + describe_upward(wrong, KIT)


def test_no_two_packages_import_each_other(graph):
    known, found = graph
    cycles = package_cycles(found, known)
    assert not cycles, describe_cycles(cycles, KIT)


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_an_upward_import_inside_a_function_is_named_with_its_line(tmp_path):
    _tree(
        tmp_path,
        {
            "grader/__init__.py": "",
            "grader/vocabulary/__init__.py": "",
            "grader/vocabulary/spec.py": "import os\n\n\ndef f():\n    from .. import engine\n",
            "grader/engine/__init__.py": "from grader.vocabulary.spec import f\n",
        },
    )
    found = imports(tmp_path)
    wrong = upward_imports(found)
    assert describe_upward(wrong, tmp_path) == (
        "grader/vocabulary/spec.py:5: grader.vocabulary.spec (vocabulary) imports "
        "grader.engine (engine)"
    )
    cycles = package_cycles(found, modules(tmp_path))
    assert [{(e.source, e.target) for e in cycle} for cycle in cycles] == [
        {
            ("grader.vocabulary.spec", "grader.engine"),
            ("grader.engine", "grader.vocabulary.spec"),
        }
    ]


def test_siblings_do_not_import_each_other_and_a_name_resolves_to_its_module(tmp_path):
    _tree(
        tmp_path,
        {
            "grader/__init__.py": "KIT = 1\n",
            "grader/sandbox/__init__.py": "from grader import KIT\n",
            "grader/sandbox/child.py": "import grader.reference.attention as attention\n",
            "grader/reference/__init__.py": "",
            "grader/reference/attention.py": "",
        },
    )
    wrong = upward_imports(imports(tmp_path))
    assert describe_upward(wrong, tmp_path).splitlines() == [
        "grader/sandbox/__init__.py:1: grader.sandbox (sandbox) imports grader (commands)",
        "grader/sandbox/child.py:1: grader.sandbox.child (sandbox) imports "
        "grader.reference.attention (reference)",
    ]
