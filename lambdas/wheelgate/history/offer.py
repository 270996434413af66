"""A stage entry's offer, checked when its entry is folded: the nightly files the run's own
index offered beside its staged files (:attr:`~wheelgate.history.model.StagedEntry.offer`).

A build job writes the entry, so its offer is a claim: each file is kept only when nightly
released a file of that name with that SHA-256 (nightly's archive page of its project, which
the promoter alone writes), and is then read from nightly's key of that name. A file of the
offer that is one of the entry's own files (same name and bytes) is the run's, not nightly's.
An offer that cannot be checked is no fault of the entry: its run keeps no offer, and says
why it cannot be installed by it (:class:`~wheelgate.history.model.RunInstall`, route
``none``).

:func:`checked_offer` is pure (nightly's files come in through a callable);
:class:`NightlyReleases` reads them from nightly's pages, once per project.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from wheelgate.core.layout import NIGHTLY
from wheelgate.history.model import (
    HistoryRun,
    InstallRoute,
    OfferedFile,
    RunInstall,
    StagedEntry,
    project_and_version,
)
from wheelgate.index.pages import PageFormatError
from wheelgate.index.store import IndexStore

#: Every file nightly released of a project of an index directory: file name -> SHA-256.
NightlyFiles = Callable[[str, str], Mapping[str, str]]


class OfferUnchecked(ValueError):
    """An offer whose files nightly does not vouch for; the message says which and why."""


def checked_offer(entry: StagedEntry, nightly_files: NightlyFiles) -> tuple[OfferedFile, ...]:
    """The nightly files of ``entry``'s offer, each checked against ``nightly_files``
    (index, project -> file name -> SHA-256). Raises :class:`OfferUnchecked` naming the
    first file that is not a distribution's or that nightly did not release with that
    SHA-256."""
    own = {(f.filename, f.sha256) for f in entry.files}
    checked: dict[str, OfferedFile] = {}
    for offered in entry.offer:
        if (offered.filename, offered.sha256) in own:
            continue
        try:
            project, _ = project_and_version(offered.filename)
        except ValueError as exc:
            raise OfferUnchecked(f"{offered.filename} is not a distribution: {exc}") from None
        released = nightly_files(entry.index, project).get(offered.filename)
        if released != offered.sha256:
            found = "other bytes" if released else "no file"
            raise OfferUnchecked(
                f"nightly holds {found} of that name for {offered.filename} "
                f"(the offer says sha256 {offered.sha256})"
            )
        checked.setdefault(
            offered.filename,
            OfferedFile(
                filename=offered.filename,
                project=project,
                sha256=offered.sha256,
                nightly_key=NIGHTLY.artifact(entry.index, offered.filename),
            ),
        )
    return tuple(sorted(checked.values(), key=lambda f: f.filename))


def with_offer(run: HistoryRun, entry: StagedEntry, nightly_files: NightlyFiles) -> HistoryRun:
    """``run``, made of ``entry``, with its checked offer; or, when the offer cannot be
    checked, with none and an install that says why."""
    try:
        offer = checked_offer(entry, nightly_files)
    except OfferUnchecked as exc:
        why = f"its offer cannot be checked: {exc}"
        return run.model_copy(
            update={"offer": (), "install": RunInstall(route=InstallRoute.NONE, reason=why)}
        )
    return run.model_copy(update={"offer": offer})


def merged_offer(existing: HistoryRun, staged: HistoryRun) -> dict[str, Any]:
    """What a later entry of a run adds to its offer: the files whose names it lacks, and an
    offer that could not be checked (which the run then says)."""
    by_name = {f.filename: f for f in existing.offer}
    for f in staged.offer:
        by_name.setdefault(f.filename, f)
    refused = staged.install is not None and staged.install.route is InstallRoute.NONE
    return {
        "offer": tuple(sorted(by_name.values(), key=lambda f: f.filename)),
        "install": staged.install if refused else existing.install,
    }


class NightlyReleases:
    """:data:`NightlyFiles` read from nightly's pages (``pages``): a project's archive page
    (every file ever released), read once per project. A page that is not a project page
    lists nothing, so the offer naming it is not checked."""

    def __init__(self, pages: IndexStore) -> None:
        self.pages = pages
        self._read: dict[tuple[str, str], dict[str, str]] = {}

    def __call__(self, index: str, project: str) -> Mapping[str, str]:
        if (index, project) not in self._read:
            try:
                page, _etag = self.pages.read_archive(index, project)
                files = {e.filename: e.sha256 for e in page.entries}
            except PageFormatError:
                files = {}
            self._read[(index, project)] = files
        return self._read[(index, project)]
