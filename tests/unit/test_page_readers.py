"""Only ``index/`` reads index pages: one reader (:mod:`wheelgate.index.simple_api`) for both
forms, written by WheelGate or by another tool.

A module outside ``index/`` that parses a page shows itself by what it must name: an HTML
parser (``html.parser``), a PEP 691 file key or PEP 503 attribute that only pages use, or the
verdict field a page links a file's verdict with.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.test_dependency_rule import PACKAGE, imported_modules, module_name

#: Names only an index page's reader or writer has a use for.
PAGE_KEYS = frozenset(
    {
        "api-version",
        "requires-python",
        "core-metadata",
        "dist-info-metadata",
        "upload-time",
        "data-requires-python",
        "data-core-metadata",
        "data-dist-info-metadata",
        "data-upload-time",
        "data-yanked",
    }
)
#: An HTML parser, and the names of the field and attribute a page links a verdict with.
PAGE_IMPORTS = frozenset(
    {
        "html.parser",
        "wheelgate.core.verdicts.JSON_FIELD",
        "wheelgate.core.verdicts.HTML_ATTRIBUTE",
    }
)
#: Where the verdict field's names are defined (the verdict's own module, which reads no page).
DEFINES_VERDICT_FIELD = "wheelgate.core.verdicts"


def page_parsing(path: Path, root: Path) -> list[str]:
    """What in ``path`` reads or writes an index page outside ``index/``."""
    module = module_name(path, root)
    text = path.read_text()
    needles = (*PAGE_KEYS, *(name.rsplit(".", 1)[-1] for name in PAGE_IMPORTS))
    if module.startswith("wheelgate.index.") or module == DEFINES_VERDICT_FIELD:
        return []
    if not any(needle in text for needle in needles):
        return []  # neither parsed nor walked: this test runs over every module
    found = [
        f"{module} imports {target}"
        for target in sorted(imported_modules(path, root) & PAGE_IMPORTS)
    ]
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, ast.Constant) and node.value in PAGE_KEYS:
            found.append(f"{module}:{node.lineno} names the page key {node.value!r}")
    return found


def test_only_index_reads_or_writes_index_pages() -> None:
    root = PACKAGE.parent
    found = [line for path in sorted(PACKAGE.rglob("*.py")) for line in page_parsing(path, root)]
    assert found == []


def test_a_page_parser_outside_index_is_found(tmp_path: Path) -> None:
    module = tmp_path / "wheelgate" / "core" / "x.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "from html.parser import HTMLParser\n"
        "from wheelgate.core.verdicts import JSON_FIELD\n"
        "def when(f): return f.get('upload-time')\n"
    )
    assert page_parsing(module, tmp_path) == [
        "wheelgate.core.x imports html.parser",
        "wheelgate.core.x imports wheelgate.core.verdicts.JSON_FIELD",
        "wheelgate.core.x:3 names the page key 'upload-time'",
    ]


def test_the_same_in_index_is_its_business(tmp_path: Path) -> None:
    module = tmp_path / "wheelgate" / "index" / "x.py"
    module.parent.mkdir(parents=True)
    module.write_text("from html.parser import HTMLParser\nKEY = 'data-yanked'\n")
    assert page_parsing(module, tmp_path) == []
