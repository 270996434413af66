"""PEP 700 upload times: how index pages and records write a moment, and read one back. Pure."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    """The time now, in UTC: what a write is stamped with where the time decides nothing
    (a head's ``updated_at``, an Object Lock counted from the write). Where it decides
    (expiry, retention by days, leases, the stage window), the caller takes a clock."""
    return datetime.now(UTC)


def upload_time(moment: datetime) -> str:
    """PEP 700 timestamp: ISO 8601 in UTC with a ``Z`` suffix and microseconds."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_upload_time(at: str) -> datetime:
    """An upload-time string (:func:`upload_time`'s: ISO 8601 with a ``Z``) as an aware
    datetime; any other ISO 8601 time as ``datetime.fromisoformat`` reads it. Raises
    ``ValueError`` for a string that is not one."""
    return datetime.fromisoformat(at.replace("Z", "+00:00"))


def normalized_upload_time(value: object) -> str | None:
    """An upload time another tool wrote (ISO 8601, maybe without a zone: UTC), in
    :func:`upload_time`'s form; ``None`` for anything else."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = parse_upload_time(value)
    except ValueError:
        return None
    return upload_time(moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC))
