"""The access table (stacks/access_table.py): the zones' writers come from the grants, and a
role's own policy denies what its wider grant covers of a zone kept for others.

What the synthesized policies allow and deny, principal by principal, is the IAM matrix's
(tests/infra/test_iam_matrix.py); these hold the derivations it rests on."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3

from stacks import access_table as table
from stacks.access_table import PUT, Bucket, Grant, Keys, Role, Where, Zone, writers
from stacks.bucket_policies import Principals, staging_denies

ROLE = "arn:aws:iam::111122223333:role"


def _where() -> Where:
    stack = cdk.Stack(cdk.App(), "Table")
    buckets = {kind: s3.Bucket(stack, kind.value) for kind in (Bucket.STAGING, Bucket.NIGHTLY)}
    return Where(buckets=buckets)


def _sids(role: Role) -> list[str]:
    return [s.sid or "" for s in table.role_statements(role, _where())]


def test_a_zone_is_kept_for_exactly_the_roles_with_a_writing_grant_within_it() -> None:
    assert writers(table.RUN_ZONE) == [Role.BUILD, Role.DEPS, Role.PROMOTER]
    assert writers(table.MANIFEST_ZONE) == [Role.REPORTER, Role.DEPS, Role.BREAK_GLASS]
    assert writers(table.IMPORT_RUN_ZONE) == [Role.PROMOTER]
    # A wider grant (the reporter's manifests/*) does not make its role a writer of a zone
    assert writers(table.OVERRIDE_ZONE) == [Role.BREAK_GLASS]


def test_a_new_writing_grant_widens_its_zones_exemption(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a row that lets the reporter write records
    extra = Grant(Role.REPORTER, "WriteRecords", PUT, (table.RECORDS,))
    monkeypatch.setattr(table, "GRANTS", (*table.GRANTS, extra))
    # Then the records zone is the reporter's too: the matrix, not the bucket, must catch it
    assert writers(table.RECORD_ZONE) == [Role.REPORTER, Role.PROMOTER]


def test_a_zone_nobody_may_write_is_refused_with_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table, "RECORD_ZONE", Zone("Record", (Keys(Bucket.STAGING, "nobody/*"),)))
    bucket = s3.Bucket(cdk.Stack(cdk.App(), "Nobody"), "staging")
    who = Principals(
        build=f"{ROLE}/b", reporter=f"{ROLE}/r", promoter=f"{ROLE}/p", deps=f"{ROLE}/d", deploy="x"
    )
    with pytest.raises(ValueError, match="no role of the access table writes zone Record"):
        staging_denies(bucket, who)


def test_a_roles_wider_grant_over_a_zone_kept_for_others_is_denied_in_its_own_policy() -> None:
    build = _sids(Role.BUILD)
    # After its last writing grant, what runs/* covers of the mirror and import zones
    assert build[build.index("TagRunPages") + 1 :][:2] == ["DenyMirrorRuns", "DenyImportRuns"]
    # And the create-only history entries' Deny right after the grant that writes them
    assert build[build.index("WriteHistoryEntries") + 1] == "DenyHistoryEntryRewrites"
    reporter = _sids(Role.REPORTER)
    assert reporter[1:3] == ["DenyMirrorManifests", "DenyImportRequests"]
    # A role that writes only what is its own denies nothing to itself
    assert not [sid for sid in _sids(Role.PROMOTER) if sid.startswith("Deny")]


def test_a_grant_over_keys_kept_for_others_without_a_name_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a row that lets the reporter write all of staging, runs/ (the Run zone's) included
    extra = Grant(Role.REPORTER, "WriteStaging", PUT, (table.STAGING_OBJECTS,))
    monkeypatch.setattr(table, "GRANTS", (*table.GRANTS, extra))
    # Then its policy cannot name the Deny of runs/*, and says so
    with pytest.raises(ValueError, match=r"Reporter's grants cover runs/\*, kept for others"):
        table.role_statements(Role.REPORTER, _where())


@pytest.mark.parametrize(
    ("keys", "other", "within"),
    [
        (table.MIRROR_RUNS, table.RUNS, True),
        (table.RUNS, table.MIRROR_RUNS, False),
        (table.RUN_PAGES[0], table.RUNS, True),
        (table.HISTORY_ENTRIES, table.RUN_HISTORY, False),
        (table.NIGHTLY_OBJECTS, table.STAGING_OBJECTS, False),
        (table.STAGING_BUCKET, table.STAGING_OBJECTS, False),
    ],
)
def test_keys_are_within_a_prefix_pattern_only_when_every_key_starts_with_it(
    keys: Keys, other: Keys, within: bool
) -> None:
    assert keys.within(other) is within
