"""The wheel tags a bisect's environment takes: a ``--target`` preset's (pure), or those of the
interpreter the venv is made with (asked of that interpreter, which may be another Python than
the one running wheelgate)."""

from __future__ import annotations

from pathlib import Path

import packaging
from packaging.tags import Tag, compatible_tags, cpython_tags, generic_tags, parse_tag

from wheelgate.staging.environment import ask_interpreter
from wheelgate.staging.targets import Target, python_versions

#: Run by the venv's interpreter with wheelgate's own ``packaging`` first on its path (pure
#: Python, for any Python 3.8 on): the tags pip and uv compute there, in their order.
_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from packaging import tags
print(json.dumps([str(t) for t in tags.sys_tags()]))
"""


def target_tags(target: Target) -> frozenset[Tag]:
    """Every tag an interpreter of ``target`` installs (its Python version, implementation,
    ABIs and platforms). Raises ``ValueError`` for a target without a Python version or
    platforms (the environment running wheelgate is no target: ask its interpreter)."""
    if target.python_version is None or not target.platforms:
        raise ValueError(f"{target.describe()} names no Python version and platform")
    short, _ = python_versions(target.python_version)
    version = tuple(int(part) for part in short.split("."))
    implementation = target.implementation or "cp"
    interpreter = f"{implementation}{version[0]}{version[1]}"
    if implementation == "cp":
        found = set(cpython_tags(version, target.abis or None, target.platforms))
    else:
        found = set(generic_tags(interpreter, target.abis or None, target.platforms))
    found.update(compatible_tags(version, interpreter, target.platforms))
    return frozenset(found)


def interpreter_tags(python: str) -> frozenset[Tag]:
    """Every tag the interpreter ``python`` installs. Raises ``ValueError`` when it cannot be
    run or does not answer."""
    library = str(Path(packaging.__file__).resolve().parent.parent)
    what = "which wheel tags it installs"
    names = ask_interpreter(python, _PROBE, library, what=what)
    if not isinstance(names, list):
        raise ValueError(f"{python} did not say {what}")
    try:
        return frozenset(tag for name in names for tag in parse_tag(str(name)))
    except (ValueError, TypeError):
        raise ValueError(f"{python} did not say {what}") from None
