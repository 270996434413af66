"""The buckets: staging (CI uploads), nightly (released, Object Lock), the dependency cache and
access logs."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct

from wheelgate.core.layout import RUN_PAGE_TAG_KEY, RUN_PAGE_TAG_VALUE, RUNS_PREFIX

from .nag import acknowledge

#: The CDK feature flag (cdk.json of a new app sets it) for the bucket policy way of logging.
SERVER_ACCESS_LOGS_USE_BUCKET_POLICY = "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"
# Incomplete multipart uploads of multi-GB wheels are billed until aborted.
_ABORT_MULTIPART_AFTER = Duration.days(7)


class Storage(Construct):
    """Staging, nightly, dependency cache and log buckets.

    Staging holds CI uploads under ``runs/`` (expired after ``staging_run_expiry_days``; each
    run's own index pages, tagged, after ``staging_run_page_expiry_days``, before any file
    they list: see ``wheelgate.core.lifecycle``), manifests and promotion records (kept).
    Nightly holds released files and index pages under Object Lock with a default retention
    (the promoter writes each page version with a shorter lock of its own, so replaced pages
    expire after ``nightly_noncurrent_version_days``), is versioned and is retained when the
    stack is deleted. Both block public access, encrypt with S3-managed keys,
    refuse plain HTTP and log access to ``log_bucket``.

    The cache holds third-party files ``wheelgate deps sync`` downloads (docs/deps.md); it is
    versioned but not locked. With ``cache_bucket_name`` the stack uses that existing bucket
    instead of creating one (and cannot manage its policy).

    Attributes:
        staging: the staging bucket.
        nightly: the nightly bucket (Object Lock).
        cache: the dependency cache bucket.
        cache_created: whether this stack created ``cache`` (and owns its bucket policy).
        log_bucket: S3 server access logs and CloudFront standard logs.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        staging_run_expiry_days: int,
        staging_run_page_expiry_days: int,
        staging_versioned: bool = False,
        nightly_retention_mode: str,
        nightly_retention_days: int,
        nightly_noncurrent_version_days: int,
        access_log_expiry_days: int,
        cache_bucket_name: str | None,
    ) -> None:
        super().__init__(scope, construct_id)
        # S3 server access logs are delivered by bucket policy, whatever the app's feature
        # flags say: the ACL way fails on buckets with ACLs disabled, every new bucket's default.
        self.node.set_context(SERVER_ACCESS_LOGS_USE_BUCKET_POLICY, True)

        self.log_bucket = secure_bucket(
            self,
            "AccessLogs",
            # CloudFront standard logging writes with ACLs; S3 server access logs use the
            # bucket policy CDK adds. BUCKET_OWNER_PREFERRED serves both.
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="ExpireLogs",
                    expiration=Duration.days(access_log_expiry_days),
                    abort_incomplete_multipart_upload_after=_ABORT_MULTIPART_AFTER,
                )
            ],
        )
        acknowledge(
            self.log_bucket,
            "AwsSolutions-S1",
            "This is the access log bucket; logging it into itself would loop.",
        )

        self.staging = secure_bucket(
            self,
            "Staging",
            # Off by default: staged runs are rebuilt rather than restored, so versions mostly
            # add cost; a deployment that wants an undo for staging turns it on.
            versioned=staging_versioned,
            access_logs=(self.log_bucket, "s3/staging/"),
            lifecycle_rules=_staging_rules(staging_run_expiry_days, staging_run_page_expiry_days),
        )

        retention = Duration.days(nightly_retention_days)
        self.nightly = secure_bucket(
            self,
            "Nightly",
            versioned=True,
            object_lock_default_retention=(
                s3.ObjectLockRetention.compliance(retention)
                if nightly_retention_mode == "COMPLIANCE"
                else s3.ObjectLockRetention.governance(retention)
            ),
            access_logs=(self.log_bucket, "s3/nightly/"),
            lifecycle_rules=[
                # Only index pages are ever overwritten, so only they have noncurrent versions.
                # The promoter locks each page version for nightly_page_retention_days (at
                # most these days, config.py), so the lock has ended when the rule removes it;
                # files keep the default retention above and are never noncurrent.
                s3.LifecycleRule(
                    id="ExpireNoncurrentIndexVersions",
                    noncurrent_version_expiration=Duration.days(nightly_noncurrent_version_days),
                    abort_incomplete_multipart_upload_after=_ABORT_MULTIPART_AFTER,
                ),
            ],
        )

        self.cache_created = cache_bucket_name is None
        self.cache: s3.IBucket = (
            s3.Bucket.from_bucket_name(self, "ExistingCache", cache_bucket_name)
            if cache_bucket_name is not None
            else secure_bucket(
                self,
                "Cache",
                # Sync never overwrites a key; versions keep any other writer's overwrite
                # recoverable. No Object Lock: a cached file may have to be removed.
                versioned=True,
                access_logs=(self.log_bucket, "s3/cache/"),
                lifecycle_rules=[_abort_incomplete_uploads()],
            )
        )


def secure_bucket(
    scope: Construct,
    construct_id: str,
    *,
    lifecycle_rules: Sequence[s3.LifecycleRule],
    access_logs: tuple[s3.IBucket, str] | None = None,
    object_ownership: s3.ObjectOwnership = s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
    versioned: bool | None = None,
    object_lock_default_retention: s3.ObjectLockRetention | None = None,
) -> s3.Bucket:
    """A bucket with WheelGate's baseline: public access blocked, encrypted with S3-managed
    keys (server access logging only delivers to those), plain HTTP refused, ACLs off (unless
    ``object_ownership`` says otherwise), and retained when the stack is deleted.

    Args:
        lifecycle_rules: the bucket's lifecycle rules.
        access_logs: the bucket its S3 server access logs go to, and their key prefix;
            ``None``: not logged.
        versioned: whether it keeps object versions (``None``: CDK's default, off).
        object_lock_default_retention: Object Lock's default retention; ``None``: no Object
            Lock.
    """
    log_bucket, log_prefix = access_logs if access_logs is not None else (None, None)
    return s3.Bucket(
        scope,
        construct_id,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        object_ownership=object_ownership,
        versioned=versioned,
        object_lock_enabled=True if object_lock_default_retention is not None else None,
        object_lock_default_retention=object_lock_default_retention,
        server_access_logs_bucket=log_bucket,
        server_access_logs_prefix=log_prefix,
        lifecycle_rules=list(lifecycle_rules),
        removal_policy=RemovalPolicy.RETAIN,
    )


def _abort_incomplete_uploads() -> s3.LifecycleRule:
    return s3.LifecycleRule(
        id="AbortIncompleteUploads",
        abort_incomplete_multipart_upload_after=_ABORT_MULTIPART_AFTER,
    )


def _staging_rules(run_expiry_days: int, run_page_expiry_days: int) -> list[s3.LifecycleRule]:
    return [
        s3.LifecycleRule(
            id="ExpireStagedRuns",
            prefix=RUNS_PREFIX,
            expiration=Duration.days(run_expiry_days),
        ),
        # A run's pages are rewritten as its jobs stage, so they are younger than the
        # files they list; they expire sooner (S3 applies the earliest of two rules),
        # and `wheelgate stage` stops writing them once the run is old enough that a
        # page could outlive a file (config: run_stage_window_days).
        s3.LifecycleRule(
            id="ExpireRunPages",
            prefix=RUNS_PREFIX,
            tag_filters={RUN_PAGE_TAG_KEY: RUN_PAGE_TAG_VALUE},
            expiration=Duration.days(run_page_expiry_days),
        ),
        _abort_incomplete_uploads(),
    ]
