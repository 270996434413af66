"""IAM proof matrix over the synthesized policies, evaluated offline by principalmapper.

The four matrices (objects, bucket settings, services, Object Lock) are computed for each way
WheelGate is deployed (``deployed``: this repository's app, another app that installed the
construct, and each of two stages of one app), and every check of them runs on each: the same
settings must grant the same, whichever app holds the construct and whichever stage it is.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.infra.iam_matrix import (
    BUCKET_MARK_END,
    BUCKET_MARK_START,
    BUCKET_REQUESTS,
    BUCKET_TARGETS,
    KEY_MARK_END,
    KEY_MARK_START,
    LOCK_MARK_END,
    LOCK_MARK_START,
    LOCK_REQUESTS,
    LOCK_TARGETS,
    MARK_END,
    MARK_START,
    PRINCIPALS,
    REQUESTS,
    SERVICE_MARK_END,
    SERVICE_MARK_START,
    SERVICE_PRINCIPALS,
    SERVICE_REQUESTS,
    TARGETS,
    Cell,
    Request,
    between,
    compute,
    compute_bucket_settings,
    compute_locks,
    compute_services,
    compute_verdict_key,
    render,
    render_bucket_settings,
    render_locks,
    render_services,
    render_verdict_key,
    without_statements,
)
from tests.infra.summary import publish
from tests.infra.synth import REPO_ROOT, Deployed

SECURITY_DOC = REPO_ROOT / "docs" / "security.md"
PUT, PUT_IF_NONE_MATCH, PUT_IF_MATCH, PART, DELETE, GET, RETENTION, BYPASS, TAGGING = (
    r.label for r in REQUESTS
)
#: Every way of writing an object: unconditional, If-None-Match, If-Match, or a part upload.
WRITES = {PUT, PUT_IF_NONE_MATCH, PUT_IF_MATCH, PART}
#: What a write-once key (runs/*) accepts: a creation with If-None-Match, and part uploads.
WRITE_ONCE = {PUT_IF_NONE_MATCH, PART}
EVERYTHING = {r.label for r in REQUESTS}
STAGING_TARGETS = [t for t in TARGETS if t.startswith("staging")]
#: Staged files (a run's index pages are updated in place: see the test below).
RUN_TARGETS = ("staging runs/", "staging runs/deps-*", "staging runs/import-*")
#: Who stages files under each of :data:`RUN_TARGETS`.
STAGERS = {
    "staging runs/": "build",
    "staging runs/deps-*": "deps",
    "staging runs/import-*": "promoter",
}
IMPORT_SOURCES = ("import source", "import source, other prefix")
#: The run history's keys the promoter writes, in a directory of index_dirs.
HISTORY_TARGETS = ("staging history/ head", "staging history/ page", "staging history/ month")
MIRROR_TARGETS = ("staging runs/deps-*", "staging manifests/deps-*")

#: (principal, target) -> requests allowed; every other cell must be denied.
EXPECTED_ALLOWED: dict[tuple[str, str], set[str]] = {
    **{("build", t): {GET} for t in STAGING_TARGETS},
    ("build", "staging runs/"): WRITE_ONCE | {GET},
    # A run's index pages are the one exception to write-once: the run's build jobs update
    # them in place (what a test then installs is bound by the manifest's evidence).
    ("build", "staging runs/ page"): WRITES | {GET, TAGGING},
    ("build", "nightly index"): {GET},
    # A stage call's history entry: created once, never replaced (nor are other runs').
    ("build", "staging history/_entries/"): WRITE_ONCE | {GET},
    # The closure of a run's index is walked through nightly's metadata files.
    ("build", "nightly .metadata"): {GET},
    ("reporter", "staging runs/"): {GET},
    ("reporter", "staging runs/ page"): {GET},
    ("reporter", "staging manifests/"): WRITES,
    ("reporter", "staging records/"): {GET},
    ("reporter", "staging records/_jobs/"): {GET},
    ("reporter", "staging runs/deps-*"): {GET},
    ("reporter", "staging runs/import-*"): {GET},
    # report holds each test's evidence to the bytes the run's index offers, nightly's too.
    **{
        ("reporter", t): {GET}
        for t in ("nightly files", "nightly .metadata", "nightly index", "nightly other dir")
    },
    # Its manifests/* grant stops at import requests too (both layers).
    ("reporter", "staging manifests/import-*"): set(),
    # The reporter's identity policy allows manifests/*; the bucket policy refuses overrides.
    ("reporter", "staging manifests/override-*"): set(),
    ("deps", "staging runs/deps-*"): WRITE_ONCE | {GET},
    ("deps", "staging manifests/deps-*"): WRITES,
    ("deps", "cache third-party/"): WRITES | {GET},
    # It reads every staging */index.json (a history's head is named like a page).
    ("deps", "staging history/ head"): {GET},
    **{("promoter", t): {GET} for t in STAGING_TARGETS},
    ("promoter", "staging records/"): WRITES | {GET},
    # Fan-out jobs (plan, items, done markers) are the promoter's to write, as records are.
    ("promoter", "staging records/_jobs/"): WRITES | {GET},
    ("promoter", "staging status/"): WRITES | {GET},
    # The history's head, page and shards, updated in place under conditional writes.
    **{("promoter", t): WRITES | {GET} for t in HISTORY_TARGETS},
    # What an import gathers, copied once (If-None-Match) from its source, which it reads
    # under the import_sources entry alone.
    ("promoter", "staging runs/import-*"): WRITE_ONCE | {GET},
    ("promoter", "import source"): {GET},
    # A released file is created once (If-None-Match), never replaced; pages are updated.
    ("promoter", "nightly files"): WRITE_ONCE | {GET},
    ("promoter", "nightly .metadata"): WRITE_ONCE | {GET},
    # It sets each page version's own (short) lock, which needs s3:PutObjectRetention.
    ("promoter", "nightly index"): WRITES | {GET, RETENTION},
    # Outside index_dirs the promoter writes nothing.
    ("promoter", "nightly other dir"): {GET},
    # The promoter role in another function's code reads as the promoter does, writes nothing.
    **{
        ("promoter-elsewhere", t): {GET}
        for t in TARGETS
        if not t.startswith("cache") and t != "import source, other prefix"
    },
    # The state machine's role reads a job's items (its Distributed Map), nothing else.
    ("fanout", "staging records/_jobs/"): {GET},
    # Break-glass (modelled with Action: *): in staging it writes override requests only (and
    # may still bypass retention, which staging does not have); nightly and the cache are its.
    **{("break-glass", t): {GET, BYPASS} for t in STAGING_TARGETS},
    ("break-glass", "staging manifests/override-*"): EVERYTHING,
    ("break-glass", "staging manifests/import-*"): EVERYTHING,
    # Nightly is its to delete and unlock, but not to replace a released file either.
    ("break-glass", "nightly files"): EVERYTHING - {PUT, PUT_IF_MATCH},
    ("break-glass", "nightly .metadata"): EVERYTHING - {PUT, PUT_IF_MATCH},
    ("break-glass", "nightly index"): EVERYTHING,
    ("break-glass", "nightly other dir"): EVERYTHING - {PUT, PUT_IF_MATCH},
    ("break-glass", "cache third-party/"): EVERYTHING,
    ("break-glass", "cache other prefix"): EVERYTHING,
    # An account administrator keeps read access but cannot write, delete or unlock anything;
    # nor can the deploy role (CloudFormation's), which only changes bucket settings.
    **{("account-admin", t): {GET} for t in TARGETS},
    **{("deploy", t): {GET} for t in TARGETS},
    # An import source is not the stack's: in its own account, its owner's administrators and
    # the break-glass role (Action: *) do what their policies say; another account nothing.
    **{
        (p, t): EVERYTHING
        for p in ("break-glass", "account-admin", "deploy")
        for t in IMPORT_SOURCES
    },
}


@pytest.fixture(scope="module")
def cells(deployed: Deployed, artifacts_dir: Path, request: pytest.FixtureRequest) -> list[Cell]:
    cells = compute(deployed.template)
    if deployed.name == "this app":
        publish(request.config, artifacts_dir, "iam-matrix.md", "IAM proof matrix", render(cells))
    return cells


def test_matrix_is_complete(cells: list[Cell]) -> None:
    assert len(cells) == len(PRINCIPALS) * len(TARGETS) * len(REQUESTS)


def test_every_cell_matches_the_expected_decision(cells: list[Cell]) -> None:
    wrong = [
        f"{c.principal} {c.request} {c.target}: got {'allow' if c.allowed else 'deny'}"
        for c in cells
        if c.allowed != (c.request in EXPECTED_ALLOWED.get((c.principal, c.target), set()))
    ]
    assert wrong == []


def _writers(cells: list[Cell], target: str, request: str) -> set[str]:
    return {c.principal for c in cells if c.allowed and c.target == target and c.request == request}


@pytest.mark.parametrize("target", RUN_TARGETS)
def test_runs_are_write_once_for_everyone(cells: list[Cell], target: str) -> None:
    # A PutObject without If-None-Match could replace a staged file or page: nobody may send
    # one, If-Match or not, though the roles that stage there may create (If-None-Match: *)
    # and upload parts.
    assert _writers(cells, target, PUT) == set()
    assert _writers(cells, target, PUT_IF_MATCH) == set()
    assert _writers(cells, target, PUT_IF_NONE_MATCH) == {STAGERS[target]}
    assert _writers(cells, target, PART) == {STAGERS[target]}


def test_a_runs_index_pages_are_updated_in_place_by_the_build_role_alone(
    cells: list[Cell],
) -> None:
    # The run's build jobs merge their entries into its pages with conditional writes (the
    # HTML page unconditionally, the JSON page with If-Match); nobody else writes them.
    for request in WRITES:
        assert _writers(cells, "staging runs/ page", request) == {"build"}, request


@pytest.mark.parametrize("target", MIRROR_TARGETS)
def test_only_deps_writes_mirror_runs(cells: list[Cell], target: str) -> None:
    for request in WRITES:
        assert _writers(cells, target, request) <= {"deps"}, request
    assert _writers(cells, target, PUT_IF_NONE_MATCH) == {"deps"}


def test_nobody_writes_staging_outside_its_prefixes(cells: list[Cell]) -> None:
    # Staging has no shared index pages any more: a key like <index>/<project>/index.html is
    # nobody's, and status/ is the promoter's alone.
    for request in WRITES:
        assert _writers(cells, "staging other keys", request) == set()
        assert _writers(cells, "staging status/", request) == {"promoter"}


def test_dev_cannot_write_staging(cells: list[Cell]) -> None:
    assert not any(
        c.allowed for c in cells if c.principal == "dev" and c.target.startswith("staging")
    )


@pytest.mark.parametrize("target", ["nightly files", "nightly other dir"])
def test_a_released_file_is_never_replaced(cells: list[Cell], target: str) -> None:
    # An unconditional write (or one with If-Match) to a released key would replace the wheel
    # pip downloads: nobody may send one, break-glass included; a creation with
    # If-None-Match: * (and the parts of a multipart copy) stays the promoter's.
    assert _writers(cells, target, PUT) == set()
    assert _writers(cells, target, PUT_IF_MATCH) == set()
    assert _writers(cells, "nightly files", PUT_IF_NONE_MATCH) == {"promoter", "break-glass"}
    assert _writers(cells, "nightly files", PART) == {"promoter", "break-glass"}


def test_the_promoter_writes_nightly_only_under_index_dirs(cells: list[Cell]) -> None:
    assert "promoter" not in {
        c.principal
        for c in cells
        if c.allowed and c.target == "nightly other dir" and c.request in WRITES
    }


def test_nobody_but_the_promoter_and_break_glass_writes_nightly(cells: list[Cell]) -> None:
    writers = {
        c.principal
        for c in cells
        if c.allowed and c.target.startswith("nightly") and c.request != GET
    }
    assert writers == {"promoter", "break-glass"}
    # (An import source is not the stack's bucket: its owner's rules apply there.)
    ours = [c for c in cells if c.target not in IMPORT_SOURCES]
    assert {c.principal for c in ours if c.allowed and c.request in (DELETE, BYPASS)} == {
        "break-glass"
    }
    # The promoter sets retention on index pages alone (their own short lock).
    assert {(c.principal, c.target) for c in ours if c.allowed and c.request == RETENTION} - {
        ("break-glass", t) for t in TARGETS
    } == {("promoter", "nightly index")}


@pytest.mark.parametrize("target", ["staging manifests/override-*", "staging manifests/import-*"])
def test_only_break_glass_writes_override_and_import_requests(
    cells: list[Cell], target: str
) -> None:
    assert _writers(cells, target, PUT) == {"break-glass"}
    # And in staging it writes nothing else.
    assert not any(
        c.allowed
        for c in cells
        if c.principal == "break-glass"
        and c.target.startswith("staging")
        and c.target not in ("staging manifests/override-*", "staging manifests/import-*")
        and c.request in WRITES | {DELETE}
    )


def test_the_promoter_reads_an_import_source_under_its_entry_alone(cells: list[Cell]) -> None:
    stack_roles = ("build", "reporter", "dev", "deps", "promoter", "fanout")
    readers = {
        (c.principal, c.target)
        for c in cells
        if c.allowed and c.target in IMPORT_SOURCES and c.principal in stack_roles
    }
    assert readers == {("promoter", "import source")}
    assert not _writers(cells, "import source", PUT_IF_NONE_MATCH) & set(stack_roles)


def test_nobody_but_deps_and_break_glass_writes_the_cache(cells: list[Cell]) -> None:
    writers = {
        (c.principal, c.target)
        for c in cells
        if c.allowed and c.target.startswith("cache") and c.request == PUT
    }
    assert writers == {
        ("deps", "cache third-party/"),
        ("break-glass", "cache third-party/"),
        ("break-glass", "cache other prefix"),
    }


STALE = (
    "docs/security.md is stale: run `.venv/bin/python -m tests.infra.{} --write docs/security.md`"
)


def test_security_doc_shows_the_current_matrix(cells: list[Cell]) -> None:
    document = SECURITY_DOC.read_text()
    assert between(document, MARK_START, MARK_END) == render(cells).strip(), STALE.format(
        "iam_matrix"
    )


# -- bucket settings: what a stack update changes ---------------------------------------


@pytest.fixture(scope="module")
def settings(deployed: Deployed) -> list[Cell]:
    return compute_bucket_settings(deployed.template)


#: (principal, bucket) -> bucket-level requests allowed; every other cell must be denied.
SETTINGS_ALLOWED: dict[tuple[str, str], set[str]] = {
    # CloudFormation's execution role applies a stack update: a changed bucket policy and a
    # new nightly_retention (PutBucketObjectLockConfiguration).
    **{("deploy", b): {r.label for r in BUCKET_REQUESTS} for b in BUCKET_TARGETS},
    # The break-glass role may change the lock configuration, never the policy.
    **{("break-glass", b): {"PutBucketObjectLockConfiguration"} for b in BUCKET_TARGETS},
}


def test_only_the_deploy_role_changes_bucket_settings(settings: list[Cell]) -> None:
    assert len(settings) == len(PRINCIPALS) * len(BUCKET_TARGETS) * len(BUCKET_REQUESTS)
    wrong = [
        f"{c.principal} {c.request} {c.target}: got {'allow' if c.allowed else 'deny'}"
        for c in settings
        if c.allowed != (c.request in SETTINGS_ALLOWED.get((c.principal, c.target), set()))
    ]
    assert wrong == []


def test_without_the_deploy_exemption_a_retention_change_fails(
    matrix_template: dict[str, Any],
) -> None:
    """The evaluator reads the exemption: a Deny for everyone would stop the deploy role, as
    DenyRetentionChanges did before (changing nightly_retention failed after the first deploy)."""
    mutated = copy.deepcopy(matrix_template)
    for resource in mutated["Resources"].values():
        if resource["Type"] == "AWS::S3::BucketPolicy":
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                if statement.get("Sid") == "DenyLockConfigurationChangesExceptDeploys":
                    statement.pop("Condition")
    cells = compute_bucket_settings(mutated)
    assert not any(c.allowed for c in cells if c.request == "PutBucketObjectLockConfiguration")


def test_without_the_policy_deny_an_administrator_rewrites_the_policy(
    matrix_template: dict[str, Any],
) -> None:
    cells = compute_bucket_settings(
        without_statements(matrix_template, "DenyPolicyChangesExceptDeploys")
    )
    assert {c.principal for c in cells if c.allowed and c.request == "PutBucketPolicy"} == {
        "deploy",
        "break-glass",
        "account-admin",
    }


def test_security_doc_shows_the_current_bucket_settings(settings: list[Cell]) -> None:
    document = SECURITY_DOC.read_text()
    assert between(document, BUCKET_MARK_START, BUCKET_MARK_END) == (
        render_bucket_settings(settings).strip()
    ), STALE.format("iam_matrix")


def test_matrix_notices_a_missing_bucket_policy_deny(matrix_template: dict[str, Any]) -> None:
    """The evaluator really reads the bucket policy: without its Deny, an admin could write."""
    mutated = without_statements(matrix_template, "DenyObjectWritesExceptPromoter")
    writers = {
        c.principal
        for c in compute(mutated)
        if c.allowed and c.request == PUT and c.target.startswith("nightly")
    }
    assert writers == {"promoter", "break-glass", "account-admin", "deploy"}


def test_matrix_notices_a_missing_override_deny(matrix_template: dict[str, Any]) -> None:
    """Without the override Deny, the reporter's manifests/* grant reaches override requests."""
    mutated = without_statements(matrix_template, "DenyOverrideWritesExceptBreakGlass")
    assert "reporter" in _writers(compute(mutated), "staging manifests/override-*", PUT)


@pytest.mark.parametrize(
    ("removed", "target", "writer"),
    [
        # The reporter's manifests/* grant reaches import requests without both Denies.
        (
            ("DenyImportWritesExceptBreakGlass", "DenyImportRequests"),
            "staging manifests/import-*",
            "reporter",
        ),
        # The build role's runs/* grant reaches an import's gathered files without both.
        (
            ("DenyImportRunWritesExceptPromoter", "DenyImportRuns"),
            "staging runs/import-*",
            "build",
        ),
    ],
)
def test_import_keys_are_kept_by_the_denies(
    matrix_template: dict[str, Any], removed: tuple[str, ...], target: str, writer: str
) -> None:
    assert writer not in _writers(compute(matrix_template), target, PUT_IF_NONE_MATCH)
    mutated = compute(without_statements(matrix_template, *removed))
    assert writer in _writers(mutated, target, PUT_IF_NONE_MATCH)


def test_matrix_notices_a_missing_write_once_deny(matrix_template: dict[str, Any]) -> None:
    """The evaluator reads the condition keys: without the Deny, build may overwrite a run,
    and the promoter a released file."""
    mutated = without_statements(
        matrix_template, "DenyRunWritesWithoutIfNoneMatch", "DenyFileWritesWithoutIfNoneMatch"
    )
    cells = compute(mutated)
    assert _writers(cells, "staging runs/", PUT) == {"build"}
    assert _writers(cells, "nightly files", PUT) == {"promoter", "break-glass"}


def test_the_identity_policies_alone_keep_build_off_status(
    matrix_template: dict[str, Any],
) -> None:
    # Without the bucket policy's status Deny, no role but the promoter has a grant there.
    cells = compute(without_statements(matrix_template, "DenyStatusWritesExceptPromoter"))
    for request in WRITES:
        assert _writers(cells, "staging status/", request) == {"promoter"}, request


def test_the_bucket_policy_alone_keeps_build_off_status(matrix_template: dict[str, Any]) -> None:
    # Given a build role whose identity policy (by mistake) grants every staging key
    mutated = copy.deepcopy(matrix_template)
    for resource in mutated["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy":
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                if statement.get("Sid") == "UploadStagedRuns":
                    statement["Resource"] = {
                        "Fn::Join": ["", [{"Fn::GetAtt": [_staging_id(mutated), "Arn"]}, "/*"]]
                    }
    # Then DenyStatusWritesExceptPromoter still keeps it off status/ ...
    for request in WRITES:
        assert _writers(compute(mutated), "staging status/", request) == {"promoter"}, request
    # ... and so does the Deny that holds build to runs/ and history entries, each alone
    denies = ("DenyStatusWritesExceptPromoter", "DenyBuildWritesOutsideRunsAndHistoryEntries")
    for kept in denies:
        guarded = compute(without_statements(mutated, *(d for d in denies if d != kept)))
        assert _writers(guarded, "staging status/", PUT) == {"promoter"}, kept
    # ... and it is those Denies which do: without both, the grant reaches status/
    unguarded = compute(without_statements(mutated, *denies))
    assert _writers(unguarded, "staging status/", PUT) == {"build", "promoter"}


def _staging_id(template: dict[str, Any]) -> str:
    from tests.infra.resolve import Resolver

    return Resolver(template).logical_id("wheelgate-staging")


def test_a_part_upload_without_the_creation_key_is_not_refused(
    matrix_template: dict[str, Any],
) -> None:
    # Given an UploadPart request that S3 evaluates without s3:ObjectCreationOperation at all
    bare = Request("UploadPart, no creation key", "s3:PutObject")
    # When the matrix evaluates it, then the write-once Deny does not apply: only a request
    # S3 marks as creating an object needs If-None-Match
    cells = compute(matrix_template, requests=[bare])
    assert _writers(cells, "staging runs/", bare.label) == {"build"}


@pytest.mark.parametrize(
    ("removed", "writers"),
    [
        # Each layer alone keeps other roles out of mirror runs ...
        (("DenyMirrorWritesExceptDeps",), set()),
        (("DenyMirrorRuns", "DenyMirrorManifests"), set()),
        # ... and without both, the build and reporter grants (runs/*, manifests/*) reach them.
        (
            ("DenyMirrorWritesExceptDeps", "DenyMirrorRuns", "DenyMirrorManifests"),
            {("build", "staging runs/deps-*"), ("reporter", "staging manifests/deps-*")},
        ),
    ],
)
def test_mirror_runs_are_kept_to_deps_by_each_layer(
    matrix_template: dict[str, Any], removed: tuple[str, ...], writers: set[tuple[str, str]]
) -> None:
    cells = compute(without_statements(matrix_template, *removed))
    found = {
        (c.principal, c.target)
        for c in cells
        if c.allowed and c.request == PUT_IF_NONE_MATCH and c.target in MIRROR_TARGETS
    }
    assert found - {("deps", t) for t in MIRROR_TARGETS} == writers


def test_the_promoter_role_in_another_function_is_refused_by_its_own_policy(
    matrix_template: dict[str, Any],
) -> None:
    # Given the promoter role passed to another function (the bucket policies exempt the role,
    # so only the role's own lambda:SourceFunctionArn Deny tells the two apart)
    cells = compute(matrix_template)
    assert _writers(cells, "staging records/", PUT) == {"promoter"}
    # When that Deny is removed, then the other function writes as the promoter
    unconfined = compute(without_statements(matrix_template, "DenyWritesFromOtherFunctions"))
    assert _writers(unconfined, "staging records/", PUT) == {"promoter", "promoter-elsewhere"}
    assert "promoter-elsewhere" in _writers(unconfined, "nightly files", PUT_IF_NONE_MATCH)


def test_the_state_machine_role_reads_only_job_objects_and_writes_nothing(
    cells: list[Cell],
) -> None:
    fanout = {(c.target, c.request) for c in cells if c.principal == "fanout" and c.allowed}
    assert fanout == {("staging records/_jobs/", GET)}
    # Not the run records beside them, not nightly
    assert ("staging records/", GET) not in fanout
    assert not any(t.startswith("nightly") for t, _ in fanout)


def test_the_bucket_policy_refuses_the_state_machine_writes_its_role_might_allow(
    matrix_template: dict[str, Any],
) -> None:
    # Given the state machine's role granted every staging key (by mistake)
    mutated = copy.deepcopy(matrix_template)
    for resource in mutated["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy":
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                if statement.get("Sid") == "ReadJobItems":
                    statement["Action"] = ["s3:GetObject", "s3:PutObject"]
                    statement["Resource"] = {
                        "Fn::Join": ["", [{"Fn::GetAtt": [_staging_id(mutated), "Arn"]}, "/*"]]
                    }
    cells = compute(mutated)
    # Then it reads all of staging: the identity policy is what confines its reads ...
    assert ("fanout", "staging records/") in {
        (c.principal, c.target) for c in cells if c.allowed and c.request == GET
    }
    # ... while the bucket policy still refuses it every write
    assert not any(c.allowed for c in cells if c.principal == "fanout" and c.request in WRITES)


@pytest.fixture(scope="module")
def services(deployed: Deployed) -> list[Cell]:
    return compute_services(deployed.template)


START, INVOKE, INVOKE_OTHER = (label for label, _, _ in SERVICE_REQUESTS)
#: principal -> service requests allowed; every other cell must be denied.
SERVICES_ALLOWED = {
    # The promoter starts an execution for a large set.
    "promoter": {START},
    # The state machine invokes the promoter function's steps, and starts its own Distributed
    # Map's child executions (StartExecution on itself, which CDK grants for the map).
    "fanout": {START, INVOKE},
}


def test_only_the_promoter_and_the_state_machine_start_it(services: list[Cell]) -> None:
    assert len(services) == len(SERVICE_PRINCIPALS) * len(SERVICE_REQUESTS)
    wrong = [
        f"{c.principal} {c.request}: got {'allow' if c.allowed else 'deny'}"
        for c in services
        if c.allowed != (c.request in SERVICES_ALLOWED.get(c.principal, set()))
    ]
    assert wrong == []
    for role in ("build", "reporter", "dev", "deps"):
        assert not any(c.allowed for c in services if c.principal == role), role


def test_the_service_matrix_reads_the_grants(matrix_template: dict[str, Any]) -> None:
    """Without the Lambda task's grant, the state machine's role can invoke nothing."""
    mutated = copy.deepcopy(matrix_template)
    for resource in mutated["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy":
            statements = resource["Properties"]["PolicyDocument"]["Statement"]
            statements[:] = [s for s in statements if s["Action"] != "lambda:InvokeFunction"]
    invokers = {c.principal for c in compute_services(mutated) if c.allowed and c.request == INVOKE}
    assert invokers == set()


def test_security_doc_shows_the_current_service_matrix(services: list[Cell]) -> None:
    document = SECURITY_DOC.read_text()
    assert between(document, SERVICE_MARK_START, SERVICE_MARK_END) == (
        render_services(services).strip()
    ), STALE.format("iam_matrix")


# -- Object Lock: pages get a short lock, files keep the bucket's ----------------------------

NO_LOCK, PAGE_CREATE_LOCKED, PAGE_UPDATE_LOCKED, FULL_LOCK, OTHER_MODE, RELOCK = (
    r.label for r in LOCK_REQUESTS
)
#: (principal, target) -> lock requests allowed; every other cell must be denied.
LOCKS_ALLOWED: dict[tuple[str, str], set[str]] = {
    # A released file is copied without lock headers and takes the default retention ...
    ("promoter", "nightly files"): {NO_LOCK},
    # ... a page is written with its own 7-day lock, created or updated in place.
    ("promoter", "nightly index"): {
        NO_LOCK,
        PAGE_CREATE_LOCKED,
        PAGE_UPDATE_LOCKED,
        FULL_LOCK,
        RELOCK,
    },
    # Break-glass may give a file the full lock, never a shorter one (nor re-lock it shorter).
    ("break-glass", "nightly files"): {NO_LOCK, FULL_LOCK},
    ("break-glass", "nightly other dir"): {NO_LOCK, FULL_LOCK},
    ("break-glass", "nightly index"): {
        NO_LOCK,
        PAGE_CREATE_LOCKED,
        PAGE_UPDATE_LOCKED,
        FULL_LOCK,
        RELOCK,
    },
}


@pytest.fixture(scope="module")
def locks(deployed: Deployed) -> list[Cell]:
    return compute_locks(deployed.template)


def test_pages_get_a_short_lock_and_files_the_full_one(locks: list[Cell]) -> None:
    assert len(locks) == len(PRINCIPALS) * len(LOCK_TARGETS) * len(LOCK_REQUESTS)
    wrong = [
        f"{c.principal} {c.request} {c.target}: got {'allow' if c.allowed else 'deny'}"
        for c in locks
        if c.allowed != (c.request in LOCKS_ALLOWED.get((c.principal, c.target), set()))
    ]
    assert wrong == []
    # Nobody writes anything in the other lock mode.
    assert not any(c.allowed for c in locks if c.request == OTHER_MODE)


def test_security_doc_shows_the_current_lock_matrix(locks: list[Cell]) -> None:
    document = SECURITY_DOC.read_text()
    assert between(document, LOCK_MARK_START, LOCK_MARK_END) == render_locks(locks).strip(), (
        STALE.format("iam_matrix")
    )


def _nightly_id(template: dict[str, Any]) -> str:
    from tests.infra.resolve import Resolver

    return Resolver(template).logical_id("wheelgate-nightly")


def test_the_bucket_policy_alone_keeps_a_files_lock_full(matrix_template: dict[str, Any]) -> None:
    # Given a misbehaving promoter: its s3:PutObjectRetention grant widened to every nightly
    # key, and the bucket policy's deny of file retention changes gone
    mutated = without_statements(matrix_template, "DenyFileRetentionChanges")
    for resource in mutated["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy":
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                if statement.get("Sid") == "LockNightlyPages":
                    statement["Resource"] = {
                        "Fn::Join": ["", [{"Fn::GetAtt": [_nightly_id(mutated), "Arn"]}, "/*"]]
                    }

    def promoter_may(cells: list[Cell], request: str) -> bool:
        (cell,) = [
            c
            for c in cells
            if (c.principal, c.target, c.request) == ("promoter", "nightly files", request)
        ]
        return cell.allowed

    # When it copies a file with a 7-day lock, or re-locks a released file for 7 days
    cells = compute_locks(mutated)
    # Then DenyShortFileLocks refuses both, though the full lock now goes through
    assert promoter_may(cells, FULL_LOCK)
    assert not promoter_may(cells, PAGE_CREATE_LOCKED)
    assert not promoter_may(cells, RELOCK)
    # And it is that Deny which does: without it, the file gets the short lock
    unguarded = compute_locks(without_statements(mutated, "DenyShortFileLocks"))
    assert promoter_may(unguarded, PAGE_CREATE_LOCKED)
    assert promoter_may(unguarded, RELOCK)


def test_without_the_mode_deny_a_page_takes_the_other_mode(matrix_template: dict[str, Any]) -> None:
    cells = compute_locks(without_statements(matrix_template, "DenyOtherLockModes"))
    writers = {(c.principal, c.target) for c in cells if c.allowed and c.request == OTHER_MODE}
    assert ("promoter", "nightly index") in writers


# -- The verdict key: only the promoter function signs, only deploys retire it ---------------


@pytest.fixture(scope="module")
def verdict_key(deployed: Deployed) -> list[Cell]:
    return compute_verdict_key(deployed.template)


def _who(cells: list[Cell], request: str) -> set[str]:
    return {c.principal for c in cells if c.allowed and c.request == request}


def test_only_the_promoter_function_signs_with_the_verdict_key(verdict_key: list[Cell]) -> None:
    # Not the promoter role from another function, not an administrator, not the deploy role
    assert _who(verdict_key, "Sign") == {"promoter"}
    # The public key is readable in the account (it is published anyway)
    assert "other-account" not in _who(verdict_key, "GetPublicKey")


def test_only_the_deploy_role_retires_the_verdict_key(verdict_key: list[Cell]) -> None:
    for request in ("ScheduleKeyDeletion", "DisableKey", "PutKeyPolicy"):
        assert _who(verdict_key, request) == {"deploy"}, request


def test_the_key_matrix_reads_the_key_policy_and_the_confinement(
    matrix_template: dict[str, Any],
) -> None:
    """Without the key policy's Denies an administrator may sign and delete; without the
    identity Deny the promoter role signs from any function."""
    mutated = copy.deepcopy(matrix_template)
    for resource in mutated["Resources"].values():
        if resource["Type"] == "AWS::KMS::Key":
            statements = resource["Properties"]["KeyPolicy"]["Statement"]
            statements[:] = [s for s in statements if s["Effect"] != "Deny"]
        if resource["Type"] == "AWS::IAM::Policy":
            statements = resource["Properties"]["PolicyDocument"]["Statement"]
            statements[:] = [
                s for s in statements if s.get("Sid") != "DenySigningFromOtherFunctions"
            ]
    cells = compute_verdict_key(mutated)
    assert {"account-admin", "promoter-elsewhere"} <= _who(cells, "Sign")
    assert "account-admin" in _who(cells, "ScheduleKeyDeletion")


def test_security_doc_shows_the_current_verdict_key_matrix(verdict_key: list[Cell]) -> None:
    document = SECURITY_DOC.read_text()
    assert between(document, KEY_MARK_START, KEY_MARK_END) == (
        render_verdict_key(verdict_key).strip()
    ), STALE.format("iam_matrix")
