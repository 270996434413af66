"""The staging and nightly keys the role policies and the bucket policies name: key patterns of
the runs and requests only one role may write, and the ARNs of the index pages."""

from __future__ import annotations

from aws_cdk import aws_s3 as s3

from wheelgate.core.layout import (
    HISTORY_ENTRIES_DIR,
    HISTORY_PREFIX,
    HTML_PAGE,
    IMPORT_RUN_PREFIX,
    JSON_PAGE,
    MANIFEST_SUFFIX,
    MANIFESTS_PREFIX,
    MIRROR_RUN_PREFIX,
    OVERRIDE_RUN_PREFIX,
    RECORDS_PREFIX,
    RUNS_PREFIX,
)

#: Staging keys of dependency-mirror runs (``wheelgate deps sync``) and override requests.
MIRROR_RUN_KEYS = f"{RUNS_PREFIX}{MIRROR_RUN_PREFIX}*"
MIRROR_MANIFEST_KEYS = f"{MANIFESTS_PREFIX}{MIRROR_RUN_PREFIX}*{MANIFEST_SUFFIX}"
#: Every ``manifests/deps-*`` key, whatever its suffix: the other roles may write none of them.
ANY_MIRROR_MANIFEST_KEYS = f"{MANIFESTS_PREFIX}{MIRROR_RUN_PREFIX}*"
MIRROR_RECORD_KEYS = f"{RECORDS_PREFIX}{MIRROR_RUN_PREFIX}*"
OVERRIDE_KEYS = f"{MANIFESTS_PREFIX}{OVERRIDE_RUN_PREFIX}*"
#: Import requests (the break-glass role's alone) and the files an import gathers into staging
#: (the promoter's alone).
IMPORT_REQUEST_KEYS = f"{MANIFESTS_PREFIX}{IMPORT_RUN_PREFIX}*"
IMPORT_RUN_KEYS = f"{RUNS_PREFIX}{IMPORT_RUN_PREFIX}*"
#: The run history's entries, one per stage call: the build role's, each created once.
HISTORY_ENTRY_KEYS = f"{HISTORY_PREFIX}{HISTORY_ENTRIES_DIR}*"


def page_keys(bucket: s3.IBucket, under: str = "") -> list[str]:
    """ARNs of the index pages (``<index>/.../index.html|json``) of ``bucket``, or of those
    under ``under`` (a prefix ending in ``/``)."""
    return [bucket.arn_for_objects(f"{under}*/{page}") for page in (HTML_PAGE, JSON_PAGE)]


def index_page_keys(bucket: s3.IBucket, index: str) -> list[str]:
    """ARNs of the root and project pages of index directory ``index`` in ``bucket``: the
    root page's ``<index>/index.html`` has no ``/`` for the ``*`` of :func:`page_keys`."""
    return [
        *(bucket.arn_for_objects(f"{index}/{page}") for page in (HTML_PAGE, JSON_PAGE)),
        *page_keys(bucket, f"{index}/"),
    ]
