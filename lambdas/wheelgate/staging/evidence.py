"""What a test's evidence vouches for, judged against bytes (``wheelgate report``).

A passed test vouches for a file only if the environment it ran in is the one users get. For
every file a test installed whose name and version the run's index offers (the run's staged
files and nightly's files of their closure, derived from objects:
:mod:`wheelgate.staging.offer`), the installed bytes must be one of the files offered for that
name and version; anything else is refused (``foreign-bytes``: another run's build, a file a
rewritten page pointed at). A version of an offered project that the index does not offer at
all (a newer tool from another index) gets a warning, not a refusal.

An environment (``wheelgate installed``) says which files are on disk, not which wheel they
came from. Each installed distribution is compared with the RECORD of each file offered for
its name and version (a few ranged reads each), and the one it matches is then streamed once
and its RECORD held to its own members (:mod:`wheelgate.staging.wheelbytes`): a wheel whose
RECORD describes an honest build while its members hold other bytes is refused
(``record-mismatch``), so the environment vouches only for a wheel whose verified members are
what it holds.

Refusals go into the manifest (the test's ``refused``); the promoter rejects the set with the
refusal's reason (:func:`wheelgate.core.evidence.check_refused_evidence`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from wheelgate.core.manifest import (
    EvidenceRefusal,
    InstalledFile,
    ManifestFile,
)
from wheelgate.core.manifest_limits import MAX_REFUSAL_MESSAGE
from wheelgate.core.wheelmembers import RecordMismatch
from wheelgate.core.wheelmeta import MAX_WHEEL_FILE_BYTES, WheelArchive, WheelMetadataError
from wheelgate.core.wheelrecord import (
    InstalledDistribution,
    RecordError,
    WheelContent,
    describe,
    differences,
    script_body,
    wheel_content,
)
from wheelgate.staging.environment import MAX_RECORD_BYTES, MAX_SCRIPT_BYTES, InstalledEnvironment
from wheelgate.staging.evidence_of_tests import Judged
from wheelgate.staging.installs import Install
from wheelgate.staging.offer import OfferedFile, RunOffer, run_offer
from wheelgate.staging.wheelbytes import VerifiedWheel, WheelUnreadable, read_verified_wheel
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.errors import PreconditionFailed

#: Where the docs say to install test tools apart from what the test installs.
TOOLS_HINT = "install test tools in a separate invocation or environment (docs/manifest.md)"


class EvidenceJudge:
    """Judges the evidence of one run's tests (module docstring). What the index of each
    directory offers is derived once; each wheel's RECORD is read once and each matched
    wheel streamed once, whichever tests installed it."""

    def __init__(
        self,
        staging: Bucket,
        nightly: Bucket,
        run_id: str,
        staged: Mapping[str, Sequence[ManifestFile]],
    ) -> None:
        self._staging = staging
        self._nightly = nightly
        self._run_id = run_id
        self._staged = staged
        self._offers: dict[str, RunOffer] = {}
        self._claims: dict[str, tuple[WheelContent, WheelArchive]] = {}
        self._verified: dict[str, VerifiedWheel | RecordMismatch] = {}
        self.wheels_streamed = 0

    def offer(self, index: str) -> RunOffer:
        """What the run's index of ``index`` offers."""
        if index not in self._offers:
            self._offers[index] = run_offer(
                self._staging, self._nightly, self._run_id, index, self._staged.get(index, ())
            )
        return self._offers[index]

    def files(self, index: str, installs: Sequence[Install], source: str) -> Judged:
        """Judge files a pip report or hash-pinned requirements say a test installed."""
        offer = self.offer(index)
        refused, warnings = [], []
        for item in installs:
            if item.project is None or item.version is None:
                continue
            judgement = offer.judge(item.project, item.version, item.sha256)
            if judgement == "foreign":
                refused.append(
                    _foreign(
                        item.filename,
                        f"evidence {source}: {item.describe()} is none of the files the run's "
                        f"index offers for {item.project} {item.version} "
                        f"({offer.describe(item.project, item.version)})",
                    )
                )
            elif judgement == "not-offered" and offer.offers_project(item.project):
                warnings.append(_not_offered(source, item.project, item.version))
        return Judged(
            installed=tuple(i.file for i in installs),
            refused=tuple(refused),
            warnings=tuple(warnings),
        )

    def environment(self, index: str, environment: InstalledEnvironment, source: str) -> Judged:
        """Judge an environment (``wheelgate installed``): each installed distribution whose
        release the index offers must be exactly one offered wheel, verified against its bytes.
        Raises ``ValueError`` when a wheel cannot be read, or two match one distribution."""
        offer = self.offer(index)
        found: list[InstalledFile] = []
        refused: list[EvidenceRefusal] = []
        warnings: list[str] = []
        for installed in environment.distributions:
            candidates = [
                f for f in offer.release(installed.name, installed.version) if _is_wheel(f)
            ]
            if not candidates:
                if offer.offers_project(installed.name) and not offer.release(
                    installed.name, installed.version
                ):
                    warnings.append(_not_offered(source, installed.name, installed.version))
                continue
            outcome = {
                f.sha256: self._claimed_differences(f, installed, environment) for f in candidates
            }
            matched = [f for f in candidates if not outcome[f.sha256]]
            if len(matched) > 1:
                raise ValueError(
                    f"evidence {source}: {installed.name} {installed.version} is the content "
                    f"of {len(matched)} offered wheels "
                    f"({', '.join(sorted(f.filename for f in matched))}); it does not say "
                    "which one the test installed"
                )
            if not matched:
                closest = min(candidates, key=lambda f: len(outcome[f.sha256]))
                refused.append(
                    _foreign(
                        closest.filename,
                        f"evidence {source}: {installed.name} {installed.version} is installed, "
                        "but it is none of the files the run's index offers for it (closest, "
                        f"{closest.filename}: {describe(outcome[closest.sha256])})",
                    )
                )
                continue
            [file] = matched
            verified = self._verify(file)
            if isinstance(verified, RecordMismatch):
                refused.append(
                    EvidenceRefusal(
                        reason="record-mismatch",
                        filename=file.filename,
                        message=f"evidence {source}: {verified}"[:MAX_REFUSAL_MESSAGE],
                    )
                )
                continue
            actual = differences(
                installed, verified.content, environment.scheme, verified.script_body_sha256
            )
            if actual:
                refused.append(
                    _foreign(
                        file.filename,
                        f"evidence {source}: {installed.name} {installed.version} is not the "
                        f"content of {file.filename} ({describe(actual)})",
                    )
                )
                continue
            found.append(InstalledFile(sha256=file.sha256, filename=file.filename))
        return Judged(installed=tuple(found), refused=tuple(refused), warnings=tuple(warnings))

    def _verify(self, file: OfferedFile) -> VerifiedWheel | RecordMismatch:
        if file.sha256 not in self._verified:
            try:
                self._verified[file.sha256] = read_verified_wheel(
                    file.bucket, file.key, file.filename, file.sha256
                )
            except RecordMismatch as exc:
                self._verified[file.sha256] = exc
            except WheelUnreadable as exc:
                raise ValueError(str(exc)) from None
            self.wheels_streamed += 1
        return self._verified[file.sha256]

    def _claimed_differences(
        self,
        file: OfferedFile,
        installed: InstalledDistribution,
        environment: InstalledEnvironment,
    ) -> list[str]:
        """What keeps ``installed`` from being the content ``file``'s RECORD claims (read with
        ranged reads): a cheap first look, which only the verified RECORD can confirm."""
        content, archive = self._claimed(file)

        def body_sha256(path: str) -> str | None:
            body = script_body(_read(archive, file, path, MAX_SCRIPT_BYTES))
            return None if body is None else hashlib.sha256(body).hexdigest()

        try:
            return differences(installed, content, environment.scheme, body_sha256)
        except RecordError as exc:
            raise ValueError(str(exc)) from None

    def _claimed(self, file: OfferedFile) -> tuple[WheelContent, WheelArchive]:
        cached = self._claims.get(file.sha256)
        if cached is not None:
            return cached
        try:
            archive = WheelArchive(file.reader(), file.filename)
            record_path = archive.dist_info_path("RECORD")
            content = wheel_content(
                file.filename,
                record_path.rpartition("/")[0],
                _read(archive, file, record_path, MAX_RECORD_BYTES),
                archive.read_dist_info("WHEEL", MAX_WHEEL_FILE_BYTES),
            )
        except (WheelMetadataError, RecordError) as exc:
            raise ValueError(f"{file.source}: {exc}") from None
        except PreconditionFailed:
            raise ValueError(f"{file.source} changed while it was read") from None
        self._claims[file.sha256] = (content, archive)
        return content, archive


def _read(archive: WheelArchive, file: OfferedFile, path: str, limit: int) -> bytes:
    try:
        return archive.read(path, limit)
    except WheelMetadataError as exc:
        raise ValueError(f"{file.source}: {exc}") from None
    except PreconditionFailed:
        raise ValueError(f"{file.source} changed while it was read") from None


def _is_wheel(file: OfferedFile) -> bool:
    return file.filename.endswith(".whl")


def _foreign(filename: str | None, message: str) -> EvidenceRefusal:
    return EvidenceRefusal(
        reason="foreign-bytes", filename=filename, message=message[:MAX_REFUSAL_MESSAGE]
    )


def _not_offered(source: str, project: str, version: str) -> str:
    return (
        f"{source}: {project} {version} is installed, a version the run's index does not "
        f"offer (another index's?); it is evidence of nothing: {TOOLS_HINT}"
    )
