"""What a copy of the example workflows gets wrong, line by line: a placeholder left unfilled,
an action not pinned by commit, a project the families file does not declare.

:func:`check_copy` reads each workflow's text (not its parsed YAML: a finding names the line)
and returns one :class:`~wheelgate.core.workflows.Mismatch` per finding, each saying what to
put on that line. Comment lines are skipped, and a line's trailing ``# v1.0.0`` comment with
them. Nothing here reads files; the caller does.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping

from packaging.utils import canonicalize_name

from wheelgate.core.families import Families
from wheelgate.core.workflows import Mismatch, MismatchKind

#: A placeholder of the examples: ``<owner>``, ``<commit>``, ``<name>``.
_PLACEHOLDER = re.compile(r"<([A-Za-z][\w-]*)>")
#: Placeholders that are never anything else, wherever they stand.
_ALWAYS = frozenset({"owner", "commit"})
#: The keys whose whole value names what runs: any placeholder in them is one.
_KEYED = re.compile(r"^\s*(?:-\s+)?(uses|ref|repository)\s*:\s*(.*)$")
_COMMENT = re.compile(r"\s+#.*$")
#: ``uses: owner/repo[/path]@ref``; local (``./``) and ``docker://`` actions run as they are.
_REMOTE = re.compile(r"^(?!\./|docker://)(?P<action>[^@\s]+?)(?:@(?P<ref>\S*))?$")
_COMMIT = re.compile(r"[0-9a-f]{40}")
#: A requirement pinned to a version in a step (``"torch==$version"``, ``pkg>=1.0``): the name
#: is the project.
_PINNED_REQUIREMENT = re.compile(
    r"(?<![\w.$-])(?P<project>[A-Za-z][A-Za-z0-9._-]*)(?:\[[\w,.-]*\])?"
    r"(?:==|~=|>=|<=|!=)(?=[$\d{])"
)
#: A wheel of one project looked for by name (``find dist -name 'torch-*.whl'``).
_WHEEL_GLOB = re.compile(r"(?<![\w.$-])(?P<project>[A-Za-z][A-Za-z0-9._]*)-\*\.whl")

#: What to put in place of each placeholder of the examples (README "The wheelgate actions").
_FILL = {
    "owner": "the owner of the repository that holds WheelGate",
    "commit": (
        "the 40-hex commit of the WheelGate release the stack was deployed from, the same "
        "in every step"
    ),
    "name": "the name of a WheelGate action (a directory of its actions/)",
}


def check_copy(texts: Mapping[str, str], families: Families | None, where: str) -> list[Mismatch]:
    """Every line of ``texts`` (workflow file -> its text) that holds a placeholder, uses a
    remote action by anything but a 40-hex commit, or names a project (a pinned requirement, a
    ``<project>-*.whl`` pattern) that ``families`` (read from ``where``) does not declare in
    ``projects``. Without ``families`` the projects are not checked."""
    declared = None if families is None else {canonicalize_name(p) for p in families.projects}
    found: list[Mismatch] = []
    for path, text in texts.items():
        for number, code in _code_lines(text):
            found += _placeholders(path, number, code)
            found += _unpinned(path, number, code)
            if declared is not None:
                found += _projects(path, number, code, declared, where)
    return found


def _code_lines(text: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            yield number, _COMMENT.sub("", line)


def _placeholders(path: str, number: int, code: str) -> list[Mismatch]:
    keyed = _KEYED.match(code)
    return [
        Mismatch(
            MismatchKind.PLACEHOLDER,
            path,
            f"<{word}> is left in `{code.strip().removeprefix('- ')}`: replace it with "
            + _FILL.get(word, f"the value <{word}> stands for"),
            number,
        )
        for word in dict.fromkeys(m[1] for m in _PLACEHOLDER.finditer(code))
        if word in _ALWAYS or keyed is not None
    ]


def _unpinned(path: str, number: int, code: str) -> list[Mismatch]:
    keyed = _KEYED.match(code)
    if keyed is None or keyed[1] != "uses":
        return []
    remote = _REMOTE.match(keyed[2].strip().strip("'\""))
    if remote is None or _PLACEHOLDER.search(remote["ref"] or ""):
        return []
    ref = remote["ref"]
    if ref is not None and _COMMIT.fullmatch(ref):
        return []
    return [
        Mismatch(
            MismatchKind.ACTION_NOT_PINNED,
            path,
            f"{remote['action']} is used "
            + (f"at {ref}" if ref else "with no ref")
            + f": pin it by commit, uses: {remote['action']}@<40-hex commit> # <its tag> "
            "(a tag or branch can be moved to other code)",
            number,
        )
    ]


def _projects(
    path: str, number: int, code: str, declared: Collection[str], where: str
) -> list[Mismatch]:
    named = [m["project"] for m in _PINNED_REQUIREMENT.finditer(code)]
    named += [m["project"] for m in _WHEEL_GLOB.finditer(code)]
    return [
        Mismatch(
            MismatchKind.PROJECT_NOT_DECLARED,
            path,
            f"names the project {project} (`{code.strip()}`), which the families file {where} "
            f'does not declare: add it to its "projects", or name a project it declares',
            number,
        )
        for project in dict.fromkeys(named)
        if canonicalize_name(project) not in declared
    ]
