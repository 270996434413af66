"""deps.yml validation: every problem at once, each with its entry and line; the schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wheelgate.cli.deps import render_table
from wheelgate.cli.main import main
from wheelgate.deps.config import load_deps
from wheelgate.deps.deps_file import json_schema
from wheelgate.deps.file_cache import content_type
from wheelgate.deps.mirror_runs import (
    REVIEW_TEST,
    RUN_PREFIX,
    check_mirror_run_id,
    new_mirror_run_id,
    python_run_id,
)
from wheelgate.deps.problems import DepsInvalid, DepsProblem
from wheelgate.deps.rows import Row
from wheelgate.deps.value_checks import key_problem, pinned_version

REPO = Path(__file__).parents[2]
SCHEMA_FILE = REPO / "lambdas/wheelgate/schemas/deps-v1.json"
SHA = "a" * 64

RULES = """\
schema: wheelgate/deps/v1
validation:
  hosts: [downloads.example.com]
  buckets:
    cache:
      prefixes: [third-party/]
  default_bucket: cache
  indexes: [v2/gfx94X-dcgpu, v2/gfx950-dcgpu]
  python_tags: [py3, cp312]
  platforms: [any, manylinux_*_x86_64]
"""


def problems(text: str) -> list[DepsProblem]:
    with pytest.raises(DepsInvalid) as caught:
        load_deps(text)
    return caught.value.problems


def test_the_example_deps_file_is_valid() -> None:
    deps = load_deps((REPO / "examples/deps.yml").read_text())
    assert deps.files
    assert deps.wheels
    assert deps.run_id is not None
    assert deps.run_id.startswith(RUN_PREFIX)
    assert {w.project for w in deps.wheels} >= {"filelock", "sympy"}


def test_committed_json_schema_is_the_generated_one() -> None:
    assert json.loads(SCHEMA_FILE.read_text()) == json_schema()


def test_valid_file_gives_targets_with_lines_and_expanded_indexes() -> None:
    deps = load_deps(
        RULES
        + f"""\
files:
  - url: https://downloads.example.com/ninja.zip
    key: third-party/ninja/ninja.zip
    sha256: {SHA}
python:
  - requirement: Filelock==3.18.0
    wheels:
      - url: https://downloads.example.com/w/filelock-3.18.0-py3-none-any.whl
        sha256: {SHA}
        size: 10
"""
    )
    (file,) = deps.files
    assert (file.bucket, file.key, file.line, file.size) == (
        "cache",
        "third-party/ninja/ninja.zip",
        12,
        None,
    )
    (wheel,) = deps.wheels
    assert wheel.project == "filelock"
    assert wheel.filename == "filelock-3.18.0-py3-none-any.whl"
    assert wheel.indexes == ("v2/gfx94X-dcgpu", "v2/gfx950-dcgpu")
    assert wheel.line == 18


def test_every_problem_is_reported_at_once_with_its_line() -> None:
    # Given a deps.yml with one mistake of each kind (line numbers in the comments)
    text = (
        RULES
        + f"""\
files:
  - url: https://downloads.example.com/a.zip          # 12
    key: third-party/a.zip
    sha256: {SHA}
    bucket: elsewhere                                 # 15 unknown bucket
  - url: https://downloads.example.com/b.zip
    key: secrets/b.zip                                # 17 outside prefixes
    sha256: {SHA}
  - url: https://downloads.example.com/c.zip
    key: third-party/../c.zip                         # 20 '..'
    sha256: {SHA}
  - url: https://downloads.example.com/d.zip
    key: third-party//d.zip                           # 23 '//'
    sha256: {SHA}
  - url: https://downloads.example.com/e.zip
    key: /third-party/e.zip                           # 26 leading '/'
    sha256: {SHA}
  - url: https://downloads.example.com/f.zip
    key: "third-party\\\\f.zip"                       # 29 backslash
    sha256: {SHA}
  - url: https://downloads.example.com/g.zip
    key: "third-party/g\\x07.zip"                     # 32 control character
    sha256: {SHA}
  - url: https://downloads.example.com/h.zip
    key: "third-party/h?.zip"                         # 35 regex
    sha256: {SHA}
  - url: http://downloads.example.com/i.zip           # 37 not https
    key: third-party/i.zip
    sha256: {SHA}
  - url: https://evil.example.net/j.zip               # 40 host not allowed
    key: third-party/j.zip
    sha256: {SHA}
  - url: https://downloads.example.com/k.zip         # 43 sha256 missing (the entry's line)
    key: third-party/k.zip
  - url: https://downloads.example.com/l.zip
    key: third-party/l.zip
    sha256: ABCDEF                                    # 47 malformed sha256
  - url: https://downloads.example.com/m.zip
    key: third-party/m.zip
    sha256: {SHA}
  - url: https://downloads.example.com/m.zip
    key: third-party/m.zip                            # 52 duplicate key
    sha256: {SHA}
  - url: https://downloads.example.com/other-m.zip
    key: third-party/m.zip                            # 55 same key, two URLs
    sha256: {SHA}
python:
  - requirement: "filelock>=3"                        # 58 not pinned
    wheels:
      - url: https://downloads.example.com/filelock-3.18.0-py3-none-any.whl
        sha256: {SHA}
  - requirement: "not a requirement!"                 # 62 unparseable
    wheels:
      - url: https://downloads.example.com/x-1-py3-none-any.whl
        sha256: {SHA}
  - requirement: sympy==1.14.0
    indexes: [v2/gfx94X-dcgpu, v9/nowhere]            # 67 unknown index directory
    wheels:
      - url: https://downloads.example.com/mpmath-1.3.0-py3-none-any.whl      # 69 name
        sha256: {SHA}
      - url: https://downloads.example.com/sympy-1.13.0-py3-none-any.whl      # 71 version
        sha256: {SHA}
      - url: https://downloads.example.com/sympy-1.14.0-cp39-cp39-win_amd64.whl  # 73 tags
        sha256: {SHA}
      - url: https://downloads.example.com/sympy-1.14.0.tar.gz                # 75 not a wheel
        sha256: {SHA}
"""
    )
    # When it is checked
    found = problems(text)
    # Then every mistake is reported, in line order, naming the entry
    by_line = {p.line: p for p in found}
    expected = {
        15: ("files[0]", "unknown bucket 'elsewhere'"),
        17: ("files[1]", "outside the prefixes of 'cache'"),
        20: ("files[2]", "contains '..'"),
        23: ("files[3]", "contains '//'"),
        26: ("files[4]", "starts with '/'"),
        29: ("files[5]", "contains a backslash"),
        32: ("files[6]", "contains control characters"),
        35: ("files[7]", "must be '/'-separated segments"),
        37: ("files[8]", "is not https"),
        40: ("files[9]", "host 'evil.example.net'"),
        43: ("files[10]", "sha256 is missing"),
        47: ("files[11]", "sha256 'ABCDEF' is not 64 lowercase hex digits"),
        52: ("files[13]", "duplicate key 'third-party/m.zip' (first listed at line 48)"),
        55: ("files[14]", "also listed at line 48 with another URL"),
        58: ("python[0] (filelock>=3)", "is not pinned with =="),
        62: ("python[1] (not a requirement!)", "cannot be parsed"),
        67: ("python[2] (sympy==1.14.0)", "unknown index directory 'v9/nowhere'"),
        69: ("python[2] (sympy==1.14.0)", "is not sympy 1.14.0 (it is mpmath 1.3.0)"),
        71: ("python[2] (sympy==1.14.0)", "(it is sympy 1.13.0)"),
        73: ("python[2] (sympy==1.14.0)", "Python tag(s) cp39 not in python_tags"),
        75: ("python[2] (sympy==1.14.0)", "is not a wheel file name"),
    }
    for line, (entry, words) in expected.items():
        assert line in by_line, f"nothing reported at line {line}: {found}"
        assert by_line[line].entry == entry
        assert words in by_line[line].message, by_line[line]
    assert len(found) == len(expected), "\n".join(map(str, found))
    assert found == sorted(found)


def test_platform_tags_are_checked() -> None:
    found = problems(
        RULES
        + f"""\
python:
  - requirement: torch==2.7.0
    indexes: [v2/gfx94X-dcgpu]
    wheels:
      - url: https://downloads.example.com/torch-2.7.0-cp312-cp312-manylinux_2_28_x86_64.whl
        sha256: {SHA}
      - url: https://downloads.example.com/torch-2.7.0-cp312-cp312-win_amd64.whl
        sha256: {SHA}
"""
    )
    assert [(p.line, p.message) for p in found] == [
        (
            17,
            "wheel 'torch-2.7.0-cp312-cp312-win_amd64.whl' has platform tag(s) win_amd64 "
            "not in platforms",
        )
    ]


def test_structure_problems_are_reported_with_lines() -> None:
    found = problems(
        """\
schema: wheelgate/deps/v0
validation:
  hosts: [downloads.example.com]
  buckets:
    cache: {prefixes: [third-party]}
  default_bucket: nowhere
  colour: blue
files:
  - url: https://downloads.example.com/a.zip
    key: third-party/a.zip
    key: third-party/b.zip
    sha256: aaaa
    size: -1
extra: 1
"""
    )
    messages = [(p.line, p.message) for p in found]
    assert (1, "schema is 'wheelgate/deps/v0'; expected 'wheelgate/deps/v1'") in messages
    assert any(line == 7 and "unknown field 'colour'" in m for line, m in messages)
    assert (11, "field 'key' is given twice (first at line 10)") in messages
    assert any(line == 12 and "not 64 lowercase hex digits" in m for line, m in messages)
    assert any(line == 13 and "size" in m for line, m in messages)
    assert (14, "unknown field 'extra'") in messages


def test_valid_rules_are_still_checked_when_one_rule_is_wrong() -> None:
    # A broken validation section is reported; rule-independent checks still run.
    found = problems(
        """\
schema: wheelgate/deps/v1
validation:
  hosts: []
files:
  - url: http://downloads.example.com/a.zip
    key: a//b
    sha256: {SHA}
""".replace("{SHA}", SHA)
    )
    assert [p.line for p in found] == [3, 5, 6]


def test_yaml_syntax_error_has_a_line() -> None:
    (problem,) = problems(RULES + "files:\n  - url: [unclosed\n")
    assert problem.line >= 12
    assert "not valid YAML" in problem.message


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("third-party/ninja/1.12.1/ninja-linux.zip", True),
        ("toolchains/clang+llvm-19.1.7.tar.xz", True),
        ("a/b/", False),
        ("a/./b", True),
        ("a/ b", False),
        ("caf\u00e9/x", False),
        ("", False),
    ],
)
def test_key_rules(key: str, ok: bool) -> None:
    assert (key_problem(key) is None) is ok


def test_requirements_must_be_exact_pins() -> None:
    assert pinned_version("Filelock==3.18.0") == ("filelock", pinned_version("x==3.18")[1])
    for bad in ("filelock", "filelock==3.*", "filelock[x]==1", "filelock==1; os_name=='nt'"):
        with pytest.raises(ValueError, match=r"pinned|plain"):
            pinned_version(bad)


def test_run_id_follows_the_python_section() -> None:
    deps = load_deps((REPO / "examples/deps.yml").read_text())
    indexes = deps.document.validation.indexes
    assert deps.run_id == python_run_id(deps.document.python, indexes)
    assert python_run_id(deps.document.python[:-1], indexes) != deps.run_id
    # `indexes: all` is resolved: a new index directory is a new mirror run.
    assert python_run_id(deps.document.python, [*indexes, "v3/new"]) != deps.run_id
    assert len(deps.run_id or "") == len(RUN_PREFIX) + 12
    assert REVIEW_TEST == "deps-review"


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("third-party/llvm.tar.xz", "application/x-xz"),
        ("third-party/src.tar.gz", "application/gzip"),
        ("third-party/ninja.zip", "application/zip"),
        ("third-party/notes.json", "application/json"),
        ("third-party/blob", "application/octet-stream"),
    ],
)
def test_cached_files_get_a_content_type_from_their_key(key: str, expected: str) -> None:
    assert content_type(key) == expected


def test_summary_table_is_aligned() -> None:
    table = render_table(
        [
            Row("files[0]", "s3://cache/third-party/a.zip", "uploaded", 3_000_000, 1.25),
            Row("python[0] (x==1)", "v2/x-1-py3-none-any.whl", "skipped", 10, 0, "in nightly"),
        ],
        timing=True,
    ).splitlines()
    assert table[0].split() == ["entry", "target", "action", "bytes", "seconds", "detail"]
    assert table[1].index("uploaded") == table[2].index("skipped") == table[0].index("action")
    assert "3.0 MB" in table[1]
    assert table[2].endswith("in nightly")


def test_each_sync_stages_under_a_fresh_unguessable_mirror_run() -> None:
    review = "deps-0123456789ab"
    runs = {new_mirror_run_id(review) for _ in range(100)}
    assert len(runs) == 100
    assert all(check_mirror_run_id(review, r) == r for r in runs)


@pytest.mark.parametrize(
    "run_id",
    [
        "deps-0123456789ab",  # the section's id alone: guessable
        "deps-ba9876543210-0123456789abcdef",  # another deps.yml's run
        "deps-0123456789ab-0123",  # too short a random part
        "deps-0123456789ab-0123456789ABCDEF",
    ],
)
def test_a_report_step_takes_only_a_mirror_run_of_its_own_deps_yml(run_id: str) -> None:
    with pytest.raises(ValueError, match=r"is not a mirror run of this deps\.yml"):
        check_mirror_run_id("deps-0123456789ab", run_id)


def test_a_url_password_is_never_quoted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = RULES + (
        "files:\n"
        "  - url: https://mirror:hunter22pw@downloads.example.com/a.zip\n"
        f"    key: third-party/a.zip\n    sha256: {SHA}\n"
    )
    (problem,) = problems(text)
    assert "carries credentials" in problem.message
    assert "hunter22pw" not in str(problem)
    path = tmp_path / "deps.yml"
    path.write_text(text)
    assert main(["deps", "check", str(path)]) == 2
    captured = capsys.readouterr()
    assert "carries credentials" in captured.err
    assert "hunter22pw" not in captured.out + captured.err
