"""Listing retention: which of a project's released files its index page lists.

Pure. A project page lists the files of the versions a :class:`RetentionRule` keeps; every file
stays in nightly and on the directory's archive page (``<index>/_archive/``), so a pinned old
version still installs from there. The rules, for one project:

- A *version* is a public version (:attr:`packaging.version.Version.public`):
  ``2.10.0.dev1+rocm7.0`` and ``2.10.0.dev1+rocm6.4`` are one version, listed or delisted
  together. Versions are ordered by :mod:`packaging.version`.
- A version is *live* when at least one of its files is not yanked (PEP 592).
- ``keep_versions`` (K) keeps the newest K live versions, and every wholly yanked version newer
  than the oldest of them (a yank stays visible where it happened).
- ``keep_days`` (D) keeps every version first released (its earliest file's upload time) less
  than D days before ``now``. A file whose upload time is unknown or unreadable counts as new.
- Both set: a version is kept when either rule keeps it: the last D days, and never fewer than K
  live versions.
- Always kept, whatever the rule: the newest version and the newest live version (so a rarely
  updated dependency never vanishes), and files whose version cannot be parsed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from packaging.version import InvalidVersion, Version

from wheelgate.core.setting_values import RetentionRule
from wheelgate.index.pages import IndexEntry, parse_upload_time


@dataclass(frozen=True)
class Retained:
    """A project's files split by a rule: those its page lists and those only the archive
    lists. Both keep the order they were given in."""

    listed: tuple[IndexEntry, ...]
    delisted: tuple[IndexEntry, ...]


def release_version(entry: IndexEntry) -> Version | None:
    """The public version of ``entry``'s file, or ``None`` if its name has none we can order."""
    try:
        return Version(entry.version.public)
    except (ValueError, InvalidVersion):
        return None


def _released_at(entry: IndexEntry) -> datetime | None:
    try:
        return parse_upload_time(entry.upload_time)
    except ValueError:
        return None


def kept_versions(
    entries: Iterable[IndexEntry], rule: RetentionRule, *, now: datetime
) -> frozenset[Version]:
    """The versions of one project's ``entries`` that ``rule`` keeps listed at ``now`` (an
    aware datetime). See the module's docstring for the rules."""
    files: dict[Version, list[IndexEntry]] = defaultdict(list)
    for entry in entries:
        version = release_version(entry)
        if version is not None:
            files[version].append(entry)
    newest_first = sorted(files, reverse=True)
    if rule.keeps_everything or not newest_first:
        return frozenset(newest_first)
    live = [v for v in newest_first if any(e.yanked is False for e in files[v])]
    kept = {newest_first[0], *live[:1]}
    if rule.keep_versions is not None and live:
        oldest_kept = live[: rule.keep_versions][-1]
        kept.update(v for v in newest_first if v >= oldest_kept)
    if rule.keep_days is not None:
        cutoff = now - timedelta(days=rule.keep_days)
        for version, version_files in files.items():
            times = [_released_at(e) for e in version_files]
            known = [t for t in times if t is not None]
            if len(known) < len(times) or min(known) > cutoff:
                kept.add(version)
    return frozenset(kept)


def retain(entries: Iterable[IndexEntry], rule: RetentionRule, *, now: datetime) -> Retained:
    """Split one project's ``entries`` into what its page lists and what it no longer lists
    under ``rule`` at ``now`` (an aware datetime)."""
    entries = tuple(entries)
    kept = kept_versions(entries, rule, now=now)
    listed: list[IndexEntry] = []
    delisted: list[IndexEntry] = []
    for entry in entries:
        version = release_version(entry)
        (listed if version is None or version in kept else delisted).append(entry)
    return Retained(listed=tuple(listed), delisted=tuple(delisted))
