"""What installing one run exactly means: the files a test of the run installed (its evidence),
each with the URL its bytes are read from. Pure: the run, the tags the environment takes and
the time come in, an :class:`~wheelgate.bisect.probe.InstallPlan` or a
:class:`~wheelgate.bisect.probe.SkipRun` comes out.

Without a test named, the plan is the evidence of the first passed test whose every installed
wheel fits the environment's tags: the exact pinned closure that test installed, never a
resolver's choice. A run's own file is read from nightly once promoted (permanent), else from
staging until it expires; a file that is not the run's from the nightly key the history keeps.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from posixpath import basename

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from wheelgate.bisect.probe import (
    SKIP_EXPIRED,
    SKIP_MISSING_FILE,
    SKIP_MISSING_PROJECT,
    SKIP_MISSING_TARGET,
    SKIP_NO_EVIDENCE,
    InstallPlan,
    PlannedFile,
    SkipRun,
)
from wheelgate.core.layout import LayoutError, check_filename, key_url
from wheelgate.core.manifest import InstalledFile, Outcome
from wheelgate.history.model import HistoryFile, HistoryRun, RunState, TestRecord

#: A size the history does not keep (a file that is not the run's): held to its SHA-256 alone.
UNKNOWN_SIZE = 0


@dataclass(frozen=True)
class Sources:
    """Where files are read from: the staging distribution's base URL, and nightly's (``None``:
    promoted files are read from staging while they last)."""

    staging_base_url: str
    nightly_base_url: str | None = None


def fits(filename: str, tags: Collection[Tag]) -> bool:
    """Whether the environment taking ``tags`` installs ``filename``: a wheel with one of its
    tags; an sdist (built there) always."""
    try:
        _, _, _, wheel_tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return not filename.endswith(".whl")
    return not wheel_tags.isdisjoint(tags)


def plan_run(
    run: HistoryRun,
    *,
    tags: Collection[Tag],
    sources: Sources,
    now: datetime,
    projects: Sequence[str] = (),
    as_test: str | None = None,
) -> InstallPlan:
    """The files that install ``run`` exactly in an environment taking ``tags`` at ``now``:
    ``as_test``'s evidence, or (``None``) the first passed test's whose wheels all fit.

    Raises :class:`SkipRun`: ``missing-project`` (the run staged no file of one of
    ``projects``), ``missing-target`` (no wheel of the run, or of one of ``projects``, fits
    ``tags``), ``no-evidence`` (never reported, no such test, no fitting evidence),
    ``expired`` or ``missing-file`` (a file that can no longer be read)."""
    name = f"run {run.run_id} ({run.commit[:12]})"
    wanted: list[str] = [canonicalize_name(p) for p in projects]
    staged = run.projects()
    absent = [p for p in wanted if p not in staged]
    if absent:
        raise SkipRun(
            SKIP_MISSING_PROJECT,
            f"{name} staged no file of {', '.join(absent)} "
            f"(it staged {', '.join(sorted(staged)) or 'nothing'})",
        )
    fitting = {f.project for f in run.files if fits(f.filename, tags)}
    unfit = [p for p in (wanted or sorted(staged)) if p not in fitting]
    if (wanted and unfit) or not fitting:
        raise SkipRun(
            SKIP_MISSING_TARGET,
            f"{name} has no wheel of {', '.join(unfit)} for this interpreter or target",
        )
    test = _named_test(run, name, as_test) if as_test else _fitting_test(run, name, tags, wanted)
    own = {f.sha256: f for f in run.files}
    files: dict[str, PlannedFile] = {}
    for installed in test.installed:
        if installed.sha256 not in files:
            files[installed.sha256] = _planned(installed, test, own, sources, now, name)
    return InstallPlan(run=run, files=tuple(files.values()), test=test.name)


def _named_test(run: HistoryRun, name: str, test_name: str) -> TestRecord:
    for test in run.tests:
        if test.name == test_name:
            if not test.installed:
                raise SkipRun(
                    SKIP_NO_EVIDENCE, f"test {test_name!r} of {name} recorded no installed file"
                )
            return test
    known = ", ".join(repr(t.name) for t in run.tests) or "none: it was never reported"
    raise SkipRun(SKIP_NO_EVIDENCE, f"{name} has no test {test_name!r}; its tests: {known}")


def _fitting_test(
    run: HistoryRun, name: str, tags: Collection[Tag], wanted: Sequence[str]
) -> TestRecord:
    if not run.tests:
        why = "was staged but never reported" if run.state is RunState.STAGED else "has no test"
        raise SkipRun(SKIP_NO_EVIDENCE, f"{name} {why}: no test says what it installed")
    own = {f.sha256: f for f in run.files}
    for test in run.tests:
        if test.result != Outcome.PASSED or not test.installed:
            continue
        names = [_filename(i, test, own) for i in test.installed]
        holds = {own[i.sha256].project for i in test.installed if i.sha256 in own}
        if all(n is not None and fits(n, tags) for n in names) and holds.issuperset(wanted):
            return test
    tested = ", ".join(f"{t.name!r} ({t.result})" for t in run.tests)
    raise SkipRun(
        SKIP_NO_EVIDENCE,
        f"no passed test of {name} installed wheels that all fit this interpreter or target"
        + (f" with {', '.join(wanted)}" if wanted else "")
        + f"; its tests: {tested}",
    )


def _filename(
    installed: InstalledFile, test: TestRecord, own: dict[str, HistoryFile]
) -> str | None:
    if installed.sha256 in own:
        return own[installed.sha256].filename
    if installed.filename is not None:
        return installed.filename
    key = test.nightly_keys.get(installed.sha256)
    return None if key is None else basename(key)


def _planned(
    installed: InstalledFile,
    test: TestRecord,
    own: dict[str, HistoryFile],
    sources: Sources,
    now: datetime,
    name: str,
) -> PlannedFile:
    sha = installed.sha256
    filename = _filename(installed, test, own) or sha
    try:
        check_filename(filename)
    except LayoutError:
        raise SkipRun(
            SKIP_MISSING_FILE, f"{name} names {filename!r}, which is not a plain file name"
        ) from None
    file = own.get(sha)
    if file is not None:
        if file.nightly_key is not None and sources.nightly_base_url is not None:
            url = key_url(sources.nightly_base_url, file.nightly_key)
        elif not file.expired(now):
            url = key_url(sources.staging_base_url, file.staging_key)
        else:
            promoted = " (promoted: give nightly's URL)" if file.nightly_key else ""
            raise SkipRun(
                SKIP_EXPIRED,
                f"{filename} of {name} expired from staging at {file.expires_at}{promoted}",
            )
        return PlannedFile(filename, sha, file.size, url)
    key = test.nightly_keys.get(sha)
    if key is None or sources.nightly_base_url is None:
        where = "nightly's URL was not given" if key else "nightly has no copy the history knows"
        raise SkipRun(
            SKIP_MISSING_FILE,
            f"test {test.name!r} of {name} installed {filename} (sha256 {sha}), which is not "
            f"one of the run's files, and {where}",
        )
    return PlannedFile(filename, sha, UNKNOWN_SIZE, key_url(sources.nightly_base_url, key))
