"""How the pages (status site, run history) and the terminal show sizes, record times and
links to people.

Pure functions, with no dependency beyond the base install: ``wheelgate status`` and
``wheelgate runs`` use them as the pages do.
"""

from __future__ import annotations

from datetime import UTC
from urllib.parse import urlsplit

from wheelgate.core.timestamps import parse_upload_time


def human_size(size: int) -> str:
    """``size`` bytes in B, KiB, MiB or GiB, one decimal from KiB on."""
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def shown_time(at: str) -> tuple[str, str] | None:
    """A record's time ``at`` as people read it (``2026-11-30 04:00 UTC``) and as machines do
    (``2026-11-30T04:00:12Z``); ``None`` when it is not a time."""
    try:
        moment = parse_upload_time(at).astimezone(UTC)
    except ValueError:
        return None
    return moment.strftime("%Y-%m-%d %H:%M UTC"), moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def safe_url(url: str | None) -> str | None:
    """``url`` if it is an absolute http(s) URL fit for an ``href``, else None."""
    if not url or any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    return url
