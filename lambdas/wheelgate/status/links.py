"""Which URLs of a record the status site may link: a test URL only when it is ``http`` or
``https`` (:func:`~wheelgate.core.display.safe_url`), and a run's CI run and commit only when
its test URLs are GitHub Actions run URLs of one repository (:func:`ci_links`).

Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from wheelgate.core.display import safe_url
from wheelgate.core.manifest import is_commit

#: Hosts whose GitHub Actions run URLs the pages turn into run and commit links.
CI_HOSTS = frozenset({"github.com"})
# GitHub's own limits: owners of at most 39 letters, digits and '-', repositories of at most
# 100 letters, digits and '.', '_', '-'; a run id is a number.
_ACTIONS_RUN_PATH = re.compile(
    r"/(?P<owner>[A-Za-z0-9][A-Za-z0-9-]{0,38})/(?P<repo>[A-Za-z0-9._-]{1,100})"
    r"/actions/runs/(?P<run>[0-9]{1,20})(?:/.*)?"
)


class CiLinks(BaseModel):
    """Where a run came from: its CI run and its commit (see :func:`ci_links`)."""

    model_config = ConfigDict(frozen=True)

    run: str | None = None
    commit: str | None = None


def _actions_run(url: str | None, hosts: frozenset[str]) -> tuple[str, str, str, str] | None:
    """``(host, owner, repo, run id)`` of a GitHub Actions run URL, else None."""
    if safe_url(url) is None:
        return None
    parts = urlsplit(str(url))
    # The whole netloc must be a host: a user, a password or a port makes it something else.
    host = parts.netloc.lower()
    found = _ACTIONS_RUN_PATH.fullmatch(parts.path)
    if parts.scheme != "https" or host not in hosts or found is None:
        return None
    if not found["repo"].strip("."):
        return None  # "." and ".." are path steps, not repositories
    return host, found["owner"], found["repo"], found["run"]


def ci_links(
    test_urls: Iterable[str | None], commit: str | None, *, hosts: frozenset[str] = CI_HOSTS
) -> CiLinks:
    """Links to a run's CI run and commit, from its test URLs.

    A test URL counts when it is a GitHub Actions run URL: ``https``, a host of ``hosts`` with
    neither credentials nor a port, and the path ``/<owner>/<repo>/actions/runs/<id>[/...]``
    (``.../job/<n>``, ``.../attempts/<n>``). When every URL that counts names the same
    repository, a full commit SHA links to ``https://<host>/<owner>/<repo>/commit/<sha>``; when
    they also name the same run, the run links to ``https://<host>/<owner>/<repo>/actions/runs/
    <id>``. Links are built from the checked parts only (never a query, a fragment or a user);
    anything else gives no link.
    """
    runs = {found for url in test_urls if (found := _actions_run(url, hosts)) is not None}
    repositories = {(host, owner, repo) for host, owner, repo, _ in runs}
    if len(repositories) != 1:
        return CiLinks()
    [(host, owner, repo)] = repositories
    base = f"https://{host}/{owner}/{repo}"
    return CiLinks(
        run=f"{base}/actions/runs/{next(iter(runs))[3]}" if len(runs) == 1 else None,
        commit=f"{base}/commit/{commit}" if commit and is_commit(commit) else None,
    )
