"""`wheelgate stage ... dist/` stages every wheel and sdist of the directory, and refuses the
whole upload, naming the file, when anything else is in it (real S3 API, moto server)."""

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


def test_an_empty_directory_is_refused(
    buckets: tuple[Bucket, Bucket], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "dist").mkdir()
    code = main(stage("dist-empty", tmp_path / "dist"))
    assert code == EXIT_USAGE
    assert "an empty directory; no wheels or sdists in it" in capsys.readouterr().err
