"""Reading what uv picked among an offer's files (wheelgate.bisect.resolve): each pinned
version and its hashes, and of the files of that version the one with those bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from wheelgate.bisect.environment import CachedFile
from wheelgate.bisect.resolve import _file_of, _pinned
from wheelgate.bisect.run_installer import SKIP_INSTALL_FAILED, SkipRun

COMPILED = """\
gap-core==1.0+g1 \\
    --hash=sha256:aaaa
gap-dep==2.0 ; python_version >= "3.9" \\
    --hash=sha256:bbbb \\
    --hash=sha256:cccc
"""


def cached(name: str, sha: str) -> CachedFile:
    return CachedFile(Path("/cache") / sha / name, sha)


def test_each_pinned_version_is_read_with_every_hash_under_it() -> None:
    assert _pinned(COMPILED) == [
        ("gap-core", "1.0+g1", {"aaaa"}),
        ("gap-dep", "2.0", {"bbbb", "cccc"}),
    ]


def test_the_file_of_a_pinned_version_is_the_one_with_its_bytes_a_wheel_first() -> None:
    files = {
        "gap_dep-2.0-py3-none-any.whl": cached("gap_dep-2.0-py3-none-any.whl", "bbbb"),
        "gap_dep-2.0.tar.gz": cached("gap_dep-2.0.tar.gz", "cccc"),
        "gap_dep-1.0-py3-none-any.whl": cached("gap_dep-1.0-py3-none-any.whl", "dddd"),
    }

    assert _file_of(files, "gap-dep", "2.0", {"bbbb", "cccc"}).sha256 == "bbbb"


def test_a_pick_whose_bytes_are_not_offered_is_an_install_failure() -> None:
    files = {"gap_dep-2.0-py3-none-any.whl": cached("gap_dep-2.0-py3-none-any.whl", "bbbb")}

    with pytest.raises(SkipRun) as caught:
        _file_of(files, "gap-dep", "2.0", {"eeee"})

    assert caught.value.reason == SKIP_INSTALL_FAILED
