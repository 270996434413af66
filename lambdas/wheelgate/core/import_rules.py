"""Import requests: bring a prefix of an existing bucket into a nightly index directory. Pure.

An import travels as a request where manifests go (``manifests/import-<id>.json``), written by
the break-glass role only (the bucket policy and the promoter both check the writer), and the
promoter carries it out: it copies the source's files into staging (S3 computes each one's
SHA-256 during the copy), refuses per file what a promotion would refuse, and releases the rest
as a run with provenance instead of tests. This module holds the rules both the promoter and
``wheelgate import --dry-run`` apply:

- :func:`import_id`: the request's id, from its source, directory and ``since`` alone, so that
  asking again for the same import (or a redelivery) finds what an earlier attempt gathered;
- :func:`select_files`: which objects of the source listing are candidates (wheels and sdists
  directly under the prefix, written at or after ``since``) and which are refused
  (``not-a-distribution``);
- :class:`SourceFacts`: what the source's own index pages (PEP 503 HTML or PEP 691 JSON,
  ``<prefix><project>/index.json|html``, written by another tool, read by
  :func:`wheelgate.promotion.importing.sources.read_source_page`) say of each file: its
  SHA-256, yank state and upload time;
- :func:`screen`: per file, the checks that need the bytes' SHA-256 (the source index's hash,
  the same name in nightly, the same release under another name in nightly or at the source).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.import_sources import ImportSource, parse_source_uri
from wheelgate.core.layout import IMPORT_RUN_PREFIX, METADATA_SUFFIX, PAGE_NAMES
from wheelgate.core.manifest import IndexDir, RunId, parse_distribution_filename
from wheelgate.core.objects import ListedObject
from wheelgate.core.records import RefusedFile
from wheelgate.core.release_rules import LabelBook, ReleaseBook, TagBook
from wheelgate.core.requests import read_request

SCHEMA_IMPORT_V1 = "wheelgate/import/v1"


def _source_uri(value: str) -> str:
    parse_source_uri(value)
    return value


SourceUri = Annotated[str, Field(max_length=1024), AfterValidator(_source_uri)]


def import_id(source: str, index: str, since: datetime | None) -> str:
    """The id of the import of ``source`` into ``index`` (``since``: the earliest object date
    it takes): ``import-<16 hex>``, the same for the same three. Its files are gathered under
    ``runs/<id>/<index>/``, so asking again resumes where an earlier attempt stopped."""
    key = f"{source}\n{index}\n{since.isoformat() if since else ''}"
    return IMPORT_RUN_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:16]


class ImportRequest(BaseModel):
    """``manifests/import-<id>.json``: import the files directly under ``source`` into nightly
    directory ``index``, those written at or after ``since`` (all when ``None``).
    ``requested_at`` makes each request's bytes new, so asking again is decided again."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_: Literal["wheelgate/import/v1"] = Field(alias="schema")
    run_id: RunId
    source: SourceUri
    index: IndexDir
    since: AwareDatetime | None = None
    requested_at: AwareDatetime

    @property
    def source_location(self) -> ImportSource:
        return parse_source_uri(self.source)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2) + "\n"


def new_import_request(
    source: str, index: str, since: datetime | None, *, now: datetime
) -> ImportRequest:
    """The request to import ``source`` into ``index``. Raises ``pydantic.ValidationError``
    for a bad source, directory or date."""
    return ImportRequest.model_validate(
        {
            "schema": SCHEMA_IMPORT_V1,
            "run_id": import_id(source, index, since),
            "source": source,
            "index": index,
            "since": since,
            "requested_at": now,
        }
    )


def parse_import(raw: bytes, *, expected_run_id: str) -> ImportRequest:
    """Validate an import request; :class:`PromotionRejected` if bad: ``invalid-manifest``;
    ``import-source-not-allowed`` when its source is a string that is no source (not an
    ``s3://`` folder URI, or one with a ``.``, ``..`` or empty segment: under no
    ``import_sources`` entry); ``run-id-mismatch`` when its id is not its key's or not the one
    its source, directory and date give."""
    request = read_request(
        raw,
        ImportRequest,
        kind="import",
        expected_run_id=expected_run_id,
        reason_for=_import_refusal,
    )
    expected = import_id(request.source, request.index, request.since)
    if request.run_id != expected:
        raise PromotionRejected(
            Reason.RUN_ID_MISMATCH,
            f"import request key names {expected_run_id!r}, it says {request.run_id!r}, and "
            f"its source, directory and date make {expected!r}",
        )
    return request


def source_allowed(
    source: ImportSource, allowed: Sequence[ImportSource], own_buckets: Iterable[str]
) -> PromotionRejected | None:
    """The refusal (``import-source-not-allowed``) of a source outside the allow-list or in one
    of WheelGate's own buckets (staging would skip the tests, nightly is the destination);
    ``None`` when it may be read."""
    if source.bucket in set(own_buckets):
        return PromotionRejected(
            Reason.IMPORT_SOURCE_NOT_ALLOWED,
            f"{source.uri} is in one of WheelGate's own buckets: staged runs are promoted on "
            "their tests, and nightly is where imports go",
        )
    if not any(entry.covers(source) for entry in allowed):
        listed = ", ".join(e.uri for e in allowed) or "none"
        return PromotionRejected(
            Reason.IMPORT_SOURCE_NOT_ALLOWED,
            f"{source.uri} is not under an import source of this deployment ({listed}; "
            "import_sources in cdk.json)",
        )
    return None


@dataclass(frozen=True)
class SourceObject:
    """One object of the source listing a candidate for import."""

    key: str
    filename: str
    size: int
    etag: str
    last_modified: datetime | None

    def uri(self, bucket: str) -> str:
        return f"s3://{bucket}/{self.key}"


@dataclass(frozen=True)
class Selection:
    """What a source listing offers: ``candidates`` (oldest first, so the first of two
    spellings of one release is the one kept), ``refused`` names, and how many objects were
    older than ``since`` (``skipped``)."""

    candidates: tuple[SourceObject, ...]
    refused: tuple[RefusedFile, ...] = ()
    skipped: int = 0

    @property
    def projects(self) -> frozenset[str]:
        return frozenset(parse_distribution_filename(c.filename).project for c in self.candidates)


def select_files(
    listing: Iterable[ListedObject], source: ImportSource, since: datetime | None
) -> Selection:
    """The candidates among the objects directly under ``source``'s prefix.

    Index pages and PEP 658 ``.metadata`` files are not candidates (the ``.metadata`` nightly
    serves is read from the wheel itself); an object written before ``since`` is skipped; any
    other object whose name is not a wheel's or an sdist's is refused (``not-a-distribution``).
    """
    candidates: list[SourceObject] = []
    refused: list[RefusedFile] = []
    skipped = 0
    for obj in listing:
        name = obj.key[len(source.prefix) :]
        if not obj.key.startswith(source.prefix) or "/" in name or not name:
            continue
        if name in PAGE_NAMES or name.endswith(METADATA_SUFFIX):
            continue
        if since is not None and obj.last_modified is not None and obj.last_modified < since:
            skipped += 1
            continue
        try:
            parse_distribution_filename(name)
            if obj.size <= 0:
                raise ValueError(f"{name!r} is empty")
        except ValueError as exc:
            refused.append(
                RefusedFile(
                    filename=name,
                    reason=Reason.NOT_A_DISTRIBUTION.value,
                    message=str(exc),
                    source=f"s3://{source.bucket}/{obj.key}",
                )
            )
            continue
        candidates.append(
            SourceObject(
                key=obj.key,
                filename=name,
                size=obj.size,
                etag=obj.etag,
                last_modified=obj.last_modified,
            )
        )
    candidates.sort(key=lambda c: (c.last_modified is None, c.last_modified, c.filename))
    return Selection(candidates=tuple(candidates), refused=tuple(refused), skipped=skipped)


def source_page_keys(source: ImportSource, project: str) -> tuple[str, str]:
    """Where a source index beside the files keeps a project's pages: its PEP 691 JSON page,
    then its PEP 503 HTML page (``<prefix><project>/index.json|html``, the project's
    normalized name)."""
    return (f"{source.prefix}{project}/index.json", f"{source.prefix}{project}/index.html")


@dataclass(frozen=True)
class SourceFacts:
    """What a source index page says of one file: its SHA-256 (a link's ``#sha256=`` or the
    JSON ``hashes``), its PEP 592 yank state and its PEP 700 upload time, each when given."""

    sha256: str | None = None
    yanked: str | bool = False
    upload_time: str | None = None


@dataclass(frozen=True)
class Candidate:
    """A source file as screening sees it: its bytes' SHA-256 (``None`` where not known yet,
    as in a dry run) and size, and where it came from."""

    filename: str
    size: int
    sha256: str | None
    source: str
    facts: SourceFacts = field(default_factory=SourceFacts)


@dataclass(frozen=True)
class Screened:
    """The outcome of :func:`screen`: files to import (``accepted``, new ones and ones nightly
    already holds with the same bytes, which ``already`` names) and files ``refused``."""

    accepted: tuple[Candidate, ...]
    already: frozenset[str]
    refused: tuple[RefusedFile, ...]


def screen(
    candidates: Sequence[Candidate],
    released: Mapping[str, tuple[str, int]],
    *,
    index: str,
    allow_build_tag_rereleases: bool,
    allow_new_local_labels: bool = False,
) -> Screened:
    """Decide each candidate (oldest first) against nightly's ``released`` files of the same
    projects (file name -> SHA-256, size; the archive pages: every file ever released) and the
    candidates kept before it:

    - the source index gave another SHA-256 than the bytes': ``checksum-mismatch``;
    - nightly holds the name with other bytes: ``nightly-conflict``; with the same bytes it is
      already released (kept, never copied again);
    - nightly, or a candidate kept before, holds the same release under another name with other
      bytes: ``release-conflict`` (a duplicate at the source, or a conflict with nightly);
    - it would change what ``==<public version>`` installs through a local version label, as
      nightly and the candidates kept before it stand (:class:`~wheelgate.core.release_rules.
      LabelBook`, with ``allow_new_local_labels``): ``local-label-conflict``;
    - it is a wheel joining a version nightly released that some interpreter would install
      instead of a released wheel (:class:`~wheelgate.core.release_rules.TagBook`, with
      ``allow_build_tag_rereleases``): ``tag-shadowing``. The candidates arrive together:
      they are not judged against each other.

    A candidate whose SHA-256 is unknown (a dry run) is judged by its size where nightly holds
    its name, and any other spelling of its release counts as a conflict; the messages say
    that the bytes were not compared.
    """
    book = ReleaseBook(allow_build_tag_rereleases=allow_build_tag_rereleases)
    for filename, (sha256, _size) in released.items():
        book.add(filename, sha256)
    labels = LabelBook(released, allow_new_local_labels=allow_new_local_labels)
    tags = TagBook(
        ((name, sha256) for name, (sha256, _size) in released.items()),
        allow_build_tag_rereleases=allow_build_tag_rereleases,
    )
    accepted: list[Candidate] = []
    already: set[str] = set()
    refused: list[RefusedFile] = []
    unknown = " (bytes not compared: the import compares them)"

    def refuse(c: Candidate, reason: Reason, message: str) -> None:
        note = unknown if c.sha256 is None else ""
        refused.append(
            RefusedFile(
                filename=c.filename, reason=reason.value, message=message + note, source=c.source
            )
        )

    for c in candidates:
        held = released.get(c.filename)
        refusal = _refusal(c, held, released, (book, labels, tags), index=index)
        if refusal is not None:
            refuse(c, *refusal)
        elif held is not None:
            already.add(c.filename)
            accepted.append(c)
        else:
            book.add(c.filename, c.sha256 or f"unknown:{c.filename}")
            labels.add(c.filename)
            accepted.append(c)
    return Screened(accepted=tuple(accepted), already=frozenset(already), refused=tuple(refused))


def _refusal(
    c: Candidate,
    held: tuple[str, int] | None,
    released: Mapping[str, tuple[str, int]],
    books: tuple[ReleaseBook, LabelBook, TagBook],
    *,
    index: str,
) -> tuple[Reason, str] | None:
    """Why :func:`screen` refuses ``c`` (``held``: nightly's file of its name), in the order
    the checks are listed there; ``None`` when it is kept."""
    if c.sha256 is not None and c.facts.sha256 not in (None, c.sha256):
        return (
            Reason.CHECKSUM_MISMATCH,
            f"the source index lists sha256 {c.facts.sha256}, the bytes have {c.sha256}",
        )
    if held is not None:
        same = held[0] == c.sha256 if c.sha256 is not None else held[1] == c.size
        if same:
            return None
        return (
            Reason.NIGHTLY_CONFLICT,
            f"conflict with nightly: it holds {c.filename} with other bytes "
            f"(sha256 {held[0]}); released files are never replaced",
        )
    book, labels, tags = books
    other = book.conflicting(c.filename, c.sha256 or f"unknown:{c.filename}")
    if other is not None:
        where = "conflict with nightly" if other in released else "duplicate at the source"
        conflict = book.refusal(c.filename, other, index=index)
        return conflict.reason, f"{where}: {conflict.message}"
    refusal = labels.conflict(c.filename, index=index) or tags.conflict(
        c.filename, c.sha256, index=index
    )
    return None if refusal is None else (refusal.reason, refusal.message)


def _import_refusal(error: ValidationError) -> Reason:
    """The source's own rule refused it (parse_source_uri's ValueError): no entry covers it."""
    bad_source = any(e["loc"] == ("source",) and e["type"] == "value_error" for e in error.errors())
    return Reason.IMPORT_SOURCE_NOT_ALLOWED if bad_source else Reason.INVALID_MANIFEST
