"""The run history page a person reads: ``history/<index>/index.html`` in staging, beside the
head and month shards it is made from (:mod:`wheelgate.history.model`).

Newest run first (:func:`listed_runs`: the newest reported runs, never-reported runs trimmed
beside them, so a flood of stage entries cannot push a reported run off it); each with its
state and reasons, commit, times, tests and files, how it installs
(:func:`~wheelgate.history.install_route.run_install`: which test's evidence, its offer, or why
it cannot be installed exactly), and, only for a run that can be installed, the line that
installs it that way (``wheelgate bisect install``). A file links where its bytes are: nightly
once promoted (absolute, permanent), else its staged copy (relative to the page, so the page
works under any host); an expired staged copy links nothing, since the link would 404.

Pure: the views are plain data and the Jinja2 templates of ``templates/`` render them with
autoescape on. Jinja2 comes with the promoter (the ``promoter`` extra and its layer), so it is
imported when a page is rendered: ``wheelgate bisect`` reads this package without it.
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Final

from wheelgate.core.display import safe_url
from wheelgate.core.layout import PAGES, STAGING, STATUS_PREFIX, href, key_url
from wheelgate.core.timestamps import upload_time
from wheelgate.history.install_route import run_install
from wheelgate.history.model import (
    HistoryFile,
    HistoryRun,
    InstallRoute,
    MonthRef,
    RunInstall,
    RunState,
    newest_first,
)

if TYPE_CHECKING:
    from jinja2 import Environment

PAGE_TEMPLATE: Final = "history.html"


@dataclass(frozen=True)
class StateShown:
    """How a run's state reads: its badge, the badge's colour class, and a sentence."""

    badge: str
    tone: str
    sentence: str


#: Every state says whether the run reached nightly: only a promoted run did.
STATES_SHOWN: Final = {
    RunState.PROMOTED: StateShown("promoted", "promoted", "Promoted to nightly."),
    RunState.REJECTED: StateShown(
        "not promoted", "rejected", "Not promoted: rejected by the promoter."
    ),
    RunState.PENDING: StateShown(
        "pending", "pending", "Not promoted yet: reported, waiting for the promoter's decision."
    ),
    RunState.STAGED: StateShown(
        "staged", "other", "Not promoted: staged, but no test report ever reached the promoter."
    ),
}


@dataclass(frozen=True)
class FileShown:
    """A run's file as the page lists it. ``url`` is where its bytes are (``None`` once the
    staged copy expired and nightly has none); ``where`` is ``nightly``, ``staging`` or
    ``expired``; ``expires_at`` when the staged copy goes (``None``: unknown or in nightly)."""

    filename: str
    size: int
    sha256: str
    url: str | None
    where: str
    expires_at: str | None


@dataclass(frozen=True)
class RunShown:
    """A run as the page shows it: the run, how its state reads, its commit's link, its files,
    whether all of them expired, how it installs (its route, and a sentence), its install
    line (``None`` when it cannot be installed exactly, or nothing can be any more), and how
    many of its tests gave each result (:func:`result_counts`), for its line in the table."""

    run: HistoryRun
    state: StateShown
    commit_url: str | None
    files: tuple[FileShown, ...]
    expired: bool
    route: str
    installs: str
    install: str | None
    results: tuple[tuple[str, int], ...] = ()


def listed_runs(runs: Iterable[HistoryRun], limit: int) -> list[HistoryRun]:
    """The runs a history page lists, newest first: the newest ``limit`` runs that were
    reported (or decided), and beside them at most the newest ``limit`` never reported. Runs
    never reported are any build job's to stage, so they never take a reported run's place."""
    ordered = newest_first(runs)
    reported = [r for r in ordered if r.state is not RunState.STAGED][:limit]
    never = [r for r in ordered if r.state is RunState.STAGED][:limit]
    return newest_first([*reported, *never])


def result_counts(run: HistoryRun) -> tuple[tuple[str, int], ...]:
    """How many of ``run``'s tests gave each result: ``passed`` first, then ``failed``, then
    any other result in the order its first test came."""
    counts = Counter(test.result for test in run.tests)
    first = {"passed": 0, "failed": 1}
    return tuple(sorted(counts.items(), key=lambda item: first.get(item[0], 2)))


def install_line(run_id: str, index: str, test: str | None = None) -> str:
    """The command that installs run ``run_id`` of ``index`` exactly (``test``: as that
    test's evidence). ``run:`` names the run even when its id is also a commit prefix. Run ids
    and index directories hold no character a shell reads (core/layout.py); a test name is
    quoted for the shell."""
    line = f"wheelgate bisect install run:{run_id} --index {index}"
    return line if test is None else f"{line} --as-test {shlex.quote(test)}"


def install_sentence(run: HistoryRun, install: RunInstall) -> str:
    """How ``run`` installs, as the page says it."""
    if install.route is InstallRoute.EVIDENCE:
        result = next((t.result for t in run.tests if t.name == install.test), "")
        return f"Installs exactly what test {install.test} installed (it {result})."
    if install.route is InstallRoute.OFFER:
        count = len(run.offer)
        return (
            f"Never reported: installs its offer, its staged files and the {count} nightly "
            f"file{'s' if count != 1 else ''} its index offered when staged, resolved among "
            "those alone."
        )
    return f"Cannot be installed exactly: {install.reason}."


def commit_url(repository_url: str | None, sha: str) -> str | None:
    """``<repository_url>/commit/<sha>``, or ``None`` without an http(s) repository URL."""
    base = safe_url(repository_url)
    return None if base is None else f"{base.rstrip('/')}/commit/{sha}"


def file_shown(
    file: HistoryFile, *, page_dir: str, nightly_base_url: str, now: datetime
) -> FileShown:
    """``file`` linked where its bytes are at ``now``: nightly's permanent URL once promoted,
    else its staged copy relative to the page in ``page_dir``, else (expired) nowhere."""
    if file.nightly_key is not None:
        url: str | None = key_url(nightly_base_url, file.nightly_key)
        where, expires_at = "nightly", None
    elif file.expired(now):
        url, where, expires_at = None, "expired", file.expires_at
    else:
        url, where, expires_at = href(page_dir, file.staging_key), "staging", file.expires_at
    return FileShown(file.filename, file.size, file.sha256, url, where, expires_at)


def run_shown(
    run: HistoryRun,
    *,
    index: str,
    nightly_base_url: str,
    now: datetime,
    repository_url: str | None = None,
) -> RunShown:
    """``run`` as the page of ``index`` shows it at ``now`` (see :class:`RunShown`)."""
    page_dir = STAGING.history_dir(index)
    expired = run.expired(now)
    install = run_install(run)
    line = None
    if not expired and install.route is not InstallRoute.NONE:
        line = install_line(run.run_id, index, install.test)
    return RunShown(
        run=run,
        state=STATES_SHOWN[run.state],
        commit_url=commit_url(repository_url, run.commit),
        files=tuple(
            file_shown(f, page_dir=page_dir, nightly_base_url=nightly_base_url, now=now)
            for f in run.files
        ),
        expired=expired,
        route=install.route.value,
        installs=install_sentence(run, install),
        install=line,
        results=result_counts(run),
    )


def status_url(runs: Iterable[HistoryRun], *, index: str, nightly_base_url: str) -> str:
    """Where the history page of ``index`` links the status site, which nightly serves at
    ``status/``: the directory's own page (``status/<index>/``) once one of ``runs`` was
    decided, which wrote that page, else the overview (``status/``), written by any decision."""
    decided = any(run.state in (RunState.PROMOTED, RunState.REJECTED) for run in runs)
    return key_url(nightly_base_url, f"{STATUS_PREFIX}{index}/" if decided else STATUS_PREFIX)


def months_of(runs: Iterable[HistoryRun]) -> tuple[MonthRef, ...]:
    """The months ``runs`` were staged in, newest first, with how many runs each holds (the
    head's :attr:`~wheelgate.history.model.HistoryHead.months`, from the runs themselves)."""
    counts = Counter(run.month for run in runs)
    return tuple(MonthRef(month=m, runs=n) for m, n in sorted(counts.items(), reverse=True))


@cache
def environment() -> Environment:
    """The templates' environment (:func:`~wheelgate.core.page_templates.template_environment`
    over this package's ``templates/``), built once."""
    # Imported here: only the promoter renders pages, and only it has Jinja2.
    from wheelgate.core.page_templates import template_environment

    return template_environment("wheelgate.history")


def render_history_page(
    runs: Sequence[HistoryRun],
    *,
    index: str,
    nightly_base_url: str,
    now: datetime,
    repository_url: str | None = None,
    months: Sequence[MonthRef] = (),
) -> str:
    """The history page of ``index`` (:meth:`~wheelgate.core.layout.StagingLayout.history_page`)
    listing ``runs`` newest first, as of ``now`` (what has expired).

    ``nightly_base_url`` is nightly's distribution URL (promoted files link there);
    ``repository_url`` (http or https) links each commit as ``<repository_url>/commit/<sha>``;
    ``months`` are the shards the page links beside the head (``index.json``); the page links
    the status site back (:func:`status_url`). Raises
    :class:`~wheelgate.core.layout.LayoutError` for an invalid ``index``.
    """
    page_dir = STAGING.history_dir(index)
    shown = [
        run_shown(
            run,
            index=index,
            nightly_base_url=nightly_base_url,
            now=now,
            repository_url=repository_url,
        )
        for run in newest_first(runs)
    ]
    return (
        environment()
        .get_template(PAGE_TEMPLATE)
        .render(
            index=index,
            runs=shown,
            written_at=upload_time(now),
            head_href=href(page_dir, STAGING.history_head(index)),
            months=[
                (ref, href(page_dir, STAGING.history_month(index, ref.month))) for ref in months
            ],
            nightly_index_url=key_url(nightly_base_url, PAGES.pages_dir(index)),
            status_url=status_url(runs, index=index, nightly_base_url=nightly_base_url),
        )
    )
