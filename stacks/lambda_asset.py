"""The files a Lambda handler needs from its own package: the handler module's import closure.

Read from the source with :mod:`ast`, never by importing it: the stack must not import the
promoter's modules (nor the packages they need, which only the Lambda layer has).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

INIT = "__init__.py"


def handler_module(handler: str) -> str:
    """The module of a Lambda ``handler`` setting: ``pkg.mod.func`` -> ``pkg.mod``."""
    return handler.rpartition(".")[0]


def asset_files(code_dir: Path, module: str) -> tuple[str, ...]:
    """The files under ``code_dir`` that importing ``module`` can run, sorted, as POSIX paths
    relative to ``code_dir``.

    That is ``module`` and every module of its top-level package it imports, transitively,
    plus the ``__init__.py`` of each package on the way (importing ``a.b.c`` runs ``a`` and
    ``a.b`` first). Imports inside functions count: they run when the function does. Imports
    under ``if TYPE_CHECKING:`` do not, and modules outside the package (the standard library,
    the layer's packages) are not followed. Imports spelled as strings (``importlib``) are
    invisible here. No package data is included.

    Raises ``FileNotFoundError`` naming the module when a module of the package that is
    imported has no source under ``code_dir``.
    """
    package = module.partition(".")[0]
    found: dict[str, Path] = {}
    pending = [module]
    while pending:
        name = pending.pop()
        if name in found or name.partition(".")[0] != package:
            continue
        source = _source(code_dir, name)
        if source is None:
            raise FileNotFoundError(f"module {name} has no source under {code_dir}")
        found[name] = source
        imports = _RuntimeImports(name, is_package=source.name == INIT)
        imports.visit(ast.parse(source.read_text(encoding="utf-8"), filename=str(source)))
        pending.append(name.rpartition(".")[0])
        pending.extend(imports.modules)
        pending.extend(m for m in imports.maybe_modules if _source(code_dir, m) is not None)
    return tuple(sorted(p.relative_to(code_dir).as_posix() for p in found.values()))


def data_files(code_dir: Path, folders: Iterable[str]) -> tuple[str, ...]:
    """The files under each of ``folders`` (named relative to ``code_dir``), sorted, as POSIX
    paths relative to ``code_dir``: package data a module reads at run time (templates), which
    no import names. Dot files (an editor's swap file) and ``__pycache__`` are left out.

    Raises ``FileNotFoundError`` naming a folder that holds no such file.
    """
    found: list[str] = []
    for folder in folders:
        files = [
            path.relative_to(code_dir).as_posix()
            for path in code_dir.joinpath(folder).rglob("*")
            if path.is_file()
            and not any(
                part.startswith(".") or part == "__pycache__"
                for part in path.relative_to(code_dir).parts
            )
        ]
        if not files:
            raise FileNotFoundError(f"package data {folder} has no file under {code_dir}")
        found.extend(files)
    return tuple(sorted(found))


def glob_excludes_keeping(files: Iterable[str]) -> list[str]:
    """CDK ``IgnoreMode.GLOB`` exclude patterns that drop every path but ``files``.

    ``*`` and ``.*`` (``*`` skips dot files) exclude every path; a later ``!`` pattern that
    matches re-includes it. The directories on the way are re-included too: CDK does not walk
    an excluded directory at all.
    """
    kept: set[str] = set()
    for file in files:
        kept.add(file)
        kept.update(p.as_posix() for p in PurePosixPath(file).parents if p.name)
    return ["*", ".*", *(f"!{path}" for path in sorted(kept))]


def _source(code_dir: Path, module: str) -> Path | None:
    base = code_dir.joinpath(*module.split("."))
    for candidate in (base / INIT, base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


class _RuntimeImports(ast.NodeVisitor):
    """The modules one source file imports, except under ``if TYPE_CHECKING:``.

    ``modules`` are named as modules; ``maybe_modules`` are the ``a.b`` of ``from a import b``,
    a module only when ``b`` is a submodule rather than a name defined in ``a``.
    """

    def __init__(self, module: str, *, is_package: bool) -> None:
        # Relative imports count from the package a module is in (itself for an __init__).
        self.package = module if is_package else module.rpartition(".")[0]
        self.modules: list[str] = []
        self.maybe_modules: list[str] = []

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for statement in node.orelse:
                self.visit(statement)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.modules.extend(alias.name for alias in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            parts = self.package.split(".")
            base = ".".join([*parts[: len(parts) - node.level + 1], *filter(None, [base])])
        self.modules.append(base)
        self.maybe_modules.extend(f"{base}.{a.name}" for a in node.names if a.name != "*")


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
