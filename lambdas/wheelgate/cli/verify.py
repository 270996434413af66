"""``wheelgate verify``: check a released file against its signed verdict (docs/verdicts.md).

What is trusted is only what the caller names: the gate (``--nightly-url`` or
``WHEELGATE_NIGHTLY_BASE_URL``), whose published keys verify the signature and whose identity
the verdict's verifier must be, or a key (``--key``). Never a keys document found from the
checked file's or index's URL: anyone who can write beside a file (a build job, in its run's
staging folder) could put one there. Where the verdict is read from is not trusted either;
only its signature and what it states are.

``--installed NAME`` verifies an installed distribution through the released wheel it is:
:mod:`wheelgate.staging.installed_release` matches its files (hashed on disk) with each
candidate wheel's members as the wheel's bytes say, never with a RECORD alone.

Exit codes: 0 verified; 1 the verdict does not verify, is about other bytes, another file or
another gate, or there is none; 2 bad input (no gate and no key included; no directory to look
in); 4 storage or network error.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import posixpath
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from packaging.utils import canonicalize_name

from wheelgate.cli.common import UsageError
from wheelgate.cli.verdict_report import Candidate, check_candidates, directories
from wheelgate.cli.verify_installed import verify_installed
from wheelgate.core.env_names import ENV_ALLOWED_INDEXES, ENV_NIGHTLY_BASE_URL
from wheelgate.core.layout import (
    VERDICT_KEYS_KEY,
    VERDICT_SUFFIX,
    base_url,
    key_url,
)
from wheelgate.core.manifest import parse_distribution_filename
from wheelgate.core.signatures import (
    published_key,
)
from wheelgate.core.verdicts import (
    PublishedKey,
    VerdictFormatError,
    parse_key_document,
)
from wheelgate.index.pages import JSON_CONTENT_TYPE
from wheelgate.index.simple_api import PageFormatError, read_project_page
from wheelgate.storage.http import fetch, sha256_of

_CHUNK = 1024 * 1024


def _is_url(text: str) -> bool:
    return urlsplit(text).scheme in ("http", "https")


def _file_digest(target: str) -> tuple[str, str]:
    """File name and SHA-256 of a local path or a URL."""
    if _is_url(target):
        name = unquote(posixpath.basename(urlsplit(target).path))
        digest = sha256_of(target)
        if digest is None:
            raise UsageError(f"{target} does not exist")
        return name, digest
    path = Path(target)
    if not path.is_file():
        raise UsageError(f"{target} is not a file")
    hashed = hashlib.sha256()
    with path.open("rb") as handle:
        while data := handle.read(_CHUNK):
            hashed.update(data)
    return path.name, hashed.hexdigest()


def _verdict_url_from_index(index_url: str, filename: str) -> str | None:
    """The verdict link the index's PEP 691 project page gives ``filename``."""
    try:
        project = parse_distribution_filename(filename).project
    except ValueError as exc:
        raise UsageError(f"{filename} is not a distribution's file name: {exc}") from exc
    page_url = urljoin(base_url(index_url), f"{canonicalize_name(project)}/")
    raw = fetch(page_url, accept=JSON_CONTENT_TYPE)
    if raw is None:
        return None
    try:
        files = read_project_page(raw).files
    except PageFormatError as exc:
        raise UsageError(f"{page_url} is {exc}") from exc
    verdict = next((f.verdict_url for f in files if f.filename == filename), None)
    return None if verdict is None else urljoin(page_url, verdict)


def _statements(
    args: argparse.Namespace, filename: str, gate: str | None
) -> list[tuple[bytes | None, str]]:
    """The verdict's bytes (``None``: there is none) and where they were looked for; from the
    gate, one for each directory the file may be in (:func:`directories`)."""
    if args.statement:
        path = Path(args.statement)
        if not path.is_file():
            raise UsageError(f"--statement {args.statement} is not a file")
        return [(path.read_bytes(), str(path))]
    if args.index_url:
        url = _verdict_url_from_index(args.index_url, filename)
        if url is None:
            return [(None, f"the project page of {args.index_url}")]
        return [(fetch(url), url)]
    if _is_url(args.file):
        url = args.file + VERDICT_SUFFIX
        return [(fetch(url), url)]
    beside = Path(args.file + VERDICT_SUFFIX)
    if beside.is_file():
        return [(beside.read_bytes(), str(beside))]
    if not gate:  # where to look, not what to trust
        raise UsageError(
            f"no verdict for {args.file}: give --statement FILE, --index-url URL, the file's "
            "URL, or the gate (--nightly-url) and --index DIR"
        )
    found = []
    for index in directories(args, filename):
        url = key_url(gate, f"{index}/{filename}{VERDICT_SUFFIX}")
        found.append((fetch(url), url))
    return found


NO_GATE = (
    "name the gate to verify against: --nightly-url URL (the gate's nightly base URL, or set "
    f"{ENV_NIGHTLY_BASE_URL}): its published keys, and the verifier the verdict must name; "
    "or --key FILE: a public key you trust (offline). Keys are never looked for beside the "
    "file, where whoever wrote the file could have put their own"
)


def _gate(args: argparse.Namespace) -> str | None:
    """The gate (nightly base URL) the caller named: ``--nightly-url``, else its variable;
    ``None`` when neither is set."""
    given = args.nightly_url or os.environ.get(ENV_NIGHTLY_BASE_URL, "")
    if not given:
        return None
    if not _is_url(given):
        raise UsageError(f"--nightly-url {given!r} is not an http(s) URL")
    return base_url(given)


def _keys(args: argparse.Namespace, gate: str | None) -> list[PublishedKey]:
    """The keys to verify under: ``--key`` (the key given is what is trusted), else the keys
    the gate publishes. Raises UsageError for neither, or for a gate that publishes none."""
    if args.key:
        path = Path(args.key)
        try:
            return [published_key(path.read_bytes())]
        except OSError as exc:
            raise UsageError(f"--key {args.key}: {exc.strerror}") from exc
        except VerdictFormatError as exc:
            raise UsageError(f"--key {args.key}: {exc}") from exc
    if gate is None:
        raise UsageError(NO_GATE)
    url = gate + VERDICT_KEYS_KEY
    raw = fetch(url)
    if raw is None:
        raise UsageError(f"no published keys at {url}: is {gate} the gate's nightly base URL?")
    try:
        return list(parse_key_document(raw).keys)
    except VerdictFormatError as exc:
        raise UsageError(f"{url}: {exc}") from exc


def cmd_verify(args: argparse.Namespace) -> int:
    if (args.file is None) == (args.installed is None):
        raise UsageError("give FILE_OR_URL, or --installed NAME (not both)")
    if args.python and args.installed is None:
        raise UsageError("--python goes with --installed NAME")
    gate = _gate(args)
    # What is trusted comes first, from the options alone: nothing read later can choose it.
    keys = _keys(args, gate)
    if args.installed is not None:
        return verify_installed(args, keys, gate)
    filename, sha256 = _file_digest(args.file)
    candidates = [
        Candidate(filename, sha256, statement, looked_at)
        for statement, looked_at in _statements(args, filename, gate)
    ]
    return check_candidates(args, filename, candidates, keys, gate)


def register(subparsers: Any) -> None:
    """Add ``verify`` to the ``wheelgate`` command."""
    parser = subparsers.add_parser(
        "verify",
        help="check a released file against its signed verdict (exit 0 verified, 1 not)",
        description=(
            "Check that FILE_OR_URL's sha256 is its verdict's subject, that the verdict is about "
            "that file name, that its signature verifies under the gate's published keys (or "
            "--key), and that the gate made it (its verifier is --nightly-url). Prints the run, "
            "commit, tests, time and gate it states. Trusts only what it is given: the gate "
            f"(--nightly-url or ${ENV_NIGHTLY_BASE_URL}) or a key (--key); with neither it "
            "exits 2. Keys are never looked for near the file's or the index's URL. A "
            "download without its verdict beside it is looked up under the gate, in --index "
            f"DIR or each of ${ENV_ALLOWED_INDEXES}. --installed NAME verifies an installed "
            "distribution: the released wheel of its name and version whose members, "
            "verified against its bytes (downloaded from the gate), are its files, then that "
            "wheel's verdict."
        ),
    )
    parser.add_argument(
        "file", metavar="FILE_OR_URL", nargs="?", help="a downloaded file, or its URL"
    )
    parser.add_argument(
        "--installed",
        metavar="NAME",
        help="instead of a file, an installed distribution: the released wheel of its name "
        "and version whose verified members its files are (downloaded from the gate), and "
        "that wheel's verdict",
    )
    parser.add_argument(
        "--python",
        metavar="PATH",
        help="with --installed: the environment's interpreter (default: the activated one, "
        "$VIRTUAL_ENV)",
    )
    parser.add_argument(
        "--index",
        metavar="DIR",
        help="the gate's directory the file was released into (default: each of "
        f"${ENV_ALLOWED_INDEXES})",
    )
    parser.add_argument(
        "--index-url", help="the index the file came from: its project page links the verdict"
    )
    parser.add_argument(
        "--statement", metavar="FILE", help="the verdict (a <file>.verdict.json), read locally"
    )
    parser.add_argument(
        "--key",
        metavar="FILE",
        help="a PEM public key to verify under, instead of the gate's published keys (offline: "
        "the key is what is trusted; with --nightly-url the verdict must still name that gate)",
    )
    parser.add_argument(
        "--nightly-url",
        help=f"the gate's nightly base URL (default: ${ENV_NIGHTLY_BASE_URL}): the keys it "
        "publishes are the keys trusted, and the verdict's verifier must be this gate; "
        "required unless --key is given",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=cmd_verify)
