"""The commits between two, on the first-parent line of a git checkout: the order a bisect
follows when ``--repo`` names one (merges count as the commit that merged them)."""

from __future__ import annotations

import subprocess
from pathlib import Path

#: Seconds ``git rev-list`` may take: a local walk, even of a long history, takes far less.
GIT_TIMEOUT_SECONDS = 120


class GitError(Exception):
    """git could not list the commits (no checkout, an unknown commit): git's own words."""


def first_parent_commits(repo: Path, good: str, bad: str) -> list[str]:
    """``git rev-list --first-parent GOOD..BAD`` in ``repo``: the commits after ``good`` up
    to ``bad``, newest first. Raises :class:`GitError` when git fails or is missing."""
    argv = ["git", "-C", str(repo), "rev-list", "--first-parent", f"{good}..{bad}"]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=GIT_TIMEOUT_SECONDS, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"cannot run git in {repo}: {exc}") from None
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        raise GitError(f"git rev-list in {repo} failed: {said[-1] if said else done.returncode}")
    return done.stdout.split()
