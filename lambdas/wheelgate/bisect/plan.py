"""What installing one run exactly means, each file with the URL its bytes are read from.
Pure: the run, the tags the environment takes and the time come in, an
:class:`~wheelgate.bisect.run_installer.InstallPlan` or a
:class:`~wheelgate.bisect.run_installer.SkipRun` comes out.

Without a test named, the run installs as :func:`~wheelgate.history.install_route.run_install`
says (the one rule the history and its page follow):

- ``evidence``: the files of the first test whose every installed wheel fits the environment's
  tags, passed tests first, then failed ones (exactly the environment that failed): the
  pinned closure that test installed, never a resolver's choice. Each installed file is the
  run's own when its name and SHA-256 are those of one of the run's files (the same bytes
  under another name are not it), else the nightly file the history keeps for those bytes;
- ``offer``: a run never reported: its own files and the nightly files its index offered when
  staged, those the environment takes, for a resolver that sees only them.

A run's own file is read from nightly once promoted (permanent), else from staging until it
expires; an offered or tested file that is not the run's from its nightly key.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from posixpath import basename

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from wheelgate.bisect.run_installer import (
    SKIP_EXPIRED,
    SKIP_MISSING_FILE,
    SKIP_MISSING_PROJECT,
    SKIP_MISSING_TARGET,
    SKIP_NO_EVIDENCE,
    SKIP_NO_OFFER,
    InstallPlan,
    PlannedFile,
    SkipRun,
)
from wheelgate.core.layout import LayoutError, check_filename, key_url
from wheelgate.core.manifest import InstalledFile
from wheelgate.history.install_route import evidence_tests, run_install
from wheelgate.history.model import HistoryFile, HistoryRun, InstallRoute, RunState, TestRecord

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
    ``as_test``'s evidence, or (``None``) as the module docstring says.

    Raises :class:`SkipRun`: ``missing-project`` (the run staged no file of one of
    ``projects``), ``missing-target`` (no wheel of the run, or of one of ``projects``, fits
    ``tags``), ``no-evidence`` (no such test, no fitting evidence, a reported run no test of
    which recorded its files), ``no-offer`` (never reported, and its offer could not be
    checked), ``expired`` or ``missing-file`` (a file that can no longer be read)."""
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
    own = _OwnFiles(run.files)
    if as_test is not None:
        test = _named_test(run, name, as_test)
    else:
        install = run_install(run)
        if install.route is InstallRoute.OFFER:
            return _offer_plan(run, name, tags, sources, now, wanted or sorted(fitting))
        if install.route is InstallRoute.NONE:
            never = run.state is RunState.STAGED
            raise SkipRun(SKIP_NO_OFFER if never else SKIP_NO_EVIDENCE, f"{name}: {install.reason}")
        test = _fitting_test(run, name, own, tags, wanted)
    files: dict[str, PlannedFile] = {}
    for installed in test.installed:
        if installed.sha256 not in files:
            files[installed.sha256] = _planned(installed, test, own, sources, now, name)
    return InstallPlan(run=run, files=tuple(files.values()), test=test.name)


class _OwnFiles:
    """The run's own files, found by name and SHA-256 (by SHA-256 alone for an installed
    file whose name was not recorded)."""

    def __init__(self, files: Sequence[HistoryFile]) -> None:
        self.by_name = {(f.filename, f.sha256): f for f in files}
        self.by_sha: dict[str, HistoryFile] = {}
        for f in files:
            self.by_sha.setdefault(f.sha256, f)

    def of(self, installed: InstalledFile) -> HistoryFile | None:
        if installed.filename is None:
            return self.by_sha.get(installed.sha256)
        return self.by_name.get((installed.filename, installed.sha256))


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
    run: HistoryRun, name: str, own: _OwnFiles, tags: Collection[Tag], wanted: Sequence[str]
) -> TestRecord:
    for test in evidence_tests(run):
        names = [_filename(i, test, own) for i in test.installed]
        holds = {f.project for i in test.installed if (f := own.of(i)) is not None}
        if all(n is not None and fits(n, tags) for n in names) and holds.issuperset(wanted):
            return test
    tested = ", ".join(f"{t.name!r} ({t.result})" for t in run.tests)
    raise SkipRun(
        SKIP_NO_EVIDENCE,
        f"no passed or failed test of {name} installed wheels that all fit this interpreter "
        "or target" + (f" with {', '.join(wanted)}" if wanted else "") + f"; its tests: {tested}",
    )


def _offer_plan(
    run: HistoryRun,
    name: str,
    tags: Collection[Tag],
    sources: Sources,
    now: datetime,
    requirements: Sequence[str],
) -> InstallPlan:
    """The run's own files and its offered nightly files that fit ``tags``; an offered file
    of one of the run's own projects is left out, so the run's own files are what installs
    them."""
    own_projects = run.projects()
    files: dict[str, PlannedFile] = {}
    for f in run.files:
        if fits(f.filename, tags):
            files.setdefault(f.sha256, _own_planned(f, sources, now, name))
    offered = [o for o in run.offer if o.project not in own_projects and fits(o.filename, tags)]
    if offered and sources.nightly_base_url is None:
        raise SkipRun(
            SKIP_MISSING_FILE,
            f"{name} installs its offer, whose {len(offered)} nightly files are read from "
            "nightly: give nightly's URL",
        )
    for o in offered:
        _check_name(o.filename, name)
        url = key_url(str(sources.nightly_base_url), o.nightly_key)
        files.setdefault(o.sha256, PlannedFile(o.filename, o.sha256, UNKNOWN_SIZE, url))
    return InstallPlan(
        run=run,
        files=tuple(files.values()),
        route=InstallRoute.OFFER,
        requirements=tuple(requirements),
    )


def _filename(installed: InstalledFile, test: TestRecord, own: _OwnFiles) -> str | None:
    file = own.of(installed)
    if file is not None:
        return file.filename
    if installed.filename is not None:
        return installed.filename
    key = test.nightly_keys.get(installed.sha256)
    return None if key is None else basename(key)


def _check_name(filename: str, name: str) -> None:
    try:
        check_filename(filename)
    except LayoutError:
        raise SkipRun(
            SKIP_MISSING_FILE, f"{name} names {filename!r}, which is not a plain file name"
        ) from None


def _own_planned(file: HistoryFile, sources: Sources, now: datetime, name: str) -> PlannedFile:
    """The run's own ``file``, read from nightly once promoted, else from staging until it
    expires."""
    if file.nightly_key is not None and sources.nightly_base_url is not None:
        url = key_url(sources.nightly_base_url, file.nightly_key)
    elif not file.expired(now):
        url = key_url(sources.staging_base_url, file.staging_key)
    else:
        promoted = " (promoted: give nightly's URL)" if file.nightly_key else ""
        raise SkipRun(
            SKIP_EXPIRED,
            f"{file.filename} of {name} expired from staging at {file.expires_at}{promoted}",
        )
    return PlannedFile(file.filename, file.sha256, file.size, url)


def _planned(
    installed: InstalledFile,
    test: TestRecord,
    own: _OwnFiles,
    sources: Sources,
    now: datetime,
    name: str,
) -> PlannedFile:
    sha = installed.sha256
    filename = _filename(installed, test, own) or sha
    _check_name(filename, name)
    file = own.of(installed)
    if file is not None:
        return _own_planned(file, sources, now, name)
    key = test.nightly_keys.get(sha)
    if key is None or sources.nightly_base_url is None:
        where = "nightly's URL was not given" if key else "nightly has no copy the history knows"
        raise SkipRun(
            SKIP_MISSING_FILE,
            f"test {test.name!r} of {name} installed {filename} (sha256 {sha}), which is not "
            f"one of the run's files, and {where}",
        )
    return PlannedFile(filename, sha, UNKNOWN_SIZE, key_url(sources.nightly_base_url, key))
