"""The stack's import closure (``stacks.lambda_asset``) follows the imports that run and only
those."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from stacks.lambda_asset import asset_files


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_closure_follows_the_imports_that_run(tmp_path: Path) -> None:
    code_dir = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/entry.py": """
                from __future__ import annotations

                import typing
                from typing import TYPE_CHECKING

                import json
                import pkg.plain
                from pkg import submodule
                from pkg.names import CONSTANT
                from . import relative

                if TYPE_CHECKING:
                    import pkg.typing_only
                else:
                    import pkg.runtime_branch
                if typing.TYPE_CHECKING:
                    from pkg.cli import main


                def later() -> None:
                    import pkg.in_function
                """,
            "pkg/plain.py": "",
            "pkg/submodule.py": "",
            "pkg/names/__init__.py": "CONSTANT = 1\n",
            "pkg/names/unused.py": "",
            "pkg/relative.py": "from .deep.leaf import VALUE\n",
            "pkg/deep/__init__.py": "",
            "pkg/deep/leaf.py": "VALUE = 2\n",
            "pkg/runtime_branch.py": "",
            "pkg/in_function.py": "",
            "pkg/typing_only.py": "",
            "pkg/cli/__init__.py": "",
            "pkg/cli/main.py": "import yaml\n",
            "pkg/data.json": "{}",
        },
    )
    assert asset_files(code_dir, "pkg.entry") == (
        "pkg/__init__.py",
        "pkg/deep/__init__.py",
        "pkg/deep/leaf.py",
        "pkg/entry.py",
        "pkg/in_function.py",
        "pkg/names/__init__.py",
        "pkg/plain.py",
        "pkg/relative.py",
        "pkg/runtime_branch.py",
        "pkg/submodule.py",
    )


def test_closure_refuses_an_import_with_no_source(tmp_path: Path) -> None:
    code_dir = _package(tmp_path, {"pkg/__init__.py": "", "pkg/entry.py": "import pkg.gone\n"})
    with pytest.raises(FileNotFoundError, match=r"pkg\.gone"):
        asset_files(code_dir, "pkg.entry")
