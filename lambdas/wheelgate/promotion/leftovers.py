"""What a rejection leaves in nightly, accounted for.

An attempt can copy part of a set into nightly and then fail (a fault, a timeout), and the next
attempt can find the set no longer verifiable: a staged file expired or was removed in between
and no copy of it was made, or a copy refused. Those copies stay: nightly's Object Lock keeps
them. Where the set can still be verified, verification completes it instead (the copy stands
for a staged file that is gone when S3's SHA-256 of it is the manifest's,
:func:`~wheelgate.core.planning.plan_set`). Otherwise the rejection names them: each rejected
set's ``left_in_nightly`` in the record (the status page shows them), and one note per file
under ``records/_left/<index>/`` (:class:`~wheelgate.core.records.LeftInNightly`), which
``wheelgate index rebuild`` reads so that it never lists them either. No index page ever does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.layout import METADATA_SUFFIX, STAGING, VERDICT_SUFFIX
from wheelgate.core.records import LeftInNightly, SetOutcome, State
from wheelgate.promotion.verification import SetVerifier
from wheelgate.storage.bucket import Bucket


def account_for_copies(
    *,
    verifier: SetVerifier,
    staging: Bucket,
    run_id: str,
    rejection: PromotionRejected,
    sets: Iterable[tuple[str, Sequence[str]]],
    at: str,
) -> tuple[Mapping[str, list[str]], PromotionRejected]:
    """Find what earlier attempts at ``run_id`` left in nightly for ``sets`` (index directory,
    file names), note each file under ``records/_left/``, and return the keys left by index
    and ``rejection`` with a message that counts them (the same when nothing was left).

    Call it under the directories' leases, before the rejection is recorded.
    """
    left: dict[str, list[str]] = {}
    for index, filenames in sets:
        keys = verifier.unlisted_copies(index, filenames)
        if not keys:
            continue
        left[index] = keys
        files = sorted({_file_of(k) for k in keys})
        for key in files:
            filename = key.rsplit("/", 1)[-1]
            note = LeftInNightly(
                run_id=run_id,
                index=index,
                filename=filename,
                keys=[k for k in keys if _file_of(k) == key],
                reason=rejection.reason.value,
                at=at,
            )
            staging.put(
                STAGING.left_in_nightly(index, filename),
                note.model_dump_json().encode(),
                content_type="application/json",
            )
    count = sum(len(keys) for keys in left.values())
    if not count:
        return left, rejection
    message = (
        f"{rejection.message}; {count} object(s) an earlier attempt copied stay in nightly "
        "(Object Lock), listed on no index page: see left_in_nightly"
    )
    return left, PromotionRejected(rejection.reason, message, index=rejection.index)


def _file_of(key: str) -> str:
    """The nightly key of the file ``key`` is, or is the core metadata or verdict of."""
    return key.removesuffix(METADATA_SUFFIX).removesuffix(VERDICT_SUFFIX)


def rejected_outcomes(
    indexes: Iterable[str], rejection: PromotionRejected, left: Mapping[str, list[str]]
) -> list[SetOutcome]:
    """The outcome of each accepted set of ``indexes`` under ``rejection``: its reason where
    the rejection is the set's own (or names no set), else ``blocked-by-other-set``; with the
    keys earlier attempts ``left`` in nightly for it."""
    return [
        SetOutcome(
            index=index,
            state=State.REJECTED,
            reason=(
                rejection.reason.value
                if rejection.index in (None, index)
                else Reason.BLOCKED_BY_OTHER_SET.value
            ),
            message=rejection.message,
            left_in_nightly=left.get(index, []),
        )
        for index in indexes
    ]
