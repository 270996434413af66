"""Import requests' rules, with no I/O: ids, the allow-list, what a source listing offers, what
another tool's index pages say, and the per-file screening against nightly."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from wheelgate.core.env_names import ENV_IMPORT_SOURCES
from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.import_rules import (
    Candidate,
    SourceFacts,
    import_id,
    new_import_request,
    parse_import,
    screen,
    select_files,
    source_allowed,
)
from wheelgate.core.import_sources import ImportSource, check_import_source, parse_source_uri
from wheelgate.core.objects import ListedObject
from wheelgate.core.setting_values import SettingsError
from wheelgate.core.settings import import_sources_from_env
from wheelgate.promotion.importing.sources import read_source_page

SOURCE = parse_source_uri("s3://old-release-bucket/v2/gfx94X-dcgpu/")
DAY = datetime(2025, 6, 1, tzinfo=UTC)
SHA = {c: c * 64 for c in "abcdef"}


def listed(name: str, days: int = 0, size: int = 100) -> ListedObject:
    return ListedObject(SOURCE.prefix + name, size, '"e"', DAY + timedelta(days=days))


def test_an_import_id_names_its_source_directory_and_date_alone() -> None:
    first = import_id(SOURCE.uri, "v2/gfx94X-dcgpu", None)
    assert first == import_id(SOURCE.uri, "v2/gfx94X-dcgpu", None)
    assert first.startswith("import-")
    assert (
        len(
            {
                first,
                import_id(SOURCE.uri, "v2/other", None),
                import_id(SOURCE.uri, "v2/gfx94X-dcgpu", DAY),
            }
        )
        == 3
    )


def test_a_request_whose_id_is_not_its_own_is_refused() -> None:
    request = new_import_request(SOURCE.uri, "v2/gfx94X-dcgpu", None, now=DAY)
    assert parse_import(request.to_json().encode(), expected_run_id=request.run_id) == request
    forged = json.loads(request.to_json())
    forged["source"] = "s3://old-release-bucket/v2/other/"
    with pytest.raises(PromotionRejected) as refused:
        parse_import(json.dumps(forged).encode(), expected_run_id=request.run_id)
    assert refused.value.reason is Reason.RUN_ID_MISMATCH
    with pytest.raises(PromotionRejected) as invalid:
        parse_import(b'{"schema": "wheelgate/import/v1"}', expected_run_id=request.run_id)
    assert invalid.value.reason is Reason.INVALID_MANIFEST
    with pytest.raises(PromotionRejected) as not_json:
        parse_import(b"\xff", expected_run_id=request.run_id)
    assert not_json.value.reason is Reason.INVALID_MANIFEST


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("old-release-bucket", ImportSource("old-release-bucket", "")),
        ("old-release-bucket/v2/", ImportSource("old-release-bucket", "v2/")),
        ("my.bucket/v2/gfx94X-dcgpu/", ImportSource("my.bucket", "v2/gfx94X-dcgpu/")),
    ],
)
def test_allow_list_entries_are_buckets_or_prefixes(entry: str, expected: ImportSource) -> None:
    assert check_import_source(entry) == expected


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("Old_Bucket", "does not name an S3 bucket"),
        ("ab", "does not name an S3 bucket"),
        ("old-bucket/v2", "ending in '/'"),
        ("old-bucket/v2/*/", "without '*'"),
        ("old-bucket/../", "has the segment '..'"),
        # A first segment that passes, then one that is not a place of its own.
        ("old-bucket/v2/../v1/", "has the segment '..'"),
        ("old-bucket/v2/./", "has the segment '.'"),
        ("old-bucket/v2//x/", "has an empty segment"),
        ("old-bucket/a b/", "spaces"),
    ],
)
def test_bad_allow_list_entries_are_named(entry: str, problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        check_import_source(entry)
    with pytest.raises(SettingsError) as env:
        import_sources_from_env({ENV_IMPORT_SOURCES: json.dumps([entry])})
    assert ENV_IMPORT_SOURCES in str(env.value)


def test_a_source_must_be_under_an_entry_and_outside_wheelgates_buckets() -> None:
    allowed = (check_import_source("old-release-bucket/v2/"),)
    assert source_allowed(SOURCE, allowed, ("staging", "nightly")) is None
    for uri in ("s3://old-release-bucket/v1/x/", "s3://old-release-bucket/", "s3://other/v2/"):
        refusal = source_allowed(parse_source_uri(uri), allowed, ())
        assert refusal is not None
        assert refusal.reason is Reason.IMPORT_SOURCE_NOT_ALLOWED
    whole = (check_import_source("nightly"),)
    refusal = source_allowed(parse_source_uri("s3://nightly/v2/"), whole, ("staging", "nightly"))
    assert refusal is not None
    assert "WheelGate's own buckets" in refusal.message
    assert source_allowed(SOURCE, (), ()) is not None


def test_a_listing_offers_distributions_and_refuses_other_files() -> None:
    selection = select_files(
        [
            listed("torch-2.7.0+rocm6.4-cp312-cp312-linux_x86_64.whl", 2),
            listed("torch-2.6.0+rocm6.3-cp312-cp312-linux_x86_64.whl", 1),
            listed("torch-2.6.0+rocm6.3-cp312-cp312-linux_x86_64.whl.metadata", 1),
            listed("torch-2.6.0.tar.gz", 3),
            listed("index.html"),
            listed("SHA256SUMS"),
            listed("empty-1.0-py3-none-any.whl", size=0),
            ListedObject("v2/gfx94X-dcgpu/torch/index.html", 10, '"e"', DAY),
            ListedObject("v2/elsewhere/x-1.0-py3-none-any.whl", 10, '"e"', DAY),
        ],
        SOURCE,
        None,
    )
    # Oldest first: the first of two spellings of one release is the one kept.
    assert [c.filename for c in selection.candidates] == [
        "torch-2.6.0+rocm6.3-cp312-cp312-linux_x86_64.whl",
        "torch-2.7.0+rocm6.4-cp312-cp312-linux_x86_64.whl",
        "torch-2.6.0.tar.gz",
    ]
    assert {r.filename: r.reason for r in selection.refused} == {
        "SHA256SUMS": "not-a-distribution",
        "empty-1.0-py3-none-any.whl": "not-a-distribution",
    }
    assert selection.projects == {"torch"}


def test_since_skips_older_objects() -> None:
    selection = select_files(
        [listed("a-1.0-py3-none-any.whl", 0), listed("a-2.0-py3-none-any.whl", 5)],
        SOURCE,
        DAY + timedelta(days=1),
    )
    assert [c.filename for c in selection.candidates] == ["a-2.0-py3-none-any.whl"]
    assert selection.skipped == 1


def test_a_pep_503_page_gives_hashes_yank_states_and_upload_times() -> None:
    page = (
        b"<html><body>\n"
        b'<a href="../torch-2.6.0%2Brocm6.3-py3-none-any.whl#sha256=' + SHA["a"].encode() + b'">'
        b"torch-2.6.0+rocm6.3-py3-none-any.whl</a>\n"
        b'<a href="https://cdn.example/v2/torch-2.7.0-py3-none-any.whl" data-yanked="">x</a>\n'
        b'<a href="torch-2.8.0-py3-none-any.whl" data-yanked="bad &amp; broken" '
        b'data-upload-time="2025-01-02T03:04:05Z">y</a>\n'
        b"<a>no link</a></body></html>"
    )
    facts = read_source_page(page, html=True)
    assert facts == {
        "torch-2.6.0+rocm6.3-py3-none-any.whl": SourceFacts(sha256=SHA["a"]),
        "torch-2.7.0-py3-none-any.whl": SourceFacts(yanked=True),
        "torch-2.8.0-py3-none-any.whl": SourceFacts(
            yanked="bad & broken", upload_time="2025-01-02T03:04:05.000000Z"
        ),
    }


def test_a_pep_691_page_gives_the_same() -> None:
    page = {
        "meta": {"api-version": "1.0"},
        "name": "torch",
        "files": [
            {"filename": "a-1.0-py3-none-any.whl", "url": "x", "hashes": {"sha256": SHA["b"]}},
            {
                "filename": "a-2.0-py3-none-any.whl",
                "url": "y",
                "hashes": {},
                "yanked": "reason",
                "upload-time": "2025-01-02T03:04:05.123456",
            },
        ],
    }
    facts = read_source_page(json.dumps(page).encode(), html=False)
    assert facts["a-1.0-py3-none-any.whl"] == SourceFacts(sha256=SHA["b"])
    assert facts["a-2.0-py3-none-any.whl"] == SourceFacts(
        yanked="reason", upload_time="2025-01-02T03:04:05.123456Z"
    )


@pytest.mark.parametrize("raw", [b"not json", b'{"files": 3}', b'{"files": [{"x": 1}]}', b"[]"])
def test_a_page_that_cannot_be_read_says_nothing(raw: bytes) -> None:
    assert read_source_page(raw, html=False) == {}


def candidate(name: str, sha: str | None, size: int = 100, **facts: object) -> Candidate:
    return Candidate(
        filename=name,
        size=size,
        sha256=sha,
        source=f"s3://old/{name}",
        facts=SourceFacts(**facts),  # type: ignore[arg-type]
    )


def test_screening_refuses_per_file_what_a_promotion_would_refuse() -> None:
    released = {
        "held-1.0-py3-none-any.whl": (SHA["a"], 100),
        "clash-1.0-py3-none-any.whl": (SHA["b"], 100),
        "spelt-1.0-py3-none-any.whl": (SHA["c"], 100),
    }
    screened = screen(
        [
            candidate("held-1.0-py3-none-any.whl", SHA["a"]),  # same bytes: already released
            candidate("clash-1.0-py3-none-any.whl", SHA["d"]),  # other bytes, same name
            candidate("spelt-1.0.0-py3-none-any.whl", SHA["d"]),  # same release, nightly
            candidate("dup-1.0-py3-none-any.whl", SHA["e"]),
            candidate("dup-1.0.0-py3-none-any.whl", SHA["f"]),  # same release, the source
            candidate("twin-1.0-py3-none-any.whl", SHA["e"]),
            candidate("twin-1.0.0-py3-none-any.whl", SHA["e"]),  # same bytes: allowed
            candidate("liar-1.0-py3-none-any.whl", SHA["a"], sha256=SHA["b"]),
        ],
        released,
        index="v2/x",
        allow_build_tag_rereleases=False,
    )
    assert [c.filename for c in screened.accepted] == [
        "held-1.0-py3-none-any.whl",
        "dup-1.0-py3-none-any.whl",
        "twin-1.0-py3-none-any.whl",
        "twin-1.0.0-py3-none-any.whl",
    ]
    assert screened.already == {"held-1.0-py3-none-any.whl"}
    refused = {r.filename: (r.reason, r.message) for r in screened.refused}
    assert refused["clash-1.0-py3-none-any.whl"][0] == "nightly-conflict"
    assert refused["spelt-1.0.0-py3-none-any.whl"][0] == "release-conflict"
    assert refused["spelt-1.0.0-py3-none-any.whl"][1].startswith("conflict with nightly: ")
    assert refused["dup-1.0.0-py3-none-any.whl"][1].startswith("duplicate at the source: ")
    assert refused["liar-1.0-py3-none-any.whl"][0] == "checksum-mismatch"


@pytest.mark.parametrize("allowed", [False, True])
def test_screening_refuses_per_file_what_would_change_an_equals_pin(allowed: bool) -> None:
    # Given nightly with lab 1.0 (no label) and rocm 2.7.0+rocm6.3
    released = {
        "lab-1.0-py3-none-any.whl": (SHA["a"], 100),
        "rocm-2.7.0+rocm6.3-py3-none-any.whl": (SHA["b"], 100),
    }
    # When a source offers a label for lab 1.0, an unlabelled and a new-label rocm 2.7.0, and
    # a new version with two labels
    screened = screen(
        [
            candidate("lab-1.0+evil-py3-none-any.whl", SHA["c"]),
            candidate("rocm-2.7.0-py3-none-any.whl", SHA["d"]),
            candidate("rocm-2.7.0+rocm6.4-py3-none-any.whl", SHA["e"]),
            candidate("rocm-2.8.0+rocm6.3-py3-none-any.whl", SHA["f"]),
            candidate("rocm-2.8.0+rocm6.4-py3-none-any.whl", SHA["a"]),
        ],
        released,
        index="v2/x",
        allow_build_tag_rereleases=False,
        allow_new_local_labels=allowed,
    )
    # Then each file that would change what == installs is refused alone, naming the rule;
    # a new label of a released version only where the deployment allows it
    refused = {r.filename: (r.reason, r.message) for r in screened.refused}
    assert refused["lab-1.0+evil-py3-none-any.whl"][0] == "local-label-conflict"
    assert "never gains one" in refused["lab-1.0+evil-py3-none-any.whl"][1]
    assert refused["rocm-2.7.0-py3-none-any.whl"][0] == "local-label-conflict"
    new_label = "rocm-2.7.0+rocm6.4-py3-none-any.whl"
    assert (new_label in refused) is not allowed
    assert [c.filename for c in screened.accepted] == [
        *([new_label] if allowed else []),
        "rocm-2.8.0+rocm6.3-py3-none-any.whl",
        "rocm-2.8.0+rocm6.4-py3-none-any.whl",
    ]


@pytest.mark.parametrize("sha256", [SHA["c"], None])
def test_screening_refuses_a_wheel_an_interpreter_would_install_instead_of_nightlys(
    sha256: str | None,
) -> None:
    # Given nightly with lt 1.0 for CPython 3.11 on glibc 2.17 x86_64
    released = {"lt-1.0-cp311-cp311-manylinux_2_17_x86_64.whl": (SHA["a"], 100)}
    # When a source offers lt 1.0 for glibc 2.28 and for aarch64, and a new version whose two
    # wheels arrive together (with hashes, and without: a dry run)
    screened = screen(
        [
            candidate("lt-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", sha256),
            candidate("lt-1.0-cp311-cp311-manylinux_2_17_aarch64.whl", sha256),
            candidate("lt-1.1-py3-none-any.whl", sha256),
            candidate("lt-1.1-cp311-none-any.whl", sha256),
        ],
        released,
        index="v2/x",
        allow_build_tag_rereleases=False,
    )
    # Then only the wheel that glibc 2.28 machines would install instead of nightly's is
    # refused
    (refused,) = screened.refused
    assert (refused.filename, refused.reason) == (
        "lt-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        "tag-shadowing",
    )
    assert "lt-1.0-cp311-cp311-manylinux_2_17_x86_64.whl" in refused.message
    assert [c.filename for c in screened.accepted] == [
        "lt-1.0-cp311-cp311-manylinux_2_17_aarch64.whl",
        "lt-1.1-py3-none-any.whl",
        "lt-1.1-cp311-none-any.whl",
    ]


def test_build_tags_are_judged_as_the_deployment_judges_them() -> None:
    both = [
        candidate("b-1.0-1-py3-none-any.whl", SHA["a"]),
        candidate("b-1.0-2-py3-none-any.whl", SHA["b"]),
    ]
    strict = screen(both, {}, index="v2/x", allow_build_tag_rereleases=False)
    assert [r.reason for r in strict.refused] == ["release-conflict"]
    lenient = screen(both, {}, index="v2/x", allow_build_tag_rereleases=True)
    assert not lenient.refused


def test_without_hashes_screening_says_it_did_not_compare_bytes() -> None:
    screened = screen(
        [
            candidate("held-1.0-py3-none-any.whl", None, size=100),
            candidate("grown-1.0-py3-none-any.whl", None, size=101),
            candidate("held-1.0.0-py3-none-any.whl", None),
        ],
        {
            "held-1.0-py3-none-any.whl": (SHA["a"], 100),
            "grown-1.0-py3-none-any.whl": (SHA["b"], 100),
        },
        index="v2/x",
        allow_build_tag_rereleases=False,
    )
    assert screened.already == {"held-1.0-py3-none-any.whl"}
    refused = {r.filename: r for r in screened.refused}
    assert refused["grown-1.0-py3-none-any.whl"].reason == "nightly-conflict"
    assert refused["held-1.0.0-py3-none-any.whl"].reason == "release-conflict"
    assert all(
        r.message.endswith("(bytes not compared: the import compares them)")
        for r in refused.values()
    )
