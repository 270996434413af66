"""The version scheme of actions/README.md ("Versions") holds for this checkout: the package
version is a release's ``MAJOR.MINOR.PATCH``, the command prints it, the changelog's newest
section is it, and every WheelGate action the examples and docs use carries its tag, the
comment Dependabot reads and updates."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wheelgate import __version__
from wheelgate.cli.main import main

REPO = Path(__file__).resolve().parents[2]
#: A release: the version a ``vMAJOR.MINOR.PATCH`` tag names.
RELEASE = re.compile(r"(?P<major>0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)")
#: A WheelGate action in a ``uses:`` (in a workflow or in inline code), with the tag in the
#: comment after it, if any.
WHEELGATE_USES = re.compile(
    r"uses: [^\s`]+/wheelgate/actions/[^\s`]+@[^\s`]+(?: # (?P<tag>[^\s`]+))?"
)
PLACES = sorted(
    [
        REPO / "README.md",
        *(REPO / "docs").glob("*.md"),
        REPO / "actions" / "README.md",
        *(REPO / "examples" / "github").glob("*"),
    ]
)


def release_tags(text: str) -> list[str | None]:
    """The tag in the comment of each WheelGate action's ``uses:`` in ``text``."""
    return [m["tag"] for m in WHEELGATE_USES.finditer(text)]


def test_the_version_is_a_release() -> None:
    assert RELEASE.fullmatch(__version__), f"{__version__} is not MAJOR.MINOR.PATCH"


def test_the_command_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"wheelgate {__version__}\n"


def test_the_changelogs_newest_section_is_this_version() -> None:
    sections = re.findall(r"^## (\S+)$", (REPO / "docs" / "changelog.md").read_text(), re.M)
    assert sections, "docs/changelog.md has no release section"
    assert sections[0] == __version__
    assert all(RELEASE.fullmatch(s) for s in sections)
    assert len(set(sections)) == len(sections)


def test_every_wheelgate_action_used_carries_this_release_tag() -> None:
    found = {path.relative_to(REPO).as_posix(): release_tags(path.read_text()) for path in PLACES}
    assert sum(len(tags) for tags in found.values()) >= 10, found
    wrong = {
        place: tags for place, tags in found.items() if any(t != f"v{__version__}" for t in tags)
    }
    assert wrong == {}, f"every WheelGate action used is pinned with '# v{__version__}'"


def test_the_tag_check_can_fail() -> None:
    assert release_tags(
        "      - uses: <owner>/wheelgate/actions/stage@<commit>\n"
        "      - uses: <owner>/wheelgate/actions/status@<commit> # v0.9.0\n"
        "`uses: <owner>/wheelgate/actions/<name>@<commit> # v1.0.0`\n"
        "`uses: <owner>/wheelgate/actions/<name>@<commit>` and more\n"
    ) == [None, "v0.9.0", "v1.0.0", None]
