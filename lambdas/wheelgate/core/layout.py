"""Where WheelGate keeps things: the one definition of bucket keys.

The CDK stacks, the promoter Lambda and the ``wheelgate`` CLI all import this module, so
a prefix or a file name is spelled exactly once.

Staging bucket::

    runs/<run_id>/<index>/<filename>            staged artifact (written once)
    runs/<run_id>/<index>/<filename>.metadata   its PEP 658 core metadata (written once)
    runs/<run_id>/<index>/index.html|index.json           the run's index: root page
    runs/import-<id>/<index>/<filename>         a file an import gathered (the promoter's)
    runs/<run_id>/<index>/<project>/index.html|index.json the run's files over nightly's
    manifests/<run_id>.json                     test-result manifest (written by the reporter)
    records/<run_id>.json                       promotion record (written by the promoter)
    records/_leases/<index>.json                the promoter's lease on an index directory
    records/_jobs/<job_id>/plan.json            a fan-out promotion's verified plan
    records/_jobs/<job_id>/items.json           its files, one Map item each (Step Functions)
    records/_jobs/<job_id>/hash_items.json      the items whose staged bytes must be hashed first
    records/_jobs/<job_id>/done/<item>.json     a file copied and verified, with its page entry
    records/_jobs/<job_id>/rejection.json       a step's permanent refusal (reason and message)
    records/_jobs/<job_id>/concluded.json       the job's failed execution was concluded
    records/_left/<index>/<filename>.json       a file a rejected run's earlier attempt copied
                                                into nightly: never listed (index rebuild too)
    history/_entries/<index>/<run_id>/<entry>.json  a stage call's entry (create-only, build role)
    history/<index>/index.json|index.html       the directory's run history: head and page
    history/<index>/<YYYY-MM>.json              one month's runs (a shard; the promoter's alone)

``history/`` outlives ``runs/``: no lifecycle rule expires it, so a run stays findable after
its files expire (docs/bisect.md).

A run's index (``runs/<run_id>/<index>/``) is laid out exactly like a nightly directory, so
``pip install --index-url <staging>/runs/<run_id>/<index>/`` reads it as users read nightly. It
offers the run's own staged files and nightly's, never another run's.

Nightly bucket::

    <index>/<filename>                          released artifact (Object Lock)
    <index>/<filename>.metadata                 its PEP 658 core metadata
    <index>/<filename>.verdict.json             its signed verdict (DSSE envelope, written once)
    <index>/index.html|index.json               index root page
    <index>/<project>/index.html|index.json     project page (listing retention may trim it)
    <index>/_archive/index.html|index.json      archive root page
    <index>/_archive/<project>/index.html|.json archive project page: every file ever released

    _wheelgate/verdict-keys/index.json          the public keys verdicts are signed with

The archive's segment starts with ``_``, which neither a normalized project name nor an index
directory segment can contain or start with, so it never collides with a project's page;
nor does ``_wheelgate/`` with an index directory. The keys document is named like a page
(``*/index.json``): the one nightly object besides the pages that is updated in place (a key
rotation adds a key), never a file.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

from packaging.utils import canonicalize_name

RUNS_PREFIX = "runs/"
MANIFESTS_PREFIX = "manifests/"
MANIFEST_SUFFIX = ".json"
RECORDS_PREFIX = "records/"
STATUS_PREFIX = "status/"
#: The run history of each index directory (:mod:`wheelgate.history`), never expired.
HISTORY_PREFIX = "history/"
#: Under ``history/``: the entries stage calls write, each once, for the promoter to fold in.
#: An index directory segment cannot start with ``_``, so it never looks like a directory.
HISTORY_ENTRIES_DIR = "_entries/"
#: Under ``records/``: a run id cannot start with ``_``, so a lease never looks like a record.
LEASES_DIR = "_leases/"
#: Under ``records/``: fan-out promotion jobs (the promoter's alone, like leases).
JOBS_DIR = "_jobs/"
#: Under ``records/``: files a rejected run's earlier attempt left in nightly, never listed.
LEFT_DIR = "_left/"
METADATA_SUFFIX = ".metadata"
#: A staged file's recorded SHA-256 (``<hex>  <file name>``, as ``sha256sum`` prints it) where
#: its object cannot carry it: a file uploaded in parts is hashed as it is read, and S3 takes
#: an object's user metadata when its multipart upload starts.
CHECKSUM_SUFFIX = ".sha256"
#: What staging keeps beside a file, never a file of the set itself.
SIDECAR_SUFFIXES = (METADATA_SUFFIX, CHECKSUM_SUFFIX)
#: A released file's verdict: ``<filename>`` + this (docs/verdicts.md).
VERDICT_SUFFIX = ".verdict.json"
#: The public keys of verdicts, at a fixed nightly key no index directory can hold.
VERDICT_KEYS_KEY = "_wheelgate/verdict-keys/index.json"
HTML_PAGE = "index.html"
#: The archive index of a directory (every file ever released): ``<index>/_archive/``.
#: Normalized project names never contain ``_`` and index directory segments never start with it.
ARCHIVE_DIR = "_archive"
JSON_PAGE = "index.json"
#: Names of index pages; never a distribution's file name, so listings can tell them apart.
PAGE_NAMES = frozenset({HTML_PAGE, JSON_PAGE})

#: The object tag every page of a run's index carries (``runs/<run_id>/.../index.html|json``):
#: the staging lifecycle rule that expires run pages before the files they list selects it.
RUN_PAGE_TAG_KEY = "wheelgate-object"
RUN_PAGE_TAG_VALUE = "run-page"

#: Run ids of dependency-mirror runs (``deps.yml``) start with this; yank, break-glass
#: override and import requests, which travel as manifests, start with theirs. An import's
#: files are gathered under ``runs/<import id>/<index>/``, which only the promoter writes.
MIRROR_RUN_PREFIX = "deps-"
YANK_RUN_PREFIX = "yank-"
OVERRIDE_RUN_PREFIX = "override-"
IMPORT_RUN_PREFIX = "import-"
#: Run ids a CI run may not take: the promoter routes them as requests.
REQUEST_RUN_PREFIXES = (YANK_RUN_PREFIX, OVERRIDE_RUN_PREFIX, IMPORT_RUN_PREFIX)

#: Top-level names an index directory may not start with: they hold WheelGate's own objects.
RESERVED_TOP_LEVEL = frozenset(
    p.rstrip("/")
    for p in (RUNS_PREFIX, MANIFESTS_PREFIX, RECORDS_PREFIX, STATUS_PREFIX, HISTORY_PREFIX)
)

MAX_INDEX_DEPTH = 4
# One index directory segment: what CloudFront, S3 and pip all handle without escaping.
SEGMENT_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._+-]{0,62}"
INDEX_PATTERN = rf"^{SEGMENT_PATTERN}(/{SEGMENT_PATTERN}){{0,{MAX_INDEX_DEPTH - 1}}}$"
RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
_SEGMENT = re.compile(SEGMENT_PATTERN)
_RUN_ID = re.compile(RUN_ID_PATTERN)
_MONTH = re.compile(r"[0-9]{4}-(0[1-9]|1[0-2])")


class LayoutError(ValueError):
    """A run id, index directory or file name that cannot be placed in a bucket safely."""


def check_run_id(run_id: str) -> str:
    """Return ``run_id`` if it is safe as one key segment, else raise :class:`LayoutError`."""
    if not _RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise LayoutError(
            f"run id {run_id!r} is not valid: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return run_id


def check_ci_run_id(run_id: str) -> str:
    """Return ``run_id`` if a CI run may take it: a valid run id (:func:`check_run_id`) that
    does not start like a request's (:data:`REQUEST_RUN_PREFIXES`), which the promoter would
    route as one. Raises :class:`LayoutError`."""
    check_run_id(run_id)
    if run_id.startswith(REQUEST_RUN_PREFIXES):
        raise LayoutError(
            f"run id {run_id!r} starts with {run_id.split('-', 1)[0]}-, which only requests to "
            f"the promoter take ({', '.join(REQUEST_RUN_PREFIXES)}); give the run another id"
        )
    return run_id


def check_index(index: str) -> str:
    """Return ``index`` (e.g. ``v2/gfx94X-dcgpu``) if it is a valid index directory.

    Raises :class:`LayoutError` for empty, absolute, traversing, doubled-slash or non-ASCII
    paths, and for paths that start with a reserved top-level name.
    """
    if not index or index != index.strip():
        raise LayoutError(f"index directory {index!r} is empty or has surrounding spaces")
    if index.startswith("/") or index.endswith("/"):
        raise LayoutError(f"index directory {index!r} must not start or end with '/'")
    segments = index.split("/")
    if len(segments) > MAX_INDEX_DEPTH:
        raise LayoutError(f"index directory {index!r} is deeper than {MAX_INDEX_DEPTH} levels")
    for segment in segments:
        if not _SEGMENT.fullmatch(segment) or ".." in segment:
            raise LayoutError(
                f"index directory {index!r} has an invalid segment {segment!r}: use letters, "
                "digits, '.', '_', '+' or '-', starting with a letter or digit"
            )
    if segments[0] in RESERVED_TOP_LEVEL:
        raise LayoutError(
            f"index directory {index!r} starts with {segments[0]!r}, which WheelGate reserves"
        )
    return index


def check_index_dirs(indexes: Iterable[str]) -> tuple[str, ...]:
    """Return ``indexes`` if they are valid index directories that can live side by side.

    Raises :class:`LayoutError` for an invalid directory (:func:`check_index`), one listed
    twice, or one inside another (``v2`` and ``v2/torch``): the inner directory's pages would
    be the outer one's project page of that name.
    """
    found = tuple(check_index(index) for index in indexes)
    for index in found:
        if found.count(index) > 1:
            raise LayoutError(f"index directory {index!r} is listed twice")
        inside = sorted(other for other in found if other.startswith(index + "/"))
        if inside:
            raise LayoutError(
                f"index directory {inside[0]!r} is inside index directory {index!r}, where it "
                "would be a project's page: index directories may not nest"
            )
    return found


_PLAIN_FILENAME = re.compile(r"[!-.0-\[\]-~]{1,255}")  # printable ASCII but '/', '\\', space


def check_filename(filename: str) -> str:
    """Return ``filename`` if it is a plain, printable ASCII file name (no path parts)."""
    if (
        not _PLAIN_FILENAME.fullmatch(filename)
        or filename.startswith(".")
        or filename in (".", "..")
    ):
        raise LayoutError(f"file name {filename!r} is not a plain ASCII file name")
    return filename


def project_dir(project: str) -> str:
    """The PEP 503 normalized directory name of a project."""
    return canonicalize_name(project)


def base_url(url: str) -> str:
    """``url`` with a final slash, so that keys joined onto it stay under its path."""
    return url if url.endswith("/") else url + "/"


def relative_href(page_dir: str, target_key: str) -> str:
    """Path of ``target_key`` relative to a page served from directory ``page_dir`` (both keys
    in the same bucket), not yet encoded: :func:`href` is what a page writes."""
    return posixpath.relpath(target_key, start=page_dir.rstrip("/") or ".")


def quote_key(path: str) -> str:
    """``path`` (a key, or a key relative to a page) as a URL path: every character but
    RFC 3986's unreserved ones and ``/`` percent-encoded (``+`` -> ``%2B``, space -> ``%20``,
    ``%`` -> ``%25``, ``#`` -> ``%23``, ``?`` -> ``%3F``). The one encoder of links to keys.

    Why ``+`` matters: S3 reads a raw ``+`` in a request path as a space, and CloudFront's file
    behaviors hand S3 the path exactly as the client sent it. pip encodes a link's ``+``
    itself; uv requests a link as written, so ``torch-2.7.0+rocm6.4-...whl`` must be written
    ``torch-2.7.0%2Brocm6.4-...whl``. Keys are ASCII (:func:`check_index`,
    :func:`check_filename`), so no other byte needs a decision.
    """
    return quote(path, safe="/")


def href(page_dir: str, target_key: str) -> str:
    """Relative, percent-encoded link from a page served from ``page_dir`` to ``target_key``
    (same bucket), so pages work under any host or path prefix."""
    return quote_key(relative_href(page_dir, target_key))


def key_url(base: str, key: str) -> str:
    """Absolute URL of ``key`` under ``base`` (an index's base URL, already a URL)."""
    return base_url(base) + quote_key(key)


@dataclass(frozen=True)
class StagingLayout:
    """Keys in the staging bucket."""

    def run_prefix(self, run_id: str) -> str:
        return f"{RUNS_PREFIX}{check_run_id(run_id)}/"

    def run_index_prefix(self, run_id: str, index: str) -> str:
        return f"{self.run_prefix(run_id)}{check_index(index)}/"

    def run_pages_prefix(self, run_id: str) -> str:
        """Prefix under which a run's index pages sit, in the same layout as :data:`PAGES`."""
        return self.run_prefix(run_id)

    def artifact(self, run_id: str, index: str, filename: str) -> str:
        return f"{self.run_index_prefix(run_id, index)}{check_filename(filename)}"

    def metadata(self, run_id: str, index: str, filename: str) -> str:
        return self.artifact(run_id, index, filename) + METADATA_SUFFIX

    def checksum(self, run_id: str, index: str, filename: str) -> str:
        return self.artifact(run_id, index, filename) + CHECKSUM_SUFFIX

    def manifest(self, run_id: str) -> str:
        return f"{MANIFESTS_PREFIX}{check_run_id(run_id)}{MANIFEST_SUFFIX}"

    def record(self, run_id: str) -> str:
        return f"{RECORDS_PREFIX}{check_run_id(run_id)}.json"

    def lease(self, index: str) -> str:
        """The promoter's lease on an index directory (``records/`` is the promoter's alone:
        the bucket policy lets no one else write there, so no one else can take the lease)."""
        return f"{RECORDS_PREFIX}{LEASES_DIR}{check_index(index)}.json"

    def left_in_nightly_prefix(self, index: str) -> str:
        """The notes of files rejected runs left in nightly's ``index``, one per file."""
        return f"{RECORDS_PREFIX}{LEFT_DIR}{check_index(index)}/"

    def left_in_nightly(self, index: str, filename: str) -> str:
        return f"{self.left_in_nightly_prefix(index)}{check_filename(filename)}.json"

    def job_prefix(self, job_id: str) -> str:
        """Everything of one fan-out promotion job (``job_id`` is a run-id-like name)."""
        return f"{RECORDS_PREFIX}{JOBS_DIR}{check_run_id(job_id)}/"

    def job_plan(self, job_id: str) -> str:
        return self.job_prefix(job_id) + "plan.json"

    def job_items(self, job_id: str) -> str:
        return self.job_prefix(job_id) + "items.json"

    def job_hash_items(self, job_id: str) -> str:
        """The items (of ``job_items``) whose staged bytes S3 has no SHA-256 of: each is hashed
        by a step of its own before any copy (a JSON array like ``job_items``, maybe empty)."""
        return self.job_prefix(job_id) + "hash_items.json"

    def job_done(self, job_id: str, item: int) -> str:
        return f"{self.job_prefix(job_id)}done/{item}.json"

    def job_done_prefix(self, job_id: str) -> str:
        return f"{self.job_prefix(job_id)}done/"

    def job_rejection(self, job_id: str) -> str:
        """A step's permanent refusal: a failed Map reports no step's error name, so the
        concluding step reads the reason here."""
        return self.job_prefix(job_id) + "rejection.json"

    def job_concluded(self, job_id: str) -> str:
        """Written when a failed execution of the job was concluded: the next delivery of the
        manifest starts the next attempt."""
        return self.job_prefix(job_id) + "concluded.json"

    def history_entry_prefix(self, index: str) -> str:
        """Where stage calls of ``index`` write their entries (:meth:`history_entry`)."""
        return f"{HISTORY_PREFIX}{HISTORY_ENTRIES_DIR}{check_index(index)}/"

    def history_entry(self, index: str, run_id: str, entry_id: str) -> str:
        """One stage call's entry: ``entry_id`` names it by its content, so a re-run writing
        the same entry finds it written and another call never replaces it."""
        run = check_run_id(run_id)
        return f"{self.history_entry_prefix(index)}{run}/{check_run_id(entry_id)}.json"

    def history_dir(self, index: str) -> str:
        return f"{HISTORY_PREFIX}{check_index(index)}/"

    def history_head(self, index: str) -> str:
        """The history's head: the months it holds (JSON), also its machine-readable page."""
        return self.history_dir(index) + JSON_PAGE

    def history_page(self, index: str) -> str:
        """The page a person reads (HTML)."""
        return self.history_dir(index) + HTML_PAGE

    def history_month(self, index: str, month: str) -> str:
        """One month's shard (``month`` is ``YYYY-MM``, the month its runs were first staged)."""
        if not _MONTH.fullmatch(month):
            raise LayoutError(f"month {month!r} is not YYYY-MM")
        return f"{self.history_dir(index)}{month}.json"

    def run_id_from_manifest_key(self, key: str) -> str:
        """The run id a manifest key names; :class:`LayoutError` if it is not a manifest key."""
        if not key.startswith(MANIFESTS_PREFIX) or not key.endswith(MANIFEST_SUFFIX):
            raise LayoutError(f"{key!r} is not a manifest key ({MANIFESTS_PREFIX}<run_id>.json)")
        return check_run_id(key[len(MANIFESTS_PREFIX) : -len(MANIFEST_SUFFIX)])


@dataclass(frozen=True)
class IndexLayout:
    """Index pages, the same shape in both buckets. ``archive=True`` names the pages of the
    directory's archive index (:data:`ARCHIVE_DIR`) instead of its listing."""

    def pages_dir(self, index: str, *, archive: bool = False) -> str:
        """The directory a client's ``--index-url`` names: the listing's or the archive's."""
        return f"{check_index(index)}/{ARCHIVE_DIR + '/' if archive else ''}"

    def root_page(self, index: str, *, json: bool = False, archive: bool = False) -> str:
        return self.pages_dir(index, archive=archive) + (JSON_PAGE if json else HTML_PAGE)

    def project_dir(self, index: str, project: str, *, archive: bool = False) -> str:
        return f"{self.pages_dir(index, archive=archive)}{project_dir(project)}/"

    def project_page(
        self, index: str, project: str, *, json: bool = False, archive: bool = False
    ) -> str:
        return self.project_dir(index, project, archive=archive) + (
            JSON_PAGE if json else HTML_PAGE
        )


@dataclass(frozen=True)
class NightlyLayout:
    """Keys of released files in the nightly bucket."""

    def artifact(self, index: str, filename: str) -> str:
        return f"{check_index(index)}/{check_filename(filename)}"

    def metadata(self, index: str, filename: str) -> str:
        return self.artifact(index, filename) + METADATA_SUFFIX

    def verdict(self, index: str, filename: str) -> str:
        """The signed verdict of a released file, beside it."""
        return self.artifact(index, filename) + VERDICT_SUFFIX


STAGING = StagingLayout()
NIGHTLY = NightlyLayout()
PAGES = IndexLayout()
