"""`wheelgate stage ... dist/` stages every wheel and sdist of the directory, leaves hidden files
out (saying so), and refuses the whole upload, naming the file and what is wrong with it, when
anything else is in it (real S3 API, moto server)."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from tests.integration.test_promoter import COMMIT
from wheelgate.cli.common import EXIT_OK, EXIT_USAGE
from wheelgate.cli.main import main
from wheelgate.core.layout import STAGING
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.storage.bucket import Bucket


def sdist(directory: Path, name: str, version: str) -> Path:
    path = directory / f"{name}-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo(f"{name}-{version}/PKG-INFO")
        archive.addfile(info)
    return path


def staged(staging: Bucket, run_id: str) -> list[str]:
    return sorted(o.key for o in staging.list(STAGING.run_prefix(run_id)))


def stage(run_id: str, *paths: Path) -> list[str]:
    return ["stage", "--run-id", run_id, "--index", "t/dist", "--commit", COMMIT,
            *map(str, paths)]  # fmt: skip


def test_a_directory_stages_every_wheel_and_sdist_in_it(
    buckets: tuple[Bucket, Bucket], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a build's dist/ with two wheels and an sdist
    dist = tmp_path / "dist"
    files = [build_wheel(dist, "alpha", "1.0"), build_wheel(dist, "beta", "2.0"),
             sdist(dist, "alpha", "1.0")]  # fmt: skip
    # When it is staged by its directory
    code = main(stage("dist-ok", dist))
    out = capsys.readouterr().out
    # Then all three are uploaded
    assert code == EXIT_OK, out
    assert sorted(json.loads(out)["uploaded"]) == sorted(f.name for f in files)
    keys = staged(buckets[0], "dist-ok")
    assert all(any(k.endswith("/" + f.name) for k in keys) for f in files)


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ("README.txt", "README.txt"),
        ("alpha-1.0.egg", "alpha-1.0.egg"),
        ("sub/", "sub: a directory in"),
    ],
)
def test_anything_else_in_the_directory_refuses_the_whole_upload(
    extra: str,
    named: str,
    buckets: tuple[Bucket, Bucket],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given dist/ with a wheel and something that is not a wheel or an sdist
    dist = tmp_path / "dist"
    build_wheel(dist, "gamma", "1.0")
    if extra.endswith("/"):
        (dist / extra).mkdir()
    else:
        (dist / extra).write_text("not a distribution\n")
    run_id = f"dist-{extra.strip('/').replace('.', '-')}"
    # When it is staged by its directory
    code = main(stage(run_id, dist))
    err = capsys.readouterr().err
    # Then the command names the file, and nothing was uploaded
    assert code == EXIT_USAGE, err
    assert f"{dist}/{named}" in err
    assert staged(buckets[0], run_id) == []


def test_a_directory_uv_build_left_is_staged_without_its_hidden_files(
    buckets: tuple[Bucket, Bucket], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given dist/ as `uv build -o dist` leaves it: the wheel, and a .gitignore of "*"
    dist = tmp_path / "dist"
    wheel = build_wheel(dist, "delta", "1.0")
    (dist / ".gitignore").write_text("*\n")
    # When it is staged by its directory
    code = main(stage("dist-uv", dist))
    out, err = capsys.readouterr()
    # Then the wheel is uploaded, and the hidden file is left out, saying so
    assert code == EXIT_OK, err
    assert json.loads(out)["uploaded"] == [wheel.name]
    assert f"ignoring {dist}/.gitignore: a hidden file, not a distribution" in err
    assert not any(".gitignore" in k for k in staged(buckets[0], "dist-uv"))


@pytest.mark.parametrize("hidden", [[], [".gitignore"]])
def test_a_directory_with_no_distribution_is_refused_as_empty(
    hidden: list[str],
    buckets: tuple[Bucket, Bucket],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "dist").mkdir()
    for name in hidden:
        (tmp_path / "dist" / name).write_text("*\n")
    code = main(stage(f"dist-empty-{len(hidden)}", tmp_path / "dist"))
    assert code == EXIT_USAGE
    assert "an empty directory; no wheels or sdists in it" in capsys.readouterr().err


def test_a_file_that_is_no_distribution_is_refused_for_what_it_is(
    buckets: tuple[Bucket, Bucket], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a hidden file named on the command line (not in a directory)
    hidden = tmp_path / ".env"
    hidden.write_text("X=1\n")
    # When it is staged, Then the refusal says it is no distribution, not that its name is bad
    assert main(stage("dist-named", hidden)) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"{hidden}: not a wheel or sdist file name" in err
    assert "plain ASCII" not in err
