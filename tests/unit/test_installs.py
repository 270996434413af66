"""What a test installed, read from pip's installation report or a hash-pinned requirements
file (``wheelgate report --installed``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.unit.samples import COMMIT, INDEX, SHA_A, SHA_B
from wheelgate.core.manifest import InstalledFile, ManifestFile, Outcome
from wheelgate.core.manifest_limits import MAX_INSTALLED_PER_TEST
from wheelgate.staging.evidence_of_tests import read_evidence, with_installs
from wheelgate.staging.installs import read_installs
from wheelgate.staging.manifest_building import TestSpec as Spec
from wheelgate.staging.manifest_building import build_manifest

SHA_C = "c" * 64


def pip_item(url: str, archive_info: dict[str, Any] | None, name: str = "torch") -> dict[str, Any]:
    """One ``install`` entry of a pip installation report (``pip install --report``)."""
    download_info: dict[str, Any] = {"url": url}
    if archive_info is None:
        download_info["dir_info"] = {}
    else:
        download_info["archive_info"] = archive_info
    return {
        "download_info": download_info,
        "is_direct": False,
        "requested": True,
        "metadata": {"metadata_version": "2.1", "name": name, "version": "2.7.0"},
    }


def pip_report(tmp_path: Path, *items: dict[str, Any]) -> Path:
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"version": "1", "pip_version": "26.3", "install": list(items)}))
    return path


def test_a_pip_report_gives_each_archive_its_sha256_and_decoded_file_name(
    tmp_path: Path,
) -> None:
    report = pip_report(
        tmp_path,
        pip_item(
            "https://staging.example/runs/1/v2/x/torch-2.7.0%2Brocm7.0-cp312-cp312-linux_x86_64.whl",
            {"hashes": {"sha256": SHA_A}, "hash": f"sha256={SHA_A}"},
        ),
        # An older pip names the hash only as "<algorithm>=<hex>".
        pip_item(
            "https://nightly.example/v2/x/filelock-3.18.0-py3-none-any.whl",
            {"hash": f"sha256={SHA_B.upper()}"},
            name="filelock",
        ),
        # Installed from a local directory: no archive, nothing staged can be it.
        pip_item("file:///src/project", None, name="project"),
        # An archive whose hash pip did not learn: no evidence for it.
        pip_item("https://elsewhere.example/other-1.0.tar.gz", {}, name="other"),
    )
    installs = read_installs(report)
    assert isinstance(installs, list)
    assert [i.file for i in installs] == [
        InstalledFile(sha256=SHA_A, filename="torch-2.7.0+rocm7.0-cp312-cp312-linux_x86_64.whl"),
        InstalledFile(sha256=SHA_B, filename="filelock-3.18.0-py3-none-any.whl"),
    ]
    # Each names its release (pip's metadata, which the report's fixture gives as 2.7.0,
    # before the file name) and the URL it came from, which report holds to what the run's
    # index offers
    assert [(i.project, i.version) for i in installs] == [("torch", "2.7.0"), ("filelock", "2.7.0")]
    assert installs[1].url == "https://nightly.example/v2/x/filelock-3.18.0-py3-none-any.whl"


def test_a_file_name_that_is_no_single_segment_is_left_out(tmp_path: Path) -> None:
    report = pip_report(
        tmp_path,
        pip_item("https://x.example/a%2Fb-1.0-py3-none-any.whl", {"hash": f"sha256={SHA_A}"}),
    )
    installs = read_installs(report)
    assert isinstance(installs, list)
    assert [i.file for i in installs] == [InstalledFile(sha256=SHA_A, filename=None)]


def test_a_requirements_file_gives_the_one_sha256_of_each_requirement(tmp_path: Path) -> None:
    requirements = tmp_path / "pins.txt"
    requirements.write_text(
        "# Run 1: install with pip --require-hashes --hash=sha256:" + "d" * 64 + "\n"
        "--index-url https://staging.example/runs/1/v2/x/\n"
        "torch==2.7.0 \\\n"
        "    # pinned by wheelgate pins\n"
        f"    --hash sha256:{SHA_A.upper()}\n"
        f"filelock==3.18.0 --hash=sha256:{SHA_C}  # from nightly\n"
        f"FileLock==3.18.0 --hash=sha256:{SHA_C}\n"
        "unpinned==1.0\n"
    )
    installs = read_installs(requirements)
    assert isinstance(installs, list)
    assert [i.file for i in installs] == [InstalledFile(sha256=SHA_A), InstalledFile(sha256=SHA_C)]
    # A name==version pin names its release (the first line's hash follows a comment line,
    # which ends the requirement it continued, as pip reads it)
    assert [(i.project, i.version) for i in installs] == [(None, None), ("filelock", "3.18.0")]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        # A 3.11 test installing from pins that allow the cp311 and the cp312 wheel
        (
            f"numpy==2.0 \\\n    --hash=sha256:{SHA_A} \\\n    --hash=sha256:{SHA_B}\n",
            "pins.txt:1: numpy==2.0 has 2 hashes, so it does not say which file the test "
            "installed; give the test's pip installation report",
        ),
        (
            f"torch==2.7.0 --hash=sha512:{'e' * 128} --hash=sha256:{SHA_C}\n",
            "pins.txt:1: torch==2.7.0 has 2 hashes",
        ),
        (
            f"torch==2.7.0 --hash=sha512:{'e' * 128}\n",
            "pins.txt:1: torch==2.7.0 is pinned by sha512, not sha256",
        ),
        (
            f"a==1 --hash=sha256:{SHA_A}\n# other wheel\nA==1 --hash=sha256:{SHA_B}\n",
            "pins.txt:3: A==1 pins a to another file than ",
        ),
    ],
)
def test_a_requirement_that_allows_several_files_is_refused_naming_its_line(
    content: str, expected: str, tmp_path: Path
) -> None:
    requirements = tmp_path / "pins.txt"
    requirements.write_text(content)
    with pytest.raises(ValueError, match="evidence") as refused:
        read_installs(requirements)
    assert expected in str(refused.value)
    assert "wheelgate pins" in str(refused.value) or "sha512" in str(refused.value)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[]", "is not a pip installation report"),
        ('{"version": "1"}', "is not a pip installation report"),
        ('{"install": [', "is not valid JSON"),
        (
            json.dumps({"install": [pip_item("file:///src", None)]}),
            "lists no archive with a SHA-256",
        ),
        (json.dumps({"install": []}), "lists no archive with a SHA-256"),
        (
            json.dumps({"install": [pip_item("https://x/a-1.0.tar.gz", {"hash": "sha256=abc"})]}),
            "a-1.0.tar.gz: sha256 'abc' is not 64 hex digits",
        ),
        ("torch==2.7.0\n", "has no --hash=sha256: pins"),
        ("torch==2.7.0 --hash=sha256:abc\n", "line 1: sha256 'abc' is not 64 hex digits"),
        (b"\xff\xfe", "is not UTF-8 text"),
    ],
)
def test_bad_evidence_files_are_refused_with_a_reason(
    content: str | bytes, expected: str, tmp_path: Path
) -> None:
    path = tmp_path / "evidence"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(ValueError, match="evidence") as refused:
        read_installs(path)
    assert expected in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"evidence .*absent.json: no such file"):
        read_installs(tmp_path / "absent.json")


def spec(name: str = "smoke", result: Outcome = Outcome.PASSED) -> Spec:
    return Spec(index=INDEX, name=name, result=result, url=None)


def test_installs_go_to_the_test_they_name_once_each(tmp_path: Path) -> None:
    first = tmp_path / "a.txt"
    first.write_text(f"a==1 --hash=sha256:{SHA_A}\nb==1 --hash=sha256:{SHA_B}\n")
    second = pip_report(
        tmp_path, pip_item("https://x/b-1-py3-none-any.whl", {"hash": f"sha256={SHA_B}"})
    )
    tests = [spec(), spec("gpu")]
    evidence = read_evidence(tests, [f"{INDEX}:smoke={first}", f"{INDEX}:smoke={second}"])
    tests, _ = with_installs(tests, evidence)
    assert [t.name for t in tests] == ["smoke", "gpu"]
    assert [i.sha256 for i in tests[0].installed] == [SHA_A, SHA_B]
    assert tests[1].installed == ()


@pytest.mark.parametrize(
    ("installed", "expected"),
    [
        ("smoke=x.txt", "'smoke=x.txt' is not DIR:NAME=PATH"),
        (f"{INDEX}:smoke=", "is not DIR:NAME=PATH"),
        (f"{INDEX}:lint=x.txt", f"names test 'lint' of {INDEX}, which no --test gives"),
        ("v2/other:smoke=x.txt", "names test 'smoke' of v2/other, which no --test gives"),
    ],
)
def test_installs_must_name_a_reported_test(installed: str, expected: str) -> None:
    with pytest.raises(ValueError, match=re.escape(expected)):
        read_evidence([spec()], [installed])


def test_a_test_names_a_bounded_number_of_installs(tmp_path: Path) -> None:
    requirements = tmp_path / "many.txt"
    requirements.write_text(
        "".join(f"p{n}==1 --hash=sha256:{n:064x}\n" for n in range(MAX_INSTALLED_PER_TEST + 1))
    )
    evidence = read_evidence([spec()], [f"{INDEX}:smoke={requirements}"])
    with pytest.raises(ValueError, match=f"at most {MAX_INSTALLED_PER_TEST}"):
        with_installs([spec()], evidence)


def test_the_manifest_carries_each_tests_installs(tmp_path: Path) -> None:
    report = pip_report(
        tmp_path, pip_item("https://x/torch-2.7.0-py3-none-any.whl", {"hash": f"sha256={SHA_A}"})
    )
    tests = [spec(), spec("lint")]
    tests, _ = with_installs(tests, read_evidence(tests, [f"{INDEX}:smoke={report}"]))
    staged = {INDEX: [ManifestFile(filename="torch-2.7.0-py3-none-any.whl", sha256=SHA_A, size=1)]}
    manifest = build_manifest(run_id="1", commit=COMMIT, staged=staged, tests=tests)
    document = json.loads(manifest.to_json())
    assert document["schema"] == "wheelgate/manifest/v2"
    assert document["sets"][0]["tests"] == [
        {
            "name": "smoke",
            "result": "passed",
            "installed": [{"sha256": SHA_A, "filename": "torch-2.7.0-py3-none-any.whl"}],
        },
        {"name": "lint", "result": "passed", "installed": []},
    ]
