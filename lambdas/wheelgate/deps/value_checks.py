"""Checks of one value of a ``deps.yml``: a cache key, a download URL, a pinned requirement, a
wheel's file name. Each says why the value is refused (``None``: it is not)."""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Sequence
from urllib.parse import urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from wheelgate.core.redact import redact_urls
from wheelgate.deps.deps_file import KEY_PATTERN, MAX_KEY_BYTES, Validation

_KEY = re.compile(KEY_PATTERN)


def key_problem(key: str) -> str | None:
    """Why ``key`` is not a safe cache key, or ``None``."""
    if not key:
        return "key is empty"
    if any(unicodedata.category(c).startswith("C") for c in key):
        return f"key {key!r} contains control characters"
    if "\\" in key:
        return f"key {key!r} contains a backslash"
    if key.startswith("/"):
        return f"key {key!r} starts with '/'"
    if "//" in key:
        return f"key {key!r} contains '//'"
    if ".." in key:
        return f"key {key!r} contains '..'"
    if len(key.encode()) > MAX_KEY_BYTES:
        return f"key {key!r} is longer than {MAX_KEY_BYTES} bytes"
    if not _KEY.fullmatch(key):
        return (
            f"key {key!r} must be '/'-separated segments of letters, digits and "
            "! _ . * ' ( ) + = @ , ~ - (no trailing '/')"
        )
    return None


def url_problem(url: str, hosts: frozenset[str] | None) -> str | None:
    """Why ``url`` may not be downloaded from, or ``None``. ``hosts=None``: not checked. The
    reason quotes the URL with its credentials masked (:func:`redact_urls`)."""
    problem = _url_problem(url, hosts)
    return redact_urls(problem) if problem else None


def _url_problem(url: str, hosts: frozenset[str] | None) -> str | None:
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError as exc:
        return f"URL {url!r} is malformed: {exc}"
    if parts.scheme != "https":
        return f"URL {url!r} is not https"
    if not host:
        return f"URL {url!r} has no host"
    if parts.username is not None or parts.password is not None:
        return f"URL {url!r} carries credentials; deps.yml is public, use none"
    if any(c.isspace() or unicodedata.category(c).startswith("C") for c in url):
        return f"URL {url!r} contains spaces or control characters"
    if hosts is not None and host not in hosts:
        return f"host {host!r} of URL {url!r} is not in validation.hosts"
    return None


def pinned_version(requirement: str) -> tuple[str, Version]:
    """``(canonical name, version)`` of a ``name==version`` requirement.

    Raises ``ValueError`` if it does not parse, or is not pinned to one exact version with
    ``==`` (no wildcard, no extras, markers or URL: a mirror copies files, it resolves nothing).
    """
    try:
        parsed = Requirement(requirement)
    except InvalidRequirement as exc:
        reason = str(exc).splitlines()[0]
        raise ValueError(f"requirement {requirement!r} cannot be parsed: {reason}") from exc
    specs = list(parsed.specifier)
    if parsed.url or parsed.marker or parsed.extras:
        raise ValueError(
            f"requirement {requirement!r} must be a plain name==version (no URL, extras or markers)"
        )
    if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
        raise ValueError(f"requirement {requirement!r} is not pinned with == to one version")
    try:
        return canonicalize_name(parsed.name), Version(specs[0].version)
    except InvalidVersion as exc:  # pragma: no cover - packaging rejects it while parsing
        raise ValueError(f"requirement {requirement!r}: {exc}") from exc


def _matches(value: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(value, p) for p in patterns)


def wheel_problem(
    filename: str, project: str, version: Version, rules: Validation | None
) -> str | None:
    """Why ``filename`` is not a wheel of ``project`` ``version`` with allowed tags, or None."""
    if not filename.endswith(".whl"):
        return f"{filename!r} is not a wheel file name (.whl)"
    try:
        name, wheel_version, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename as exc:
        return f"{filename!r} is not a valid wheel file name: {exc}"
    if name != project or wheel_version != version:
        return f"wheel {filename!r} is not {project} {version} (it is {name} {wheel_version})"
    if rules is None:
        return None
    python = sorted({t.interpreter for t in tags if not _matches(t.interpreter, rules.python_tags)})
    platforms = sorted({t.platform for t in tags if not _matches(t.platform, rules.platforms)})
    if python:
        return f"wheel {filename!r} has Python tag(s) {', '.join(python)} not in python_tags"
    if platforms:
        return f"wheel {filename!r} has platform tag(s) {', '.join(platforms)} not in platforms"
    return None
