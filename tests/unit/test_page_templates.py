"""One Jinja2 environment renders the pages (:mod:`wheelgate.core.page_templates`), over the
templates of the package that asks, and no other module of the package builds one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from wheelgate.core.page_templates import template_environment

PACKAGE = Path(__file__).resolve().parents[2] / "lambdas" / "wheelgate"
#: What builds a Jinja2 environment when called (a ``Template`` builds its own).
BUILDERS = frozenset({"Environment", "Template"})


def environment_builds(path: Path) -> list[int]:
    """The lines of ``path`` that call Jinja2's ``Environment`` or ``Template``, by whatever name
    the module imported it (``jinja2.Environment`` included)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jinja2")
        for alias in node.names
        if alias.name in BUILDERS
    }
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        by_name = isinstance(func, ast.Name) and func.id in names
        by_module = (
            isinstance(func, ast.Attribute)
            and func.attr in BUILDERS
            and isinstance(func.value, ast.Name)
            and func.value.id == "jinja2"
        )
        if by_name or by_module:
            lines.append(node.lineno)
    return lines


def test_one_jinja2_environment_is_built_in_the_package() -> None:
    # Given every module of the package
    builds = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := environment_builds(path))
    }
    # Then only the page templates' helper builds an environment, in one place
    assert list(builds) == ["core/page_templates.py"]
    assert len(builds["core/page_templates.py"]) == 1


def test_a_second_environment_built_anywhere_is_found(tmp_path: Path) -> None:
    module = tmp_path / "pages.py"
    module.write_text(
        "import jinja2\nfrom jinja2 import Environment as Env, Template\n"
        "a = Env()\nb = jinja2.Environment()\nc = Template('x')\n"
    )
    assert environment_builds(module) == [3, 4, 5]


def test_each_package_renders_from_its_own_templates_folder() -> None:
    status = template_environment("wheelgate.status").list_templates()
    history = template_environment("wheelgate.history").list_templates()
    assert "overview.html" in status
    assert "history.html" not in status
    assert "history.html" in history
    assert "overview.html" not in history


def test_every_value_is_escaped_whatever_the_templates_name() -> None:
    env = template_environment("wheelgate.history")
    assert env.from_string("{{ v }}").render(v="<script>") == "&lt;script&gt;"
    assert env.from_string("{{ 2048 | human_size }}").render() == "2.0 KiB"


def test_a_package_without_templates_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"'templates' directory in the 'wheelgate\.core'"):
        template_environment("wheelgate.core")
