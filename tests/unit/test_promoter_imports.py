"""What the promoter function imports: the handler runs without the CLI's modules, and the
stack's import closure (``stacks.lambda_asset``) follows the imports that run and only those."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stacks.lambda_asset import asset_files

LAMBDA_CODE_DIR = Path(__file__).resolve().parents[2] / "lambdas"
# As stacks/promoter_function.py names it, named here so the test needs no CDK.
HANDLER = "wheelgate.lambda_function.handler.lambda_handler"

# Not in the promoter asset (wheelgate.*) or not in its layer (moto, PyYAML; cryptography: the
# promoter signs through KMS and never verifies a verdict, wheelgate.core.signatures does).
UNAVAILABLE = (
    "wheelgate.cli",
    "wheelgate.local",
    "wheelgate.deps",
    "wheelgate.staging",
    "wheelgate.index.rebuild",
    "moto",
    "yaml",
    "cryptography",
)

# Run in a fresh interpreter: a module some other test imported would be found in sys.modules
# without consulting the finder.
IMPORT_HANDLER = textwrap.dedent(
    """
    import importlib
    import importlib.abc
    import sys

    handler_name, *unavailable = sys.argv[1:]


    class Unavailable(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if any(name == u or name.startswith(u + ".") for u in unavailable):
                raise ImportError(f"{name} is not available to the promoter")
            return None


    sys.meta_path.insert(0, Unavailable())
    for name in unavailable:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        sys.exit(f"the finder let {name} through")
    module, _, function = handler_name.rpartition(".")
    handler = getattr(importlib.import_module(module), function)
    assert callable(handler), handler
    """
)


def test_handler_imports_without_the_cli_local_mode_deps_or_staging() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", IMPORT_HANDLER, HANDLER, *UNAVAILABLE],
        # Nothing from this process's environment: the handler needs none of it to import.
        env={"PYTHONPATH": str(LAMBDA_CODE_DIR)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr


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
