"""Installing runs exactly: :class:`PipRunInstaller` is the
:class:`~wheelgate.bisect.run_installer.RunInstaller` the search steps with (plan with
:func:`~wheelgate.bisect.plan.plan_run`, fetch into the
:class:`~wheelgate.bisect.cache.BisectCache`, install with pip or uv into a venv reused across
steps), and :func:`install_run` is ``wheelgate bisect install``: one run, and what was
installed from where.
"""

from __future__ import annotations

import shutil
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from packaging.tags import Tag

from wheelgate.bisect.cache import BisectCache, Fetched
from wheelgate.bisect.environment import CachedFile, Installer, ensure_venv, sync
from wheelgate.bisect.plan import Sources, plan_run
from wheelgate.bisect.resolve import resolve_offer
from wheelgate.bisect.run_installer import InstallPlan
from wheelgate.bisect.tags import interpreter_tags, target_tags
from wheelgate.history.model import HistoryRun, InstallRoute
from wheelgate.staging.targets import Target


@dataclass(frozen=True)
class InstalledRunFile:
    """A file :func:`install_run` installed: its name, SHA-256, size, URL, and whether it was
    downloaded (``False``: it came from the cache)."""

    filename: str
    sha256: str
    size: int
    url: str
    downloaded: bool


@dataclass(frozen=True)
class InstallReport:
    """What :func:`install_run` did: the plan, the venv, and each file installed."""

    plan: InstallPlan
    venv: Path
    files: tuple[InstalledRunFile, ...]

    @property
    def downloads(self) -> int:
        return sum(f.downloaded for f in self.files)

    def described(self) -> str:
        """What was installed, for a person: which test's evidence (and whether it passed),
        or the offer."""
        plan = self.plan
        if plan.route is InstallRoute.OFFER:
            return (
                f"its offer (never reported): {len(self.files)} of the {len(plan.files)} files "
                "its index offered when staged, as a resolver that saw only those picked them"
            )
        result = next((t.result for t in plan.run.tests if t.name == plan.test), "")
        return f"the files test {plan.test!r} installed (it {result})"


class PipRunInstaller:
    """Installs runs exactly with ``installer`` (pip or uv) into venvs made with ``python``.

    - ``cache``: where files are kept by SHA-256;
    - ``staging_base_url``, ``nightly_base_url``: the distributions files are read from
      (``None`` for nightly: promoted files are read from staging while they last);
    - ``projects``: a run without a file of each is skipped (``missing-project``);
    - ``target``: a ``--target`` preset whose tags the plan's wheels must fit (``None``: the
      tags of ``python``);
    - ``now``: the clock files expire by;
    - ``uv``: the uv command (default: the one beside this interpreter, else on ``PATH``).

    Raises ``ValueError`` for a target without Python version and platforms."""

    def __init__(
        self,
        *,
        cache: BisectCache,
        staging_base_url: str,
        nightly_base_url: str | None,
        installer: Installer,
        python: str,
        projects: Sequence[str] = (),
        target: Target | None = None,
        now: Callable[[], datetime],
        uv: str | None = None,
    ) -> None:
        self.cache = cache
        self.sources = Sources(staging_base_url, nightly_base_url)
        self.installer: Installer = installer
        self.python = python
        self.projects = tuple(projects)
        self.target = target
        self.now = now
        self.uv = uv or shutil.which("uv", path=str(Path(sys.executable).parent)) or "uv"
        self._tags = None if target is None else target_tags(target)
        self._tags_lock = threading.Lock()

    def tags(self) -> frozenset[Tag]:
        """The tags the plan's wheels must fit (the interpreter's, asked once). Raises
        ``ValueError`` when ``python`` cannot be asked."""
        with self._tags_lock:
            if self._tags is None:
                self._tags = interpreter_tags(self.python)
            return self._tags

    def plan(self, run: HistoryRun, *, as_test: str | None = None) -> InstallPlan:
        """The files that install ``run`` exactly (:func:`~wheelgate.bisect.plan.plan_run`).
        Raises :class:`~wheelgate.bisect.run_installer.SkipRun` when it cannot be."""
        return plan_run(
            run,
            tags=self.tags(),
            sources=self.sources,
            now=self.now(),
            projects=self.projects,
            as_test=as_test,
        )

    def fetch_files(self, plan: InstallPlan) -> list[Fetched]:
        """Each of the plan's files in the cache, downloaded unless it was there. Raises
        :class:`~wheelgate.bisect.run_installer.SkipRun` for the first that cannot be downloaded."""
        return [self.cache.fetch(file) for file in plan.files]

    def fetch(self, plan: InstallPlan) -> int:
        """Bring the plan's files into the cache; the number downloaded (0: all cached)."""
        return sum(f.downloaded for f in self.fetch_files(plan))

    def install(self, plan: InstallPlan, venv: Path) -> None:
        """Make ``venv`` hold exactly the plan's files (an offer's: those the resolver picks
        among them), making it first if it does not exist. Raises
        :class:`~wheelgate.bisect.run_installer.SkipRun` (``install-failed``, or a file that
        could not be fetched) and ``ValueError`` when the venv cannot be made."""
        self.install_files(plan, venv)

    def install_files(self, plan: InstallPlan, venv: Path) -> set[str]:
        """:meth:`install`, returning the SHA-256 of each file installed."""
        # A file the cache evicted since it was fetched (a tight size limit) is fetched again.
        files = [
            CachedFile(self.cache.cached(f) or self.cache.fetch(f).path, f.sha256)
            for f in plan.files
        ]
        python = ensure_venv(venv, installer=self.installer, python=self.python, uv=self.uv)
        if plan.route is InstallRoute.OFFER:
            files = resolve_offer(
                files, plan.requirements, python=python, installer=self.installer, uv=self.uv
            )
        sync(venv, python, files, installer=self.installer, uv=self.uv)
        return {f.sha256 for f in files}


def install_run(
    run: HistoryRun, installer: PipRunInstaller, venv: Path, *, as_test: str | None = None
) -> InstallReport:
    """Install ``run`` exactly into ``venv`` (``as_test``: exactly that test's evidence; else
    as :func:`~wheelgate.bisect.plan.plan_run` says) and say what was installed (of an offer,
    the files the resolver picked) and whether each file was downloaded or cached. Raises
    :class:`~wheelgate.bisect.run_installer.SkipRun` with the reason the run cannot be
    installed, and ``ValueError`` when the venv or the interpreter cannot be used."""
    plan = installer.plan(run, as_test=as_test)
    fetched = installer.fetch_files(plan)
    installed = installer.install_files(plan, venv)
    files = tuple(
        InstalledRunFile(p.filename, p.sha256, f.size, p.url, f.downloaded)
        for p, f in zip(plan.files, fetched, strict=True)
        if p.sha256 in installed
    )
    return InstallReport(plan=plan, venv=venv, files=files)
