"""How the status site and the terminal show sizes and record times to people.

Pure functions, with no dependency beyond the base install: ``wheelgate status`` and
``wheelgate runs`` use them as the pages do.
"""

from __future__ import annotations

from datetime import UTC

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
