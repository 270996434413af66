"""One idea per module: no file, class or function of the package grows past what one idea
needs, and no stack constructor past composing (no two modules import each other:
``test_import_circles.py``).

The limits are the house's (issue "One idea per module"): a file over 450 lines, a class over
300 or a function over 80 holds several ideas; a stack or construct constructor over 90 lines
builds instead of composing. The largest three of each kind are printed on every run
(``pytest -s``, or the captured output of a failure), so the numbers stay visible before they
reach a limit.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "lambdas" / "wheelgate"
STACKS = REPO / "stacks"
MAX_FILE_LINES = 450
MAX_CLASS_LINES = 300
MAX_FUNCTION_LINES = 80
MAX_CONSTRUCTOR_LINES = 90


def sources(root: Path) -> Iterator[Path]:
    yield from sorted(root.rglob("*.py"))


def lines(node: ast.AST) -> int:
    return int(getattr(node, "end_lineno", 0)) - int(getattr(node, "lineno", 0)) + 1


def measured(root: Path) -> dict[str, list[tuple[int, str]]]:
    """Lines of each file, class and function under ``root``, largest first."""
    found: dict[str, list[tuple[int, str]]] = {"file": [], "class": [], "function": []}
    for path in sources(root):
        name = path.relative_to(REPO).as_posix()
        text = path.read_text()
        found["file"].append((len(text.splitlines()), name))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                found["class"].append((lines(node), f"{name}:{node.name}"))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found["function"].append((lines(node), f"{name}:{node.name}"))
    return {kind: sorted(items, reverse=True) for kind, items in found.items()}


def test_no_file_class_or_function_of_the_package_holds_several_ideas() -> None:
    sizes = measured(PACKAGE)
    for kind, items in sizes.items():
        print(f"largest {kind} entries: " + ", ".join(f"{name} ({n})" for n, name in items[:3]))
    limits = {"file": MAX_FILE_LINES, "class": MAX_CLASS_LINES, "function": MAX_FUNCTION_LINES}
    over = {
        kind: [(name, n) for n, name in items if n > limits[kind]] for kind, items in sizes.items()
    }
    assert over == {"file": [], "class": [], "function": []}


def test_no_stack_constructor_builds_instead_of_composing() -> None:
    constructors = [
        (lines(node), f"{path.relative_to(REPO).as_posix()}:{cls.name}")
        for path in sources(STACKS)
        for cls in ast.walk(ast.parse(path.read_text()))
        if isinstance(cls, ast.ClassDef)
        for node in cls.body
        if isinstance(node, ast.FunctionDef) and node.name == "__init__"
    ]
    constructors.sort(reverse=True)
    print("largest constructors: " + ", ".join(f"{n} ({size})" for size, n in constructors[:3]))
    assert [(name, n) for n, name in constructors if n > MAX_CONSTRUCTOR_LINES] == []


@pytest.mark.parametrize("kind", ["file", "class", "function"])
def test_the_measure_sees_what_it_limits(kind: str) -> None:
    # Given the package, When it is measured, Then every kind has entries to hold to a limit
    assert measured(PACKAGE)[kind]
