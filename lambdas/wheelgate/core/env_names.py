"""The names of the environment variables that configure WheelGate: the promoter's (each the
name of a field of :class:`~wheelgate.core.settings.PromoterSettings`, which the stack writes
and the promoter reads) and the few only the CLI reads."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping

ENV_STAGING_BUCKET = "WHEELGATE_STAGING_BUCKET"
ENV_NIGHTLY_BUCKET = "WHEELGATE_NIGHTLY_BUCKET"
#: Public base URL of the nightly index (CloudFront), used for absolute links in staging pages.
ENV_NIGHTLY_BASE_URL = "WHEELGATE_NIGHTLY_BASE_URL"
#: Public URL of the staging distribution: the run index URL ``wheelgate stage`` prints, and
#: for the promoter (optional) where the status pages link each directory's run history.
ENV_STAGING_BASE_URL = "WHEELGATE_STAGING_BASE_URL"
ENV_NIGHTLY_DISTRIBUTION_ID = "WHEELGATE_NIGHTLY_DISTRIBUTION_ID"
#: Unique id (``AROA...``) of the reporter role; manifests written by anyone else are rejected.
ENV_TRUSTED_REPORTER_ID = "WHEELGATE_TRUSTED_REPORTER_ID"
#: Unique id (``AROA...``) of the dependency-mirror role: the only writer of ``deps-*`` runs'
#: manifests (the reporter is not).
ENV_TRUSTED_DEPS_ID = "WHEELGATE_TRUSTED_DEPS_ID"
#: JSON object: index directory -> list of test names that must have passed.
ENV_REQUIRED_TESTS = "WHEELGATE_REQUIRED_TESTS"
#: JSON list of index directories that may be staged and promoted to (``index_dirs`` in
#: cdk.json), or ``"*"`` for any (local mode's value only); the promoter does not start without
#: it, and the CLI, where it is unset, leaves the check to the promoter.
ENV_ALLOWED_INDEXES = "WHEELGATE_ALLOWED_INDEXES"
#: Unique id (``AROA...``) of the break-glass role, the only writer whose override requests
#: (``manifests/override-<run>-<stamp>.json``) are honoured; unset: overrides are refused.
ENV_BREAK_GLASS_ID = "WHEELGATE_BREAK_GLASS_ID"
#: ``true`` (default): one rejected set rejects the whole manifest; ``false``: passing sets of a
#: manifest are promoted even when another set of it fails.
ENV_BLOCK_ALL_ON_FAILURE = "WHEELGATE_BLOCK_ALL_ON_FAILURE"
#: ``false`` (default): a wheel that differs from a released one only by its build tag is a
#: re-release of that release with other bytes, and is refused; ``true``: it is allowed.
ENV_ALLOW_BUILD_TAG_RERELEASES = "WHEELGATE_ALLOW_BUILD_TAG_RERELEASES"
#: JSON ``false`` (default), ``true``, or a list of index directories: where a public version
#: released with local version labels (``2.7.0+rocm6.3``) may gain a new one (``+rocm6.4``),
#: which then becomes what ``==2.7.0`` installs (see
#: :class:`~wheelgate.core.setting_values.NewLocalLabels`).
ENV_ALLOW_NEW_LOCAL_LABELS = "WHEELGATE_ALLOW_NEW_LOCAL_LABELS"

#: JSON list of the host names test URLs may point to (``test_url_hosts`` in cdk.json); unset:
#: :data:`~wheelgate.core.setting_parsers.DEFAULT_TEST_URL_HOSTS`. The promoter and
#: ``wheelgate report`` read the same list.
ENV_TEST_URL_HOSTS = "WHEELGATE_TEST_URL_HOSTS"
#: Console URL of the stack's CloudWatch dashboard, linked from the status page.
ENV_DASHBOARD_URL = "WHEELGATE_DASHBOARD_URL"
#: JSON list of the buckets (``bucket``) or bucket prefixes (``bucket/prefix/``) that import
#: requests may name as their source (``import_sources`` in cdk.json); unset: none.
ENV_IMPORT_SOURCES = "WHEELGATE_IMPORT_SOURCES"

#: JSON object: which versions index pages list (``listing_retention`` in cdk.json, same shape:
#: ``{"default": RULE, "indexes": {DIR: RULE}}``, a RULE being ``{"keep_versions": K or null,
#: "keep_days": D or null}``); unset: every page lists every file (see
#: :class:`~wheelgate.core.setting_values.ListingRetention`).
ENV_LISTING_RETENTION = "WHEELGATE_LISTING_RETENTION"

#: Object Lock of the nightly index pages the promoter writes: the bucket's retention mode
#: (``GOVERNANCE`` or ``COMPLIANCE``, ``nightly_retention.mode``) and the days each page version
#: is held (``nightly_page_retention_days``). A page is rewritten by every promotion, so its
#: replaced versions are held only this long, then the noncurrent-version rule removes them;
#: released files keep the bucket's default retention. Unset (local mode without a lock):
#: pages carry no lock headers and take the bucket's default, if any.
ENV_NIGHTLY_RETENTION_MODE = "WHEELGATE_NIGHTLY_RETENTION_MODE"
ENV_NIGHTLY_PAGE_RETENTION_DAYS = "WHEELGATE_NIGHTLY_PAGE_RETENTION_DAYS"

#: Days after the first object of a run was staged during which ``wheelgate stage`` still adds
#: to the run (the CLI's only, like ``WHEELGATE_STAGING_BASE_URL``; the stack outputs the value
#: it derives, ``RunStageWindowDays``). Unset:
#: :data:`~wheelgate.core.run_window.DEFAULT_RUN_STAGE_WINDOW_DAYS`, the smallest window any
#: valid configuration allows, so the default never lets a page outlive a file
#: (:func:`~wheelgate.core.run_window.run_stage_window_days`).
ENV_RUN_STAGE_WINDOW_DAYS = "WHEELGATE_RUN_STAGE_WINDOW_DAYS"

#: ARN of the fan-out promotion state machine (Step Functions); unset: every run is promoted
#: in one invocation.
ENV_FANOUT_STATE_MACHINE_ARN = "WHEELGATE_FANOUT_STATE_MACHINE_ARN"
#: A promotion whose copies reach either threshold (files to copy, or bytes to copy) goes
#: through the state machine; below both, one invocation copies and publishes it.
ENV_FANOUT_MIN_FILES = "WHEELGATE_FANOUT_MIN_FILES"
ENV_FANOUT_MIN_BYTES = "WHEELGATE_FANOUT_MIN_BYTES"
#: The copy map's concurrency, as the stack set it (the ``fanout`` setting's
#: ``copy_concurrency``): it divides the fan-out steps' share of the signing budget.
ENV_FANOUT_COPY_CONCURRENCY = "WHEELGATE_FANOUT_COPY_CONCURRENCY"
#: URLs of the manifest queue and its dead-letter queue: a failed fan-out execution sends its
#: manifest's event back to the first, or, after ``FANOUT_MAX_EXECUTIONS``, to the second.
ENV_MANIFEST_QUEUE_URL = "WHEELGATE_MANIFEST_QUEUE_URL"
ENV_DEAD_LETTER_QUEUE_URL = "WHEELGATE_DEAD_LETTER_QUEUE_URL"
#: The KMS key (ARN) that signs released files' verdicts (docs/verdicts.md); a new ARN is a key
#: rotation. The promoter does not start without it: every file it releases is signed.
ENV_VERDICT_KEY_ARN = "WHEELGATE_VERDICT_KEY_ARN"
#: Days a staged run's files are kept (``run_expiry_days`` in cdk.json, the staging lifecycle):
#: the run history says when each staged file expires. Unset: the history says nothing of it.
ENV_RUN_EXPIRY_DAYS = "WHEELGATE_RUN_EXPIRY_DAYS"
#: Web URL of the repository the runs are built from (``https://github.com/<github_repo>``):
#: the run history page links each run's commit under it. Unset: commits are not linked.
ENV_REPOSITORY_URL = "WHEELGATE_REPOSITORY_URL"

#: The prefix of every AWS SDK setting: credentials, profile, region, and endpoints, among them
#: the per-service ones (``AWS_ENDPOINT_URL_S3``) that boto3 takes over ``AWS_ENDPOINT_URL``.
AWS_PREFIX = "AWS_"
#: The prefix of every WheelGate setting.
WHEELGATE_PREFIX = "WHEELGATE_"


def without_settings(env: Mapping[str, str], *prefixes: str) -> dict[str, str]:
    """``env`` without the variables starting with any of ``prefixes``: what the embedded
    stack (``wheelgate local``, ``rehearse``, the demo) starts from, so that a shell set up for
    a deployed stack neither sends its clients there nor fails them (a profile this machine
    does not have)."""
    return {k: v for k, v in env.items() if not k.startswith(prefixes)}


@contextlib.contextmanager
def environment(env: Mapping[str, str]) -> Iterator[None]:
    """This process's environment is ``env`` meanwhile (what it imports, the clients it builds
    and the processes it starts read it), and what it was afterwards."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
