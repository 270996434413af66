"""Which released wheel an installed distribution is (``wheelgate verify --installed``): the
candidates a project page lists, and a comparison held to each candidate's bytes."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

from wheelgate.core.wheelrecord import InstalledDistribution, Scheme
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.staging.installed_release import ReleasedWheel, compare, released_wheels

PAGE_URL = "https://nightly.example/v2/a/_archive/t/"
SCHEME = Scheme(
    purelib="lib/python3.12/site-packages",
    platlib="lib/python3.12/site-packages",
    scripts="bin",
    headers="include/site/python3.12",
    data="",
)


def entry(filename: str, sha256: str | None = "a" * 64, **extra: object) -> dict[str, object]:
    hashes = {"sha256": sha256} if sha256 else {}
    return {"filename": filename, "url": f"../../{filename}", "hashes": hashes, **extra}


def test_the_candidates_are_the_wheels_of_that_name_and_version_with_a_sha256() -> None:
    page = json.dumps(
        {
            "files": [
                entry("t-1.0-py3-none-any.whl", _wheelgate_verdict="../../v.verdict.json"),
                entry("T-1.0.0-cp312-cp312-linux_x86_64.whl"),
                entry("t-1.0.tar.gz"),
                entry("t-2.0-py3-none-any.whl"),
                entry("t-1.0-py2-none-any.whl", sha256=None),
            ]
        }
    ).encode()
    found = released_wheels(page, PAGE_URL, "T", "1.0")
    assert [w.filename for w in found] == [
        "t-1.0-py3-none-any.whl",
        "T-1.0.0-cp312-cp312-linux_x86_64.whl",
    ]
    assert found[0].url == "https://nightly.example/v2/a/t-1.0-py3-none-any.whl"
    assert found[0].verdict_url == "https://nightly.example/v2/a/v.verdict.json"
    assert found[1].verdict_url == found[1].url + ".verdict.json"


def installed_from(wheel: Path) -> InstalledDistribution:
    """The distribution a faithful installer leaves of ``wheel`` (a pure wheel)."""
    files: dict[str, str | None] = {}
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            files[f"{SCHEME.purelib}/{name}"] = hashlib.sha256(archive.read(name)).hexdigest()
    return InstalledDistribution(
        name="t", version="1.0", dist_info=f"{SCHEME.purelib}/t-1.0.dist-info", files=files
    )


def released(wheel: Path, sha256: str | None = None) -> ReleasedWheel:
    digest = sha256 or hashlib.sha256(wheel.read_bytes()).hexdigest()
    url = f"https://nightly.example/v2/a/{wheel.name}"
    return ReleasedWheel(wheel.name, url, digest, url + ".verdict.json")


def test_an_installed_distribution_matches_the_wheel_whose_verified_members_it_holds(
    tmp_path: Path,
) -> None:
    wheel = build_wheel(tmp_path, "t", "1.0")
    installed = installed_from(wheel)
    assert compare(installed, SCHEME, released(wheel), lambda url: wheel.read_bytes()).matches
    # and not once one of its files holds other bytes
    module = f"{SCHEME.purelib}/t/__init__.py"
    changed = installed.model_copy(update={"files": {**installed.files, module: "b" * 64}})
    found = compare(changed, SCHEME, released(wheel), lambda url: wheel.read_bytes())
    assert not found.matches
    assert any("t/__init__.py" in d for d in found.differences)


def test_a_candidate_with_other_bytes_than_listed_or_gone_is_refused(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, "t", "1.0")
    installed = installed_from(wheel)
    other = compare(installed, SCHEME, released(wheel, "c" * 64), lambda url: wheel.read_bytes())
    assert other.refused is not None
    assert "other bytes" in other.refused
    gone = compare(installed, SCHEME, released(wheel), lambda url: None)
    assert gone.refused is not None
    assert "gone" in gone.refused


def test_a_wheel_whose_record_lies_about_its_members_is_refused(tmp_path: Path) -> None:
    # Given a wheel whose RECORD names other bytes than its module holds, and an environment
    # holding what the RECORD claims
    honest = build_wheel(tmp_path / "honest", "t", "1.0")
    liar = tmp_path / honest.name
    with zipfile.ZipFile(honest) as source, zipfile.ZipFile(liar, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            target.writestr(name, b"VALUE = 'other'\n" if name == "t/__init__.py" else data)
    installed = installed_from(honest)
    # When it is compared, it is refused: its RECORD does not describe its members
    found = compare(installed, SCHEME, released(liar), lambda url: liar.read_bytes())
    assert not found.matches
    assert found.refused is not None
