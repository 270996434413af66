"""git's first-parent line orders the candidates when ``--repo`` is given (a real git)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.unit.bisect_world import history_run, newest_first
from wheelgate.bisect.candidates import Order, candidates
from wheelgate.bisect.first_parent import GitError, first_parent_commits


def git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout.strip()


def commit(repo: Path, message: str) -> str:
    git(repo, "commit", "--allow-empty", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def test_a_side_branchs_commits_are_dropped_and_the_merge_is_a_candidate(tmp_path: Path) -> None:
    # Given main: good, a, merge(side), bad; side: s (built and staged too)
    git(tmp_path, "init", "-q", "-b", "main")
    good = commit(tmp_path, "good")
    git(tmp_path, "checkout", "-q", "-b", "side")
    side = commit(tmp_path, "s")
    git(tmp_path, "checkout", "-q", "main")
    a = commit(tmp_path, "a")
    git(tmp_path, "merge", "-q", "--no-ff", "-m", "merge", "side")
    merge = git(tmp_path, "rev-parse", "HEAD")
    bad = commit(tmp_path, "bad")
    runs = [history_run(n, commit=sha) for n, sha in enumerate([good, side, a, merge, bad])]
    # When the candidates follow git's first-parent line
    listed = first_parent_commits(tmp_path, good, bad)
    found = candidates(newest_first(runs), runs[0], runs[-1], first_parent=listed)
    # Then the side branch's run is dropped with a note, the merge stays
    assert found.order is Order.FIRST_PARENT
    assert [r.commit for r in found.runs] == [good, a, merge, bad]
    assert any("1001" in note for note in found.notes)


def test_git_failing_is_an_error_in_gits_words(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="git rev-list"):
        first_parent_commits(tmp_path, "a" * 40, "b" * 40)
