"""Applying a validated deps.yml: cache files in S3, mirror wheels through the gate.

Adapters take their clients: :class:`Fetcher` an ``urllib`` opener, the sync functions
:class:`~wheelgate.storage.bucket.Bucket` objects. Nothing here reads the environment.

- ``files``: HEAD the target; missing → stream the download to a temporary file (constant
  memory) verifying size and SHA-256, then upload it with its SHA-256 (S3 verifies it) and
  ``If-None-Match: *``, so a concurrent sync never overwrites; the same bytes present → skip;
  other bytes present → fail, never overwrite.
- ``python``: a wheel the nightly page of its index already lists with the same SHA-256 is
  skipped (other bytes: fail). The others are downloaded and staged with
  :func:`wheelgate.staging.stage` under the mirror run (``deps-<hash>``); :func:`report_mirror`
  then writes the run's manifest, with the review as its one test and the reviewed pins as
  that test's evidence, and the promoter (the only writer of nightly) decides as for any run.
"""

from __future__ import annotations

import hashlib
import http.client
import mimetypes
import random
import tempfile
import time
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal
from urllib.parse import urlsplit

from wheelgate.core.layout import STAGING
from wheelgate.core.manifest import InstalledFile, Outcome
from wheelgate.core.objects import ObjectInfo
from wheelgate.core.redact import redact_urls
from wheelgate.deps.mirror_runs import REVIEW_TEST
from wheelgate.deps.targets import FileTarget, WheelTarget
from wheelgate.index.pages import IndexEntry
from wheelgate.index.store import IndexStore
from wheelgate.staging.local_artifacts import inspect_files
from wheelgate.staging.manifest_building import TestSpec, build_manifest
from wheelgate.staging.stage import stage
from wheelgate.staging.staged_files import staged_sets
from wheelgate.storage.bucket import SINGLE_REQUEST_LIMIT, UPLOAD_PART_SIZE, Bucket
from wheelgate.storage.errors import PreconditionFailed

#: Download read size: large enough for throughput, small enough to keep memory flat.
CHUNK_BYTES = 1024 * 1024
#: User metadata on cached files: where the bytes came from.
META_SOURCE_URL = "wheelgate-source-url"
DEFAULT_CONTENT_TYPE = "application/octet-stream"
#: Statuses worth another try: timeouts, throttling and server errors.
_RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})

Action = Literal[
    "upload", "stage", "skip", "conflict", "uploaded", "staged", "skipped", "failed", "held"
]
Progress = Callable[[str, int, int | None], None]


class DownloadError(Exception):
    """A download that failed for good: refused (4xx), wrong size or SHA-256, or still failing
    after the retries. ``transient`` tells whether the last failure was worth retrying."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        # A download URL may carry a signed-query token or a password: never in a message.
        super().__init__(redact_urls(message))
        self.transient = transient


class _HttpsOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects (download hosts send files from CDNs) but never off https, and, given
    ``hosts`` (``validation.hosts``), never to another host."""

    def __init__(self, hosts: frozenset[str] | None = None) -> None:
        super().__init__()
        self.hosts = hosts

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        if not newurl.startswith("https://"):
            raise urllib.error.HTTPError(
                req.full_url, code, f"redirect to non-https {newurl!r} refused", headers, fp
            )
        host = urlsplit(newurl).hostname
        if self.hosts is not None and host not in self.hosts:
            raise urllib.error.HTTPError(
                req.full_url,
                code,
                f"redirect to {newurl!r} refused: host {host!r} is not in validation.hosts",
                headers,
                fp,
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def https_opener(
    ca_file: str | None = None, hosts: frozenset[str] | None = None
) -> urllib.request.OpenerDirector:
    """An opener verifying certificates (system store, ``SSL_CERT_FILE``, or ``ca_file``)
    that follows redirects only to https and, given ``hosts``, only to those hosts."""
    import ssl

    context = ssl.create_default_context(cafile=ca_file)
    return urllib.request.build_opener(
        urllib.request.HTTPSHandler(context=context), _HttpsOnlyRedirects(hosts)
    )


@dataclass
class Fetcher:
    """Downloads with retries and exponential backoff on transient errors (connection reset,
    timeouts, truncated bodies, 408/429/5xx). ``timeout`` bounds each connect and read."""

    opener: urllib.request.OpenerDirector
    timeout: float = 60.0
    retries: int = 4
    backoff: float = 0.5
    sleep: Callable[[float], None] = time.sleep
    user_agent: str = "wheelgate-deps"

    def download(
        self,
        url: str,
        destination: Path,
        *,
        sha256: str,
        size: int | None,
        progress: Callable[[int, int | None], None] | None = None,
    ) -> int:
        """Stream ``url`` into ``destination``; return its size.

        Raises :class:`DownloadError` if the bytes are not ``size`` long or do not hash to
        ``sha256`` (the file is then removed), or on a failure that persists after the retries.
        """
        attempt = 0
        while True:
            try:
                return self._once(url, destination, sha256, size, progress)
            except DownloadError as exc:
                destination.unlink(missing_ok=True)
                if not exc.transient or attempt >= self.retries:
                    if exc.transient:
                        raise DownloadError(
                            f"{exc} (gave up after {attempt + 1} attempts)", transient=True
                        ) from exc
                    raise
            delay = self.backoff * 2**attempt * random.uniform(0.5, 1.0)  # noqa: S311
            self.sleep(delay)
            attempt += 1

    def _once(
        self,
        url: str,
        destination: Path,
        sha256: str,
        size: int | None,
        progress: Callable[[int, int | None], None] | None,
    ) -> int:
        request = urllib.request.Request(url, headers={"User-Agent": self.user_agent})  # noqa: S310
        digest = hashlib.sha256()
        received = 0
        try:
            with self.opener.open(request, timeout=self.timeout) as response:
                announced = response.headers.get("Content-Length")
                expected = size if size is not None else (int(announced) if announced else None)
                if size is not None and announced and int(announced) != size:
                    raise DownloadError(
                        f"{url}: server announces {announced} bytes, deps.yml says {size}"
                    )
                with destination.open("wb") as out:
                    while chunk := response.read(CHUNK_BYTES):
                        digest.update(chunk)
                        out.write(chunk)
                        received += len(chunk)
                        if size is not None and received > size:
                            raise DownloadError(f"{url}: more than the {size} bytes expected")
                        if progress:
                            progress(received, expected)
                if announced and received != int(announced):
                    raise DownloadError(
                        f"{url}: connection closed after {received} of {announced} bytes",
                        transient=True,
                    )
        except urllib.error.HTTPError as exc:
            raise DownloadError(
                f"{url}: HTTP {exc.code} {exc.reason}", transient=exc.code in _RETRY_STATUSES
            ) from exc
        except urllib.error.URLError as exc:
            transient = isinstance(exc.reason, OSError)
            raise DownloadError(f"{url}: {exc.reason}", transient=transient) from exc
        except TimeoutError as exc:
            raise DownloadError(
                f"{url}: timed out after {self.timeout:g} s", transient=True
            ) from exc
        except (http.client.HTTPException, OSError) as exc:
            # Resets, truncated bodies and TLS errors mid-body (ssl.SSLError is an OSError).
            raise DownloadError(
                f"{url}: connection broken after {received} bytes ({exc!r})", transient=True
            ) from exc
        if size is not None and received != size:
            raise DownloadError(f"{url}: got {received} bytes, deps.yml says {size}")
        if digest.hexdigest() != sha256:
            raise DownloadError(
                f"{url}: SHA-256 is {digest.hexdigest()}, deps.yml says {sha256}; not uploaded"
            )
        return received


@dataclass(frozen=True)
class Row:
    """One line of the plan or the summary."""

    entry: str
    target: str
    action: Action
    bytes: int = 0
    seconds: float = 0.0
    detail: str = ""


# -- files --------------------------------------------------------------------------------


def content_type(key: str) -> str:
    """A sensible Content-Type for a cached file (``application/octet-stream`` if unknown).

    Compressed tarballs are served as their compression (``application/gzip``), not as
    ``application/x-tar`` with an encoding, so clients download them as they are.
    """
    kind, encoding = mimetypes.guess_type(key, strict=False)
    if encoding is not None:
        return {
            "gzip": "application/gzip",
            "bzip2": "application/x-bzip2",
            "xz": "application/x-xz",
        }.get(encoding, DEFAULT_CONTENT_TYPE)
    return kind or DEFAULT_CONTENT_TYPE


def _compare(head: ObjectInfo, sha256: str, size: int | None) -> str | None:
    """Why the stored object is not the expected bytes, or ``None`` when it is."""
    if head.sha256 is None:
        return f"exists without a recorded SHA-256 ({head.size} bytes); not overwritten"
    if head.sha256 != sha256 or (size is not None and head.size != size):
        return f"exists with other bytes (sha256 {head.sha256}, {head.size} bytes); not overwritten"
    return None


def plan_file(bucket: Bucket, target: FileTarget) -> Row:
    """What syncing ``target`` would do: ``upload``, ``skip`` or ``conflict``."""
    where = f"s3://{bucket.name}/{target.key}"
    head = bucket.head(target.key)
    if head is None:
        return Row(target.entry, where, "upload", target.size or 0)
    problem = _compare(head, target.sha256, target.size)
    if problem:
        return Row(target.entry, where, "conflict", head.size, detail=problem)
    return Row(target.entry, where, "skip", head.size, detail="same SHA-256 present")


def sync_file(
    bucket: Bucket,
    target: FileTarget,
    fetcher: Fetcher,
    workdir: Path,
    *,
    progress: Progress | None = None,
    single_request_limit: int = SINGLE_REQUEST_LIMIT,
) -> Row:
    """Cache one file (see the module docstring); never raises for the entry's own failure (a
    download that failed, other bytes at its key), which is returned as a ``failed`` row. A
    storage error (:mod:`wheelgate.storage.errors`) is raised: it is the bucket's, not the
    entry's, and ends the sync with exit 4."""
    started = time.monotonic()
    where = f"s3://{bucket.name}/{target.key}"

    def row(action: Action, size: int = 0, detail: str = "") -> Row:
        return Row(target.entry, where, action, size, time.monotonic() - started, detail)

    try:
        planned = plan_file(bucket, target)
        if planned.action != "upload":
            failed = planned.action == "conflict"
            return row("failed" if failed else "skipped", planned.bytes, planned.detail)
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            path = Path(tmp) / "download"
            size = fetcher.download(
                target.url,
                path,
                sha256=target.sha256,
                size=target.size,
                progress=(lambda done, total: progress(target.entry, done, total))
                if progress
                else None,
            )
            metadata = {META_SOURCE_URL: target.url} if target.url.isascii() else {}
            try:
                bucket.upload_file(
                    path,
                    target.key,
                    sha256=target.sha256,
                    content_type=content_type(target.key),
                    metadata=metadata,
                    if_none_match=True,
                    single_request_limit=single_request_limit,
                    part_size=UPLOAD_PART_SIZE,
                )
            except PreconditionFailed:
                # Someone else wrote the key since our HEAD: fine if it is the same bytes.
                head = bucket.head(target.key)
                problem = "vanished" if head is None else _compare(head, target.sha256, size)
                if problem:
                    return row("failed", size, f"written concurrently and {problem}")
                return row("skipped", size, "written concurrently with the same bytes")
        return row("uploaded", size)
    except DownloadError as exc:
        return row("failed", detail=str(exc))


def sync_files(
    targets: Sequence[FileTarget],
    buckets: Mapping[str, Bucket],
    fetcher: Fetcher,
    workdir: Path,
    *,
    jobs: int = 4,
    progress: Progress | None = None,
    single_request_limit: int = SINGLE_REQUEST_LIMIT,
) -> list[Row]:
    """Sync every file target, at most ``jobs`` at a time; rows in the targets' order."""

    def one(target: FileTarget) -> Row:
        return sync_file(
            buckets[target.bucket],
            target,
            fetcher,
            workdir,
            progress=progress,
            single_request_limit=single_request_limit,
        )

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, targets))


# -- python -------------------------------------------------------------------------------


@dataclass
class MirrorPlan:
    """Per (wheel, index directory): ``stage``, ``skip`` (in nightly with the same SHA-256) or
    ``conflict`` (in nightly with other bytes)."""

    rows: list[tuple[WheelTarget, str, Row]] = field(default_factory=list)

    @property
    def conflicts(self) -> list[Row]:
        return [r for _, _, r in self.rows if r.action == "conflict"]

    @property
    def to_stage(self) -> dict[str, list[WheelTarget]]:
        by_index: dict[str, list[WheelTarget]] = defaultdict(list)
        for wheel, index, row in self.rows:
            if row.action == "stage":
                by_index[index].append(wheel)
        return dict(by_index)


def plan_mirror(nightly: Bucket, wheels: Iterable[WheelTarget]) -> MirrorPlan:
    """Compare each wheel with the nightly history (archive page) of each of its index
    directories: a file retention took off the listing is still released."""
    pages = IndexStore(nightly)
    listed: dict[tuple[str, str], dict[str, IndexEntry]] = {}
    plan = MirrorPlan()
    for wheel in wheels:
        for index in wheel.indexes:
            if (index, wheel.project) not in listed:
                page, _ = pages.read_history(index, wheel.project)
                listed[(index, wheel.project)] = {e.filename: e for e in page.entries}
            found = listed[(index, wheel.project)].get(wheel.filename)
            where = f"{index}/{wheel.filename}"
            if found is None:
                row = Row(wheel.entry, where, "stage", wheel.size or 0)
            elif found.sha256 != wheel.sha256:
                row = Row(
                    wheel.entry,
                    where,
                    "conflict",
                    found.size,
                    detail=f"nightly has other bytes (sha256 {found.sha256}); not replaced",
                )
            else:
                row = Row(wheel.entry, where, "skip", found.size, detail="in nightly")
            plan.rows.append((wheel, index, row))
    return plan


def stage_mirror(
    *,
    plan: MirrorPlan,
    staging: Bucket,
    nightly: Bucket,
    nightly_base_url: str,
    run_id: str,
    commit: str,
    fetcher: Fetcher,
    workdir: Path,
    jobs: int = 4,
    progress: Progress | None = None,
) -> list[Row]:
    """Download the wheels ``plan`` stages and stage them under ``run_id``.

    The run is staged whole or not at all: on a conflict or a failed download nothing is
    staged (the others are ``held``), since the promoter promotes a set whole.
    """
    rows = {id(r): r for _, _, r in plan.rows}
    if plan.conflicts:
        return [_settle(r, "failed" if r.action == "conflict" else "held") for r in rows.values()]
    wanted = {w.filename: w for ws in plan.to_stage.values() for w in ws}
    downloads: dict[str, tuple[Path, float] | DownloadError] = {}

    def fetch(wheel: WheelTarget) -> None:
        started = time.monotonic()
        directory = workdir / wheel.sha256
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / wheel.filename
        try:
            fetcher.download(
                wheel.url,
                path,
                sha256=wheel.sha256,
                size=wheel.size,
                progress=(lambda d, t: progress(wheel.filename, d, t)) if progress else None,
            )
        except DownloadError as exc:
            downloads[wheel.filename] = exc
        else:
            downloads[wheel.filename] = (path, time.monotonic() - started)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(fetch, wanted.values()))
    failed = {name: e for name, e in downloads.items() if isinstance(e, DownloadError)}
    out: list[Row] = []
    if failed:
        for wheel, _index, row in plan.rows:
            if wheel.filename in failed:
                out.append(_settle(row, "failed", str(failed[wheel.filename])))
            else:
                out.append(_settle(row, "held" if row.action == "stage" else "skipped"))
        return out
    fetched = {n: d for n, d in downloads.items() if not isinstance(d, DownloadError)}
    for index, index_wheels in sorted(plan.to_stage.items()):
        artifacts = inspect_files([fetched[w.filename][0] for w in index_wheels])
        stage(
            staging=staging,
            nightly=nightly,
            nightly_base_url=nightly_base_url,
            run_id=run_id,
            index=index,
            commit=commit,
            artifacts=artifacts,
            # The mirror role may not write index pages; the promoter refreshes them.
            publish_pages=False,
        )
    for wheel, _index, row in plan.rows:
        if row.action == "stage":
            path, seconds = fetched[wheel.filename]
            out.append(_settle(row, "staged", seconds=seconds, size=path.stat().st_size))
        else:
            out.append(_settle(row, "skipped"))
    return out


def _settle(
    row: Row, action: Action, detail: str = "", *, seconds: float = 0.0, size: int | None = None
) -> Row:
    return Row(
        row.entry,
        row.target,
        action,
        row.bytes if size is None else size,
        seconds,
        detail or row.detail,
    )


def report_mirror(
    *,
    staging: Bucket,
    run_id: str,
    commit: str,
    review_url: str,
    wheels: Sequence[WheelTarget],
) -> str | None:
    """Write the mirror run's manifest: everything staged for ``run_id``, each set with the one
    test ``deps-review`` passed at ``review_url``. A mirror run installs nothing: the review's
    evidence is the reviewed pins, the SHA-256 of each of ``wheels`` bound for the set's index
    directory (the promoter releases only staged files of those bytes). Returns the manifest's
    SHA-256, whose decision to wait for (``None``: nothing staged, no manifest written). Raises
    ``ValueError`` for an invalid commit or URL."""
    staged = staged_sets(staging, run_id)
    if not staged:
        return None
    tests = [
        TestSpec(
            index,
            REVIEW_TEST,
            Outcome.PASSED,
            review_url,
            installed=tuple(
                {
                    w.sha256: InstalledFile(sha256=w.sha256, filename=w.filename)
                    for w in wheels
                    if index in w.indexes
                }.values()
            ),
        )
        for index in staged
    ]
    body = build_manifest(run_id=run_id, commit=commit, staged=staged, tests=tests).to_json()
    staging.put(STAGING.manifest(run_id), body.encode(), content_type="application/json")
    return hashlib.sha256(body.encode()).hexdigest()
