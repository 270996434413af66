"""``verify --installed NAME``: an installed distribution, matched with the released wheels
of its name and version (each verified against its bytes), then the matched wheel's verdict."""

from __future__ import annotations

import argparse
from urllib.parse import urljoin

from packaging.utils import canonicalize_name

from wheelgate.cli.common import UsageError
from wheelgate.cli.verdict_report import Candidate, check_candidates, directories, refused
from wheelgate.core.env_names import ENV_NIGHTLY_BASE_URL
from wheelgate.core.layout import (
    ARCHIVE_DIR,
    base_url,
    key_url,
)
from wheelgate.core.verdicts import (
    PublishedKey,
)
from wheelgate.core.wheelrecord import describe
from wheelgate.index.pages import JSON_CONTENT_TYPE
from wheelgate.storage.http import fetch


def verify_installed(args: argparse.Namespace, keys: list[PublishedKey], gate: str | None) -> int:
    """``--installed NAME``: match the installed distribution with the released wheels of its
    name and version, each verified against its bytes, and check the matched wheel's
    verdict."""
    from wheelgate.cli.installed import _python
    from wheelgate.staging.environment import InstalledEnvironment, inventory
    from wheelgate.staging.installed_release import compare_all, released_wheels

    python = _python(args)
    try:
        environment = InstalledEnvironment.model_validate(inventory(python))
    except ValueError as exc:
        raise UsageError(f"the environment of {python}: {exc}") from exc
    name = canonicalize_name(args.installed)
    found = [d for d in environment.distributions if canonicalize_name(d.name) == name]
    if not found:
        raise UsageError(f"{args.installed} is not installed in the environment of {python}")
    installed = found[0]
    what = f"{installed.name} {installed.version}"
    pages = project_pages(args, gate, name)
    wheels = []
    for page_url in pages:
        page = fetch(page_url, accept=JSON_CONTENT_TYPE)
        if page is None:
            continue
        try:
            wheels += released_wheels(page, page_url, installed.name, installed.version)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    if not wheels:
        problem = {
            "code": "no-release",
            "message": f"no released wheel of {what} at {', '.join(pages)}",
        }
        return refused(args, what, problem)
    comparisons = compare_all(installed, environment.scheme, wheels, fetch)
    matched = [c.wheel for c in comparisons if c.matches]
    if not matched:
        said = "; ".join(
            f"{c.wheel.filename}: {c.refused or describe(c.differences)}" for c in comparisons
        )
        problem = {
            "code": "not-released-bytes",
            "message": f"{what} as installed is none of the released wheels ({said})",
        }
        return refused(args, what, problem)
    facts = {"name": installed.name, "version": installed.version, "python": python}
    candidates = [
        Candidate(
            wheel.filename,
            wheel.sha256,
            fetch(wheel.verdict_url),
            wheel.verdict_url,
            installed=facts | {"matched": wheel.filename},
        )
        for wheel in matched
    ]
    return check_candidates(args, what, candidates, keys, gate)


def project_pages(args: argparse.Namespace, gate: str | None, project: str) -> list[str]:
    """Where the released wheels of ``project`` are listed: ``--index-url``'s project page,
    else each directory's archive page (every file ever released) under the gate."""
    if args.index_url:
        return [urljoin(base_url(args.index_url), f"{project}/")]
    if not gate:  # where to look, not what to trust
        raise UsageError(
            "--installed downloads the released wheels: name the gate (--nightly-url, or "
            f"{ENV_NIGHTLY_BASE_URL}) or the index (--index-url URL)"
        )
    return [
        key_url(gate, f"{index}/{ARCHIVE_DIR}/{project}/") for index in directories(args, project)
    ]
