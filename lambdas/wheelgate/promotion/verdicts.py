"""Signing released files: one verdict per file, written beside it before any page lists it.

A verdict follows a promoted set, never a copy: it is signed once every file of the promotion
is copied and verified (:mod:`~wheelgate.promotion.release`), by the step that publishes them
(the promotion's own invocation, or a fan-out execution's publish step), and before the pages
change (:mod:`~wheelgate.promotion.publish`). A page never lists a file without its verdict,
and a run rejected during its copies writes no verdict. For each
file: one KMS Sign of the DSSE PAE of its statement (:mod:`wheelgate.core.verdicts`) and one
PutObject of the envelope at ``<file>.verdict.json`` with ``If-None-Match: *`` (no lock headers:
it takes the bucket's default retention, as the file does). A file already released keeps its
verdict: it is read (one GET) instead of signed again; an older release without one gets one.

Before its first signature the writer makes sure the public keys document
(:data:`~wheelgate.core.layout.VERDICT_KEYS_KEY`) lists its key as the signing key, retiring
the previous one (a rotation), by a conditional write (If-None-Match / If-Match).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from typing import Protocol

from wheelgate.core.errors import PromotionRejected, Reason, TransientError
from wheelgate.core.layout import NIGHTLY, STAGING, VERDICT_KEYS_KEY, key_url
from wheelgate.core.planning import FileStep
from wheelgate.core.quotas import (
    VERDICT_SIGNS_PER_SECOND_FANOUT,
    VERDICT_SIGNS_PER_SECOND_PROMOTION,
)
from wheelgate.core.records import Promotion
from wheelgate.core.settings import PromoterSettings
from wheelgate.core.verdicts import (
    ENVELOPE_CONTENT_TYPE,
    KIND_IMPORT,
    KIND_OVERRIDE,
    KIND_PROMOTION,
    PAYLOAD_TYPE,
    EvidenceTest,
    KeyDocument,
    PublishedKey,
    VerdictFacts,
    VerdictFormatError,
    build_statement,
    envelope_bytes,
    evidence_tests,
    keyid_of,
    pae,
    parse_envelope,
    parse_key_document,
    pem_of,
    statement_bytes,
)
from wheelgate.index.pages import IndexEntry, upload_time
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.conditional import Put, Rendered, StateUpdate, read_modify_write
from wheelgate.storage.errors import PreconditionFailed


class Signer(Protocol):
    """Signs with one asymmetric key (:class:`~wheelgate.storage.signing.KmsSigner`)."""

    def public_key_der(self) -> bytes: ...

    def sign(self, message: bytes) -> bytes: ...


class Pacer:
    """Spaces calls to :meth:`wait` at least ``1 / per_second`` seconds apart, across threads.

    ``clock`` and ``sleep`` are ``time.monotonic`` and ``time.sleep`` (tests pass their own).
    """

    def __init__(
        self,
        per_second: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.interval = 1.0 / per_second
        self.clock = clock
        self.sleep = sleep
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        with self._lock:
            now = self.clock()
            turn = max(now, self._next)
            self._next = turn + self.interval
        if turn > now:
            self.sleep(turn - now)


class VerdictWriter:
    """Signs and stores the verdicts of released files in ``nightly`` with ``signer``.

    ``settings`` give the gate's identity (the nightly base URL) and the staging bucket that
    holds the manifests. ``timeVerified`` and a new key's ``valid_from`` are the decision's
    time, which each signing is given.
    Signatures are paced to stay within KMS's shared ECC request quota
    (``VERDICT_SIGNS_PER_SECOND_PROMOTION`` for a promotion's files,
    ``VERDICT_SIGNS_PER_SECOND_FANOUT`` for a fan-out execution's publish step); ``sleep``
    waits for the next turn.
    """

    def __init__(
        self,
        *,
        settings: PromoterSettings,
        nightly: Bucket,
        signer: Signer,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        self._promotion_pace = Pacer(VERDICT_SIGNS_PER_SECOND_PROMOTION, sleep=sleep)
        self._fanout_pace = Pacer(VERDICT_SIGNS_PER_SECOND_FANOUT, sleep=sleep)
        self.nightly = nightly
        self.signer = signer
        self.workers = nightly.limits.workers
        self._keyid: str | None = None
        self._lock = threading.Lock()

    def attest_all(
        self,
        promotion: Promotion,
        steps: Sequence[FileStep],
        entries: Sequence[IndexEntry],
        *,
        at: datetime,
        fanout: bool = False,
        nightly_keys: Collection[str] = (),
    ) -> list[IndexEntry]:
        """Write the verdict of every released file of a promoted set (``steps`` and their
        ``entries``, in the same order), verified ``at`` (the decision's time); return the
        entries, each now linking its verdict.

        Before the first signature it reads the verdict keys that may hold one: those of files
        already in nightly, those in ``nightly_keys`` (what verification listed), and with
        ``fanout`` (a fan-out execution's publish step, which also signs at its own pace) every
        one, so that a retried step keeps what it wrote. A verdict about other bytes refuses
        the set before anything is signed: raises
        :class:`~wheelgate.core.errors.PromotionRejected` (``nightly-conflict``), as for one
        written meanwhile (found on the conditional write).
        """
        pace = self._fanout_pace if fanout else self._promotion_pace
        held_keys = set(nightly_keys)
        to_read = [
            s
            for s in steps
            if fanout or not s.copy or NIGHTLY.verdict(s.index, s.file.filename) in held_keys
        ]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            held = dict(pool.map(self._held, to_read))
            return list(
                pool.map(
                    lambda job: self._attest(promotion, job[0], job[1], pace, held, at),
                    zip(steps, entries, strict=True),
                )
            )

    def _held(self, step: FileStep) -> tuple[str, bytes | None]:
        """The verdict nightly holds for ``step``'s file, if any: about its bytes, or refused
        (before the set's first signature)."""
        key = NIGHTLY.verdict(step.index, step.file.filename)
        found = self.nightly.get(key)
        if found is None:
            return key, None
        self._check_same(key, found[0], step)
        return key, found[0]

    def _attest(
        self,
        promotion: Promotion,
        step: FileStep,
        entry: IndexEntry,
        pace: Pacer,
        held: Mapping[str, bytes | None],
        at: datetime,
    ) -> IndexEntry:
        key = NIGHTLY.verdict(step.index, step.file.filename)
        if held.get(key) is not None:
            return replace(entry, verdict=True)
        keyid = self.publish_key(at)
        payload = statement_bytes(build_statement(self.facts(promotion, step, at)))
        pace.wait()
        signature = self.signer.sign(pae(PAYLOAD_TYPE, payload))
        try:
            self.nightly.put(
                key,
                envelope_bytes(payload, keyid=keyid, signature=signature),
                content_type=ENVELOPE_CONTENT_TYPE,
                if_none_match=True,
            )
        except PreconditionFailed:
            # An earlier attempt (a redelivery, a twin item) wrote it: same bytes or refuse.
            written = self.nightly.get(key)
            self._check_same(key, written[0] if written else None, step)
        return replace(entry, verdict=True)

    def facts(self, promotion: Promotion, step: FileStep, at: datetime) -> VerdictFacts:
        """What the verdict of ``step``'s file says, from the settled ``promotion`` verified
        ``at``."""
        outcome = next(s for s in promotion.sets if s.index == step.index)
        released = next((f for f in outcome.files if f.filename == step.file.filename), None)
        kind = KIND_PROMOTION
        tests: tuple[EvidenceTest, ...] = ()
        extra: dict[str, str] = {}
        override = promotion.override
        if override is not None:
            # An override skips the tests: its verdict names none, whatever ran.
            kind = KIND_OVERRIDE
        elif promotion.imported_from is not None:
            # An import is released on its integrity checks alone: who asked, and from where.
            kind = KIND_IMPORT
            source = (released.source if released else None) or promotion.imported_from
            override = {"by": promotion.actor or "", "reason": "imported by request"}
            extra = {"source": source}
        else:
            tests = evidence_tests(released.evidence if released else [], outcome.tests)
        return VerdictFacts(
            filename=step.file.filename,
            sha256=step.file.sha256,
            gate=self.settings.nightly_base_url,
            resource_uri=key_url(self.settings.nightly_base_url, step.target_key),
            at=upload_time(at),
            manifest_uri=f"s3://{self.settings.staging_bucket}/"
            f"{STAGING.manifest(promotion.run_id)}",
            manifest_sha256=promotion.manifest_sha256,
            run_id=promotion.run_id,
            commit=promotion.commit,
            index=step.index,
            tests=tests,
            override=override,
            kind=kind,
            extra=extra,
        )

    def publish_key(self, at: datetime) -> str:
        """Make sure the keys document lists the signer's key as the signing key (once per
        writer; valid from ``at`` when it is new), through the one conditional
        read-modify-write loop
        (:func:`~wheelgate.storage.conditional.read_modify_write`); return its keyid.
        Raises :class:`~wheelgate.core.errors.TransientError` when the document cannot be
        read or concurrent writers keep winning its conditional write."""
        with self._lock:
            if self._keyid is not None:
                return self._keyid
            der = self.signer.public_key_der()
            key = PublishedKey(keyid=keyid_of(der), pem=pem_of(der), valid_from=upload_time(at))

            def read() -> tuple[KeyDocument, str | None]:
                found = self.nightly.get(VERDICT_KEYS_KEY)
                if found is None:
                    return KeyDocument(), None
                try:
                    return parse_key_document(found[0]), found[1]
                except VerdictFormatError as exc:
                    raise TransientError(f"{VERDICT_KEYS_KEY}: {exc}") from exc

            def decide(current: KeyDocument) -> StateUpdate[None]:
                updated = current.with_signing_key(key)
                put = Put(VERDICT_KEYS_KEY, updated.to_bytes(), ENVELOPE_CONTENT_TYPE)
                return StateUpdate(None, updated != current, lambda: Rendered(put))

            read_modify_write(self.nightly, read, decide)
            self._keyid = key.keyid
            return key.keyid

    @staticmethod
    def _check_same(key: str, held: bytes | None, step: FileStep) -> None:
        """A verdict already at ``key`` must be about the file's bytes."""
        stated = None
        if held is not None:
            try:
                subjects = parse_envelope(held).statement().get("subject") or [{}]
                stated = subjects[0].get("digest", {}).get("sha256")
            except (VerdictFormatError, AttributeError, IndexError, TypeError):
                stated = None
        if stated != step.file.sha256:
            raise PromotionRejected(
                Reason.NIGHTLY_CONFLICT,
                f"{key} exists in nightly and is not a verdict about sha256 {step.file.sha256}",
                index=step.index,
            )
