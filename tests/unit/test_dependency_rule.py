"""Imports point one way between the package's layers, and the stack sees only names and
numbers: the layout, the settings, the limits, quotas and metrics it wires, and the reason codes.

The layers (docs/architecture.md): ``core`` (domain rules, no I/O) <- ``storage`` (S3 and
CloudFront adapters) <- ``index`` (pages, their store, yank and rebuild) <- ``history`` (the
run history) <- ``status``, ``staging``, ``promotion`` (services) <- ``bisect`` <- ``deps`` <-
``lambda_function`` (the promoter function's handler) <- ``local`` (the embedded stack, the
demo, sample wheels) <- ``cli``. Every import counts,
including those made inside a function.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "lambdas" / "wheelgate"

#: The layers each layer may import besides itself (and the package root, for its version).
ALLOWED: Mapping[str, frozenset[str]] = {
    "core": frozenset(),
    "storage": frozenset({"core"}),
    "index": frozenset({"core", "storage"}),
    "history": frozenset({"core", "storage", "index"}),
    "status": frozenset({"core", "storage", "index"}),
    "staging": frozenset({"core", "storage", "index", "history"}),
    "promotion": frozenset({"core", "storage", "index", "history"}),
    "bisect": frozenset({"core", "storage", "index", "history", "staging"}),
    "deps": frozenset({"core", "storage", "index", "staging"}),
    "lambda_function": frozenset({"core", "storage", "index", "history", "status", "promotion"}),
    "local": frozenset(
        {"core", "storage", "index", "history", "status", "staging", "bisect", "lambda_function"}
    ),
    "cli": frozenset(
        {
            "core",
            "storage",
            "index",
            "history",
            "status",
            "staging",
            "promotion",
            "bisect",
            "deps",
            "local",
        }
    ),
}
#: What the CDK app may import from the package: names, settings, the numbers it configures and
#: reason codes (the alarm names the integrity reasons), never behaviour.
STACK_MAY_IMPORT = frozenset(
    {
        "wheelgate.core.layout",
        # The settings the stack writes into the promoter's environment, their values and names.
        "wheelgate.core.settings",
        "wheelgate.core.setting_values",
        "wheelgate.core.setting_parsers",
        "wheelgate.core.env_names",
        "wheelgate.core.import_sources",
        "wheelgate.core.run_window",
        # The function's timeout and leases, the AWS quotas and the metrics the alarms watch.
        "wheelgate.core.limits",
        "wheelgate.core.quotas",
        "wheelgate.core.metrics",
        "wheelgate.core.fanout_steps",
        "wheelgate.core.errors",
    }
)
#: Third-party clients the domain layer never touches (style: domain modules do no I/O).
CORE_MUST_NOT_IMPORT = ("boto3", "botocore")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, root: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of its code, as absolute names."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module_name(path, root).split(".")
                base = base[: len(base) - node.level + (path.name == "__init__.py")]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            # `from wheelgate.index import yank` imports the submodule.
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def layer_of(module: str) -> str | None:
    """The layer a ``wheelgate.<layer>...`` module belongs to; None for the package root."""
    parts = module.split(".")
    if parts[0] != "wheelgate" or len(parts) < 2 or parts[1] in {"__main__"}:
        return None
    return parts[1] if parts[1] in ALLOWED else None


def violations(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """Imports in ``graph`` (module -> modules it imports) that point the wrong way."""
    found = []
    for module, imports in sorted(graph.items()):
        own = layer_of(module)
        if own is None:
            continue
        for target in sorted(imports):
            if own == "core" and target.split(".")[0] in CORE_MUST_NOT_IMPORT:
                found.append(f"{module} imports {target}: the domain layer does no I/O")
            other = layer_of(target)
            if other is None or other == own:
                continue
            if other not in ALLOWED[own]:
                found.append(f"{module} ({own}) imports {target} ({other})")
    return found


def package_graph() -> dict[str, set[str]]:
    root = PACKAGE.parent
    return {module_name(p, root): imported_modules(p, root) for p in PACKAGE.rglob("*.py")}


def test_every_module_is_in_a_layer() -> None:
    loose = [
        m
        for m in package_graph()
        if m not in {"wheelgate", "wheelgate.__main__"} and layer_of(m) is None
    ]
    assert loose == [], f"modules outside the layers of ALLOWED: {loose}"


def test_imports_point_one_way() -> None:
    assert violations(package_graph()) == []


@pytest.mark.parametrize(
    ("module", "target"),
    [
        ("wheelgate.core.manifest", "wheelgate.index.pages"),
        ("wheelgate.promotion.service", "wheelgate.staging.stage"),
        ("wheelgate.lambda_function.handler", "wheelgate.cli.main"),
        ("wheelgate.core.layout", "boto3"),
    ],
)
def test_a_backward_import_is_reported(module: str, target: str) -> None:
    assert violations({module: {target}}) != []


def test_relative_imports_resolve_to_their_layer(tmp_path: Path) -> None:
    module = tmp_path / "wheelgate" / "core" / "x.py"
    module.parent.mkdir(parents=True)
    module.write_text("from ..cli import main\nfrom . import layout\n")
    imports = imported_modules(module, tmp_path)
    assert "wheelgate.cli.main" in imports
    assert violations({"wheelgate.core.x": imports}) == [
        "wheelgate.core.x (core) imports wheelgate.cli (cli)",
        "wheelgate.core.x (core) imports wheelgate.cli.main (cli)",
    ]


def test_the_stack_imports_only_names_settings_numbers_and_reason_codes() -> None:
    sources = [*sorted((REPO / "stacks").glob("*.py")), REPO / "app.py"]
    used = {
        target
        for path in sources
        for target in imported_modules(path, REPO)
        if target.startswith("wheelgate")
    }
    # `from wheelgate.core.layout import X` also yields `wheelgate.core.layout.X`.
    modules = {t for t in used if not any(t.startswith(f"{m}.") for m in STACK_MAY_IMPORT)}
    assert modules <= STACK_MAY_IMPORT, f"stacks/ imports {sorted(modules - STACK_MAY_IMPORT)}"
