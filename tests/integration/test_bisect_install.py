"""Installing one run exactly (wheelgate.bisect.install) with real pip and uv, hermetically,
from the local stack's staging and nightly distributions over HTTP: the environment holds the
bytes a test's evidence names, again offline from the cache, and every trouble with a file is
the run's skip with its reason, never an error."""

from __future__ import annotations

import hashlib
import sys
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.integration.conftest import uv_binary
from tests.unit.bisect_runs import INDEX, evidence, history_run, wheel_file
from wheelgate.bisect.cache import BisectCache
from wheelgate.bisect.download import Downloader
from wheelgate.bisect.environment import Installer, venv_python
from wheelgate.bisect.install import PipRunInstaller, install_run
from wheelgate.bisect.run_installer import (
    SKIP_EXPIRED,
    SKIP_HASH_MISMATCH,
    SKIP_INSTALL_FAILED,
    SKIP_MISSING_FILE,
    PlannedFile,
    SkipRun,
)
from wheelgate.core.layout import NIGHTLY, STAGING
from wheelgate.history.model import HistoryRun
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.local.stack import LocalWheelGate
from wheelgate.staging.environment import inventory
from wheelgate.staging.local_artifacts import sha256_file
from wheelgate.storage.bucket import Bucket
from wheelgate.storage.http import HttpClient

NOW = datetime(2026, 3, 5, tzinfo=UTC)
#: Nothing listens there: a download from it fails.
CLOSED = "http://127.0.0.1:9/"
INSTALLERS = pytest.mark.parametrize("kind", ["pip", "uv"])


@pytest.fixture
def make_installer(stack: LocalWheelGate, tmp_path: Path) -> Callable[..., PipRunInstaller]:
    def make(
        kind: Installer = "pip", *, staging: str | None = None, nightly: str | None = None
    ) -> PipRunInstaller:
        return PipRunInstaller(
            cache=BisectCache(tmp_path / "cache"),
            staging_base_url=staging or stack.staging_url,
            nightly_base_url=nightly or stack.nightly_url,
            installer=kind,
            python=sys.executable,
            now=lambda: NOW,
            uv=uv_binary(),
        )

    return make


def stage(bucket: Bucket, run_id: str, wheel: Path, body: bytes | None = None) -> None:
    key = STAGING.artifact(run_id, INDEX, wheel.name)
    bucket.put(key, body or wheel.read_bytes(), content_type="application/octet-stream")


def release(bucket: Bucket, wheel: Path) -> None:
    key = NIGHTLY.artifact(INDEX, wheel.name)
    bucket.put(key, wheel.read_bytes(), content_type="application/octet-stream")


def holds(venv: Path) -> dict[str, str]:
    """Each distribution the venv holds, by name, with the SHA-256 of each file on disk of it
    that is not its ``.dist-info`` (which installers write their own) or bytecode pip compiled."""
    document = inventory(str(venv_python(venv)))
    purelib = document["scheme"]["purelib"]
    return {
        f"{d['name']}:{path.removeprefix(purelib + '/')}": sha
        for d in document["distributions"]
        for path, sha in d["files"].items()
        if path.startswith(purelib + "/")
        and ".dist-info/" not in path
        and "__pycache__" not in path
    }


def contents(*wheels: Path) -> dict[str, str]:
    """What :func:`holds` says a venv holding exactly ``wheels`` holds."""
    found = {}
    for wheel in wheels:
        name = wheel.name.split("-")[0].replace("_", "-")
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                if ".dist-info/" not in member:
                    found[f"{name}:{member}"] = hashlib.sha256(archive.read(member)).hexdigest()
    return found


def skip_of(installer: PipRunInstaller, run: HistoryRun, venv: Path) -> SkipRun:
    with pytest.raises(SkipRun) as caught:
        install_run(run, installer, venv)
    return caught.value


@pytest.mark.slow
@INSTALLERS
def test_a_run_installed_as_a_test_holds_its_evidence_then_again_offline_from_the_cache(
    kind: Installer,
    buckets: tuple[Bucket, Bucket],
    make_installer: Callable[..., PipRunInstaller],
    tmp_path: Path,
) -> None:
    # Given a run whose test installed its staged wheel and a dependency that lives in nightly
    staging, nightly = buckets
    run_id = f"bisect-exact-{kind}"
    core = build_wheel(tmp_path / "w", "bi-exact-core", "1.0+g515115e", requires=["bi-exact-dep"])
    dep = build_wheel(tmp_path / "w", "bi-exact-dep", "2.0")
    stage(staging, run_id, core)
    release(nightly, dep)
    own = wheel_file(run_id, core)
    run = history_run(
        run_id, [own], [evidence("smoke", [own], others={dep.name: sha256_file(dep)})]
    )

    # When it is installed as that test, then again into a new venv with nothing reachable
    first = install_run(run, make_installer(kind), tmp_path / "venv", as_test="smoke")
    offline = make_installer(kind, staging=CLOSED, nightly=CLOSED)
    second = install_run(run, offline, tmp_path / "again", as_test="smoke")

    # Then both hold the evidence's bytes exactly, and the second downloaded nothing
    evidence_hashes = {i.sha256 for i in run.tests[0].installed}
    cached = {sha256_file(offline.cache.cached(f) or Path("-")) for f in second.plan.files}
    assert cached == evidence_hashes
    assert holds(tmp_path / "venv") == holds(tmp_path / "again") == contents(core, dep)
    assert [f.downloaded for f in first.files] == [True, True]
    assert [f.downloaded for f in second.files] == [False, False]
    assert offline.cache.counters.downloads == 2


@pytest.mark.parametrize("other", ["another size", "same size"])
def test_a_file_whose_bytes_differ_from_the_history_skips_the_run_as_hash_mismatch(
    buckets: tuple[Bucket, Bucket],
    make_installer: Callable[..., PipRunInstaller],
    tmp_path: Path,
    other: str,
) -> None:
    wheel = build_wheel(tmp_path / "w", "bi-mismatch", "1.0")
    data = wheel.read_bytes()
    # Same size, one bit flipped: only the SHA-256 can tell these bytes from the recorded ones.
    body = b"other bytes" if other == "another size" else data[:-1] + bytes([data[-1] ^ 1])
    stage(buckets[0], f"bisect-mismatch-{other.replace(' ', '-')}", wheel, body=body)
    run_id = f"bisect-mismatch-{other.replace(' ', '-')}"
    own = wheel_file(run_id, wheel)
    installer = make_installer()

    skip = skip_of(installer, history_run(run_id, [own], [evidence("t", [own])]), tmp_path / "venv")

    assert skip.reason == SKIP_HASH_MISMATCH
    assert own.sha256 not in installer.cache


def test_a_file_gone_from_staging_skips_the_run_as_missing_file(
    make_installer: Callable[..., PipRunInstaller], tmp_path: Path
) -> None:
    own = wheel_file("bisect-gone", build_wheel(tmp_path / "w", "bi-gone", "1.0"))

    skip = skip_of(
        make_installer(),
        history_run("bisect-gone", [own], [evidence("t", [own])]),
        tmp_path / "venv",
    )

    assert skip.reason == SKIP_MISSING_FILE
    assert "HTTP 404" in skip.message


def test_an_expired_file_never_promoted_skips_the_run_as_expired_without_a_download(
    buckets: tuple[Bucket, Bucket],
    make_installer: Callable[..., PipRunInstaller],
    tmp_path: Path,
) -> None:
    wheel = build_wheel(tmp_path / "w", "bi-expired", "1.0")
    stage(buckets[0], "bisect-expired", wheel)
    own = wheel_file("bisect-expired", wheel, expires_at="2026-03-04T00:00:00.000000Z")
    installer = make_installer()

    skip = skip_of(
        installer, history_run("bisect-expired", [own], [evidence("t", [own])]), tmp_path / "venv"
    )

    assert skip.reason == SKIP_EXPIRED
    assert installer.cache.counters.downloads == 0


@pytest.mark.slow
def test_a_promoted_file_is_downloaded_from_nightly_not_from_staging(
    stack: LocalWheelGate,
    buckets: tuple[Bucket, Bucket],
    make_installer: Callable[..., PipRunInstaller],
    tmp_path: Path,
) -> None:
    wheel = build_wheel(tmp_path / "w", "bi-promoted", "1.0")
    stage(buckets[0], "bisect-promoted", wheel)
    release(buckets[1], wheel)
    own = wheel_file("bisect-promoted", wheel, promoted=True)

    install_run(
        history_run("bisect-promoted", [own], [evidence("t", [own])]),
        make_installer(),
        tmp_path / "venv",
    )

    assert stack.nightly_server.bytes_sent.get(own.nightly_key or "") == own.size
    assert own.staging_key not in stack.staging_server.bytes_sent
    assert holds(tmp_path / "venv") == contents(wheel)


@pytest.mark.slow
@INSTALLERS
def test_a_venv_reused_across_two_runs_holds_exactly_the_second_runs_files(
    kind: Installer,
    buckets: tuple[Bucket, Bucket],
    make_installer: Callable[..., PipRunInstaller],
    tmp_path: Path,
) -> None:
    # Given two runs sharing one version of a project with other bytes, each with a project
    # of its own
    runs = []
    for n, extra in ((1, "bi-reuse-first"), (2, "bi-reuse-second")):
        run_id = f"bisect-reuse-{kind}-{n}"
        core = build_wheel(tmp_path / str(n), "bi-reuse-core", "1.0", module_source=f"RUN = {n}\n")
        other = build_wheel(tmp_path / str(n), extra, "1.0")
        files = [wheel_file(run_id, core), wheel_file(run_id, other)]
        for wheel in (core, other):
            stage(buckets[0], run_id, wheel)
        runs.append((history_run(run_id, files, [evidence("t", files)]), core, other))
    installer = make_installer(kind)

    # When both are installed, one after the other, into one venv
    for run, _, _ in runs:
        install_run(run, installer, tmp_path / "venv")

    # Then it holds the second run's files, and nothing of the first
    _, core, other = runs[1]
    assert holds(tmp_path / "venv") == contents(core, other)


@INSTALLERS
def test_an_install_the_installer_refuses_skips_the_run_as_install_failed(
    kind: Installer,
    buckets: tuple[Bucket, Bucket],
    make_installer: Callable[..., PipRunInstaller],
    tmp_path: Path,
) -> None:
    run_id = f"bisect-refused-{kind}"
    # Given a wheel for this interpreter's tags whose metadata refuses every Python there is
    wheel = build_wheel(tmp_path / "w", "bi-refused", "1.0", requires_python=">=4")
    stage(buckets[0], run_id, wheel)
    own = wheel_file(run_id, wheel)
    run = history_run(run_id, [own], [evidence("t", [own])])

    with pytest.raises(SkipRun) as caught:
        install_run(run, make_installer(kind), tmp_path / "venv", as_test="t")

    assert caught.value.reason == SKIP_INSTALL_FAILED
    assert "failed (exit" in caught.value.message


def test_a_file_that_stays_unreachable_is_skipped_as_missing_file_after_the_retries(
    tmp_path: Path,
) -> None:
    file = PlannedFile("bi-away-1.0-py3-none-any.whl", "a" * 64, 10, CLOSED + "away.whl")

    with pytest.raises(SkipRun) as caught:
        Downloader(HttpClient(attempts=3, backoff=0.01)).download(file, tmp_path / "part")

    assert caught.value.reason == SKIP_MISSING_FILE
    assert "gave up after 3 attempts" in caught.value.message
    assert CLOSED + "away.whl" in caught.value.message
    assert not (tmp_path / "part").exists()
