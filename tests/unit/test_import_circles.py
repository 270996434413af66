"""No import circle between modules, in the package (``lambdas/wheelgate``) or the CDK app
(``stacks/``), counting every import: a ``TYPE_CHECKING`` block and a function body included.

A type-only circle still ties two modules into one idea (neither reads alone, and either may
become a runtime circle with one moved import), so it counts as any other. The walk covers
every ``.py`` file under both folders, and the imports between them (``stacks/`` importing the
package's names); ``app.py`` and the tests are left out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: Each folder walked, with the folder its module names are relative to.
ROOTS = ((REPO / "lambdas" / "wheelgate", REPO / "lambdas"), (REPO / "stacks", REPO))


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path, known: set[str]) -> set[str]:
    """The ``known`` modules ``path`` imports, wherever the import is: ``from a.b import c``
    names ``a.b.c`` when that is a module, else ``a.b``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = module_name(path, root).split(".")
                parent = parent[: len(parent) - node.level + (path.name == "__init__.py")]
                base = ".".join([*parent, base] if base else parent)
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {name for name in found if name in known}


def import_graph(roots: Iterable[tuple[Path, Path]]) -> dict[str, set[str]]:
    """Each module under ``roots`` (folder, the folder names are relative to) -> the modules
    of those folders it imports."""
    paths = {
        module_name(path, base): (path, base)
        for folder, base in roots
        for path in sorted(folder.rglob("*.py"))
    }
    known = set(paths)
    return {
        name: imported_modules(path, base, known) - {name} for name, (path, base) in paths.items()
    }


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Every circle a depth-first walk of ``graph`` finds, each as the modules around it."""
    found: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph.get(name, ())):
            if state.get(target) == 1:
                found.append([*trail[trail.index(target) :], target])
            elif target not in state:
                visit(target, [*trail, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return found


def test_no_module_of_the_package_or_the_stacks_is_in_an_import_circle() -> None:
    graph = import_graph(ROOTS)
    assert circles(graph) == []


def test_the_walk_sees_both_folders_and_the_imports_between_them() -> None:
    # Given the package and the stacks, When their imports are walked
    graph = import_graph(ROOTS)
    # Then both are in it, with a relative import of the stacks and one of the package's names
    assert "stacks.wheelgate" in graph["stacks"]
    assert "wheelgate.core.layout" in graph["stacks.access_table"]
    assert "wheelgate.core.records" in graph["wheelgate.promotion.recorder"]


def test_a_circle_made_of_type_checking_imports_is_found(tmp_path: Path) -> None:
    # Given two modules that import each other, one of them only for type checking
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n"
    )
    (package / "b.py").write_text("from pkg import a\n")
    # When the folder is walked
    found = circles(import_graph([(package, tmp_path)]))
    # Then the circle is named
    assert found == [["pkg.a", "pkg.b", "pkg.a"]]
