"""Typed promotion errors: a machine reason code plus a sentence for people.

The promoter maps these to the promotion record in one place (``promotion/recorder.py``);
nothing matches on message text.
"""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """Why a manifest was not promoted. Stable codes: records, metrics and docs use them."""

    INVALID_JSON = "invalid-json"
    INVALID_MANIFEST = "invalid-manifest"
    UNSUPPORTED_SCHEMA = "unsupported-schema"
    MANIFEST_TOO_LARGE = "manifest-too-large"
    RUN_ID_MISMATCH = "run-id-mismatch"
    UNTRUSTED_WRITER = "untrusted-writer"
    INDEX_NOT_ALLOWED = "index-not-allowed"
    TESTS_FAILED = "tests-failed"
    TESTS_MISSING = "tests-missing"
    BLOCKED_BY_OTHER_SET = "blocked-by-other-set"
    FILE_MISSING = "file-missing"
    FILE_NOT_LISTED = "file-not-listed"
    SIZE_MISMATCH = "size-mismatch"
    CHECKSUM_MISMATCH = "checksum-mismatch"
    CHECKSUM_UNAVAILABLE = "checksum-unavailable"
    COMMIT_MISMATCH = "commit-mismatch"
    NIGHTLY_CONFLICT = "nightly-conflict"
    REPLAY_CONFLICT = "replay-conflict"
    METADATA_UNREADABLE = "metadata-unreadable"
    COPY_VERIFICATION_FAILED = "copy-verification-failed"
    OVERRIDE_NOT_APPLICABLE = "override-not-applicable"
    METADATA_MISMATCH = "metadata-mismatch"
    WHEEL_NAME_MISMATCH = "wheel-name-mismatch"
    RELEASE_CONFLICT = "release-conflict"
    #: A file would change what ``==<public version>`` installs through a local version label.
    LOCAL_LABEL_CONFLICT = "local-label-conflict"
    #: A wheel joining a released version would be what ``==<version>`` installs instead of a
    #: released wheel on some interpreter (its tag ranks first there).
    TAG_SHADOWING = "tag-shadowing"
    #: A staged file whose bytes no passed test of its set installed.
    UNTESTED_FILE = "untested-file"
    #: A passed test's evidence names a staged or nightly wheel whose RECORD does not
    #: describe the wheel's own members (``wheelgate report`` refused it).
    RECORD_MISMATCH = "record-mismatch"
    #: A passed test installed bytes of a name and version the run's index offers that are
    #: none of the files it offers for them (another run's build, a rewritten page).
    FOREIGN_BYTES = "foreign-bytes"
    #: A manifest (v1) that does not say what its tests installed.
    EVIDENCE_MISSING = "evidence-missing"
    #: An import request naming a source outside ``import_sources`` (or a WheelGate bucket).
    IMPORT_SOURCE_NOT_ALLOWED = "import-source-not-allowed"
    #: An import that found nothing it could import.
    IMPORT_EMPTY = "import-empty"
    #: A source object that is not a wheel or sdist (refused per file by an import).
    NOT_A_DISTRIBUTION = "not-a-distribution"
    #: A source object that changed since the import gathered it.
    SOURCE_CHANGED = "source-changed"
    #: A nightly index page the promotion must change is not the page it should be (one index
    #: directory inside another, without an allow-list to refuse it first).
    PAGE_UNREADABLE = "page-unreadable"


#: Reasons that say the bytes or their provenance are not what they should be: a checksum,
#: size or commit that differs, files no passed test installed, wheel metadata that does not
#: match, a release conflicting with what nightly holds, a manifest from an untrusted writer.
#: Someone must look (the stack's alarm pages on them). Every other reason (``tests-failed``,
#: ``tests-missing``, an invalid manifest...) is the CI run's own business: routine, shown on
#: the dashboard and the status page.
INTEGRITY_REASONS = frozenset(
    {
        Reason.CHECKSUM_MISMATCH,
        Reason.CHECKSUM_UNAVAILABLE,
        Reason.SIZE_MISMATCH,
        Reason.COMMIT_MISMATCH,
        Reason.COPY_VERIFICATION_FAILED,
        Reason.UNTESTED_FILE,
        Reason.RECORD_MISMATCH,
        Reason.FOREIGN_BYTES,
        Reason.EVIDENCE_MISSING,
        Reason.METADATA_MISMATCH,
        Reason.METADATA_UNREADABLE,
        Reason.WHEEL_NAME_MISMATCH,
        Reason.RELEASE_CONFLICT,
        Reason.LOCAL_LABEL_CONFLICT,
        Reason.TAG_SHADOWING,
        Reason.NIGHTLY_CONFLICT,
        Reason.REPLAY_CONFLICT,
        Reason.UNTRUSTED_WRITER,
    }
)


def is_integrity_reason(reason: str | None) -> bool:
    """Whether the reason code ``reason`` (a record's) is one of :data:`INTEGRITY_REASONS`."""
    return reason is not None and reason in INTEGRITY_REASONS


class PromotionRejected(Exception):
    """A permanent refusal: retrying the same manifest cannot succeed.

    ``index`` names the index directory of the set at fault, when there is one.
    """

    def __init__(self, reason: Reason, message: str, *, index: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.index = index

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


class TransientError(Exception):
    """A failure worth retrying (throttling, a lost race, a service error)."""
