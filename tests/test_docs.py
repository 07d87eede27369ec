"""The docs cannot rot: README.md and every page under docs/ are read as a reader would use them.

- Every command shown that runs `grader` (in a shell block, or in backquotes in the text) names
  subcommands that exist and options that its `--help` lists, with choice values it accepts and
  exercises it knows; the cheap ones (`grader list`, `grader show`) are run, and where a page
  shows their output (a `console` block) the output must be the one shown.
- `python -m MODULE` names a module; `python benchmarks/X.py` and `python examples/X.py` name a
  script that defines the options (and the subcommand) shown; `pytest FILE -k WORD` a file that
  has such a test.
- Every relative link resolves to a file, and every anchor to a heading of it; every path of the
  repository named in backquotes exists; every page is reachable from the README.
- The README fits in 150 lines and shows the test command CI runs; the result format shown is
  the one `grader check --format json` prints; the exercises page names every exercise.

Click is invoked in this process (click.testing.CliRunner): one `--help` per subcommand.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import click
from click.testing import CliRunner

from grader.cli import main as grader_main
from grader.i18n import speaking
from grader.records import EXERCISES, UnknownExercise, get_exercise
from grader.vocabulary.status import Status

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
SHELL_LANGUAGES = {"bash", "sh", "shell", "console"}
# The top folders of the repository: a path in backquotes that starts with one must exist.
REPOSITORY_FOLDERS = ("attnkit", "benchmarks", "docs", "examples", "exercises", "grader")
REPOSITORY_FOLDERS += ("solutions", "tests", ".ci")
# Subcommands cheap enough to run for real (no TensorFlow, no grading).
CHEAP = {("list",), ("show",)}


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@dataclass
class Block:
    page: Path
    line: int
    language: str
    lines: list[str]


@dataclass
class Page:
    path: Path
    blocks: list[Block]
    prose: str  # the text without its fenced blocks


FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w-]*)")


@functools.cache
def parsed(path: Path) -> Page:
    blocks, prose, block, indent = [], [], None, 0
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        fence = FENCE.match(line)
        if block is None and fence:
            indent = len(fence.group(1))
            block = Block(path, number, fence.group(3).lower(), [])
            prose.append("")
        elif block is not None and fence and line.strip().startswith(fence.group(2)[:3]):
            blocks.append(block)
            block = None
            prose.append("")
        elif block is not None:
            block.lines.append(line[indent:] if line[:indent].isspace() else line.lstrip())
        else:
            prose.append(line)
    assert block is None, f"{relative(path)}:{block.line}: a fenced block is never closed"
    return Page(path, blocks, "\n".join(prose))


def inline_code(page: Page) -> list[str]:
    """The spans in backquotes of the text, a span broken over lines joined again."""
    spans = []
    for paragraph in re.split(r"\n\s*\n", page.prose):
        joined = re.sub(r"\s*\n\s*", " ", paragraph)
        spans += [m.group(2).strip() for m in re.finditer(r"(`+)(.+?)\1", joined)]
    return spans


# --- commands ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    where: str
    words: tuple[str, ...]
    output: tuple[str, ...] | None = None  # the output a console block shows after it
    synopsis: bool = False  # a usage line with placeholders ("[--out DIR]"), never run


def segments(words: list[str]) -> list[list[str]]:
    """`words` cut at `&&`, `||`, `|` and `;`, redirections dropped."""
    cut, current = [], []
    for word in words:
        end = word.endswith(";") and word != ";"
        word = word.rstrip(";") if end else word
        if word in ("&&", "||", "|", ";"):
            cut.append(current)
            current = []
            continue
        if not word.startswith((">", "2>")):
            current.append(word)
        if end:
            cut.append(current)
            current = []
    return [segment for segment in cut + [current] if segment]


def program(segment: list[str]) -> list[str] | None:
    """The segment from its program on (`grader`, `python`, `pytest`, `bash`), past what may
    stand in front of one (variables, `env`, `time -f FORMAT`, a loop's `do`); None for another
    program."""
    words = list(segment)
    while words:
        if words[0] in ("grader", "python", "python3", "pytest", "bash"):
            return words
        if words[0] in ("time", "/usr/bin/time") and words[1:2] == ["-f"]:
            del words[:3]
        elif words[0] in ("env", "time", "/usr/bin/time", "do") or re.match(r"\w+=", words[0]):
            del words[0]
        else:
            return None
    return None


def split(text: str, comments: bool) -> list[str]:
    try:
        return shlex.split(text, comments=comments)
    except ValueError:  # an unbalanced quote in prose: words are enough
        return text.split()


@functools.cache
def shown_commands() -> list[Command]:
    commands = []
    for path in PAGES:
        page = parsed(path)
        for block in page.blocks:
            if block.language not in SHELL_LANGUAGES:
                continue
            console = block.language == "console"
            text = "\n".join(block.lines).replace("\\\n", " ")
            lines = text.split("\n")
            for index, line in enumerate(lines):
                if console and not line.startswith("$ "):
                    continue
                output = None
                if console:
                    following = []
                    for after in lines[index + 1 :]:
                        if after.startswith("$ "):
                            break
                        following.append(after)
                    output = tuple(following)
                    line = line[2:]
                for segment in segments(split(line, comments=True)):
                    words = program(segment)
                    if words:
                        where = f"{relative(path)}:{block.line}"
                        commands.append(Command(where, tuple(words), output))
                        # The output shown is the pipe's (`| head -3`): its first lines are
                        # the first program's.
                        output = None
        for span in inline_code(page):
            synopsis = bool(re.search(r"\[-|\.\.\.|\b[A-Z]{2,}\b", span))
            cleaned = re.sub(r"[\[\]]|\.\.\.", " ", span)
            for segment in segments(split(cleaned, comments=False)):
                words = program(segment)
                if words and len(words) > 1:
                    commands.append(Command(relative(path), tuple(words), synopsis=synopsis))
    return commands


def placeholder(word: str) -> bool:
    """A word that stands for one the reader chooses (`ID`, `DIR`, `NAME`, `<id>`)."""
    return bool(re.fullmatch(r"[A-Z][A-Z_0-9]*", word)) or "<" in word


@dataclass
class Invocation:
    path: tuple[str, ...]  # the subcommands, ("release", "gradescope")
    options: list[tuple[click.Command, str, str | None]]  # (command, option, value)
    arguments: list[str]


def invocation(words: tuple[str, ...]) -> Invocation:
    """What `grader WORDS` calls, read as Click reads it; a subcommand that does not exist fails
    the test that asks."""
    command, path, options, arguments = grader_main, (), [], []
    own: list[str] = []  # a group's own arguments (`grader review OUT add-ta NAME`)
    rest = list(words)
    while rest:
        word = rest.pop(0)
        takes = sum(isinstance(p, click.Argument) for p in command.params)
        if isinstance(command, click.Group) and word not in command.commands and len(own) < takes:
            own.append(word)
        elif word.startswith("-") and word != "-":
            name, _, value = word.partition("=")
            option = next((p for p in command.params if name in p.opts + p.secondary_opts), None)
            takes_value = option is not None and not option.is_flag and not option.count
            if takes_value and not value and rest:
                value = rest.pop(0)
            options.append((command, name, value or None))
        elif isinstance(command, click.Group) and not arguments:
            assert word in command.commands, f"`grader {' '.join(words)}`: no command {word!r}"
            command = command.commands[word]
            path, own = path + (word,), []
        else:
            arguments.append(word)
    return Invocation(path, options, arguments)


@functools.cache
def help_text(path: tuple[str, ...]) -> str:
    with speaking("en"):
        result = CliRunner().invoke(grader_main, [*path, "--help"], env={"GRADER_LANG": "en"})
    assert result.exit_code == 0, result.output
    return result.output


def grader_commands() -> list[Command]:
    commands = []
    for command in shown_commands():
        words = command.words
        if words[:3] in (("python", "-m", "grader"), ("python3", "-m", "grader")):
            words = ("grader",) + words[3:]
        if words[0] == "grader":
            commands.append(Command(command.where, words[1:], command.output, command.synopsis))
    return commands


def test_the_docs_show_grader_commands_and_this_test_reads_them():
    """The control: the reader of this file finds the commands it is meant to check."""
    shown = {command.words[:2] for command in grader_commands()}
    for expected in [("check", "8-2"), ("batch", "examples/submissions"), ("show", "8-2")]:
        assert expected in shown, sorted(shown)
    assert ("release", "gradescope") in shown and ("export", "canvas") in shown


def test_each_grader_command_shown_exists_with_the_options_shown():
    problems = []
    for command in grader_commands():
        try:
            called = invocation(command.words)
        except AssertionError as error:
            problems.append(f"{command.where}: {error}")
            continue
        for owner, option, value in called.options:
            owner_path = called.path if owner is not grader_main else ()
            if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", help_text(owner_path)):
                shown = " ".join(("grader", *command.words))
                problems.append(f"{command.where}: `{shown}`: {option} is not in its --help")
                continue
            parameter = next((p for p in owner.params if option in p.opts + p.secondary_opts), None)
            if (
                parameter is not None
                and isinstance(parameter.type, click.Choice)
                and value
                and not placeholder(value)
            ):
                wrong = [v for v in value.split("|") if v not in parameter.type.choices]
                if wrong:
                    problems.append(f"{command.where}: {option} {value}: not a choice: {wrong}")
        problems += [f"{command.where}: {problem}" for problem in unknown_exercises(called)]
    assert problems == []


def unknown_exercises(called: Invocation) -> list[str]:
    """The exercises a command names that the grader does not know."""
    named = [value for _, option, value in called.options if option in ("-e", "--exercise")]
    if called.path in (("show",), ("check",), ("stubs",), ("fixtures",)):
        named += called.arguments
    if called.path == ("watch",):
        named += called.arguments[:1]
    problems = []
    for name in named:
        if name and not placeholder(name):
            try:
                get_exercise(name)
            except UnknownExercise:
                problems.append(f"grader {' '.join(called.path)}: no exercise {name!r}")
    return problems


def run_grader(words: tuple[str, ...]):
    with speaking("en"):
        return CliRunner().invoke(
            grader_main, list(words), env={"GRADER_LANG": "en", "COLUMNS": "100"}
        )


def test_the_cheap_commands_shown_run_and_print_what_the_docs_show():
    ran = 0
    for command in grader_commands():
        called = invocation(command.words)
        if called.path not in CHEAP or command.synopsis:
            continue
        if any(placeholder(word) for word in command.words):
            continue
        result = run_grader(command.words)
        assert result.exit_code == 0, f"{command.where}: {command.words}\n{result.output}"
        ran += 1
        if command.output:
            shown = [line.rstrip() for line in command.output]
            got = [line.rstrip() for line in result.output.split("\n")][: len(shown)]
            assert got == shown, f"{command.where}: `grader {' '.join(command.words)}`"
    assert ran >= 3


def script_strings(path: Path) -> set[str]:
    """Every string constant of a Python script: the options its argparse defines are there."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)} - {None}


def test_each_other_command_shown_names_what_exists():
    problems = []
    commands = [c for c in shown_commands() if c.words[0] != "grader"]
    for command in commands:
        words = list(command.words)
        if words[0] in ("python", "python3") and words[1:2] == ["-m"]:
            module = words[2]
            if module != "grader" and importlib.util.find_spec(module) is None:
                problems.append(f"{command.where}: no module {module}")
            continue
        if words[0] in ("python", "python3", "bash") and len(words) > 1:
            problems += script_problems(command.where, words[1], words[2:])
        elif words[0] == "pytest":
            problems += pytest_problems(command.where, words[1:])
    assert problems == []
    assert any(c.words[:2] == ("python", "benchmarks/attention_bench.py") for c in commands)


def script_problems(where: str, script: str, arguments: list[str]) -> list[str]:
    if script.startswith("-") or not script.endswith((".py", ".sh")):
        return []
    stem = Path(script).stem
    paths = sorted((ROOT / script).parent.glob("*.py")) if placeholder(stem) else [ROOT / script]
    if not paths or not all(path.is_file() for path in paths):
        return [f"{where}: no script {script}"]
    if script.endswith(".sh"):
        return []
    problems = []
    for path in paths:
        strings = script_strings(path)
        options = [word.partition("=")[0] for word in arguments if word.startswith("--")]
        # A bare lowercase word right after the script is a subcommand (`speed`, `memory`).
        if arguments and re.fullmatch(r"[a-z]+", arguments[0]):
            options.append(arguments[0])
        problems += [
            f"{where}: {relative(path)} defines no {o}" for o in options if o not in strings
        ]
    return problems


def pytest_problems(where: str, arguments: list[str]) -> list[str]:
    problems, files = [], []
    for index, word in enumerate(arguments):
        if word.startswith("tests/"):
            path = ROOT / word.split("::")[0]
            if path.exists():
                files.append(path)
            else:
                problems.append(f"{where}: no {word}")
        if word == "-k" and index + 1 < len(arguments) and files:
            wanted = arguments[index + 1]
            if not any(wanted in path.read_text(encoding="utf-8") for path in files):
                problems.append(f"{where}: no test matches -k {wanted}")
    return problems


# --- links, anchors, paths ---------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text.replace("`", ""))
    return text.replace(" ", "-")


@functools.cache
def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in parsed(path).prose.split("\n"):
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")


def links(path: Path) -> list[str]:
    prose = re.sub(r"(`+).+?\1", "", parsed(path).prose)
    return [m.group(1) or m.group(2) for m in LINK.finditer(prose)]


def resolve(page: Path, target: str) -> tuple[Path, str]:
    file, _, anchor = target.partition("#")
    return ((page.parent / file).resolve() if file else page), anchor


def test_every_relative_link_resolves_to_a_file_and_its_anchor():
    problems = []
    for page in PAGES:
        for target in links(page):
            if re.match(r"[a-z]+:", target):
                continue
            path, anchor = resolve(page, target)
            if not path.exists():
                problems.append(f"{relative(page)}: {target}: no such file")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                problems.append(f"{relative(page)}: {target}: no heading #{anchor}")
    assert problems == []


def test_every_path_of_the_repository_in_backquotes_exists():
    pattern = re.compile(rf"(?:{'|'.join(map(re.escape, REPOSITORY_FOLDERS))})/[\w./-]*")
    problems = []
    for page in PAGES:
        for span in inline_code(parsed(page)):
            if any(placeholder(part) for part in Path(span).with_suffix("").parts):
                continue
            if pattern.fullmatch(span) and not (ROOT / span).exists():
                problems.append(f"{relative(page)}: `{span}` does not exist")
    assert problems == []


def test_every_page_is_reachable_from_the_readme():
    reached, waiting = set(), [README]
    while waiting:
        page = waiting.pop()
        if page in reached or page.suffix != ".md" or not page.exists():
            continue
        reached.add(page)
        for target in links(page):
            if not re.match(r"[a-z]+:", target):
                waiting.append(resolve(page, target)[0])
    assert [relative(page) for page in PAGES if page not in reached] == []


# --- the README, and the result format ---------------------------------------------------------


def test_the_readme_is_short_and_shows_the_test_command_ci_runs():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 150
    ci = (ROOT / ".ci" / "run").read_text()
    ci_tests = [line.strip() for line in ci.splitlines() if line.strip().startswith("pytest")]
    assert ci_tests == ["pytest -n 2"]
    quick_start = [c.words for c in shown_commands() if c.where.startswith("README.md:")]
    assert ("pytest", "-n", "2") in quick_start
    assert 'pip install -e ".[dev]" && grader check 8-2 ' in README.read_text(encoding="utf-8")


def keys(value, into: set[str], prefix: str = "") -> set[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            into.add(prefix + key)
            keys(inner, into, prefix + key + ".")
    elif isinstance(value, list) and value:
        keys(value[0], into, prefix)
    return into


def test_the_result_format_shown_is_what_grader_check_prints(tmp_path):
    page = parsed(ROOT / "docs" / "result_format.md")
    shown = json.loads("\n".join(next(b for b in page.blocks if b.language == "json").lines))
    statuses = re.search(r"`status` of a part is one of (.*)\.", page.prose).group(1)
    assert set(re.findall(r"`(\w+)`", statuses)) == {str(status) for status in Status}

    shutil.copy(ROOT / "solutions" / "ex8_2.py", tmp_path / "ex8_2.py")
    result = run_grader(("check", "8-2", "--submission", str(tmp_path), "--format", "json"))
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert (printed["score"], printed["max_score"]) == (10.0, 10.0)  # the README's "10/10"
    assert keys(printed, set()) == keys(shown, set())


def test_the_exercises_page_names_every_exercise_and_no_other():
    rows = parsed(ROOT / "docs" / "exercises.md").prose.split("\n")
    first_cells = [row.split("|")[1] for row in rows if row.startswith("|")]
    named = [name.strip() for cell in first_cells for name in cell.split(",")]
    named = [name for name in named if name not in ("id", "") and not set(name) <= {"-"}]
    assert sorted(get_exercise(name).id for name in named) == sorted(EXERCISES)
