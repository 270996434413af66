"""A public version's bytes never change under ``==``, checked with real pip and uv.

PEP 440 ``==1.0`` matches ``1.0+anything``, and installers prefer the highest local version. So
after each refused attempt to give a released version another local label, ``pip install
lab==1.0`` and ``uv pip install lab==1.0`` from nightly must install the very bytes they
installed before it; where the deployment allows new labels (``allow_new_local_labels``), the
new build is what ``==`` then installs, which is the configured change.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import uv_binary
from tests.integration.test_promoter import Run, wheel
from wheelgate.core.env_names import ENV_ALLOW_NEW_LOCAL_LABELS
from wheelgate.lambda_function import handler
from wheelgate.local.stack import LocalWheelGate
from wheelgate.staging.hermetic import hermetic_env
from wheelgate.storage.bucket import Bucket

# Real pip installs after each refused attempt: `make test` only.
pytestmark = pytest.mark.slow


def pip_chooses(index_url: str, requirement: str) -> str:
    """The SHA-256 of the file real pip installs for ``requirement`` (its installation
    report of a dry run: the archive it would install, with the hash it checked)."""
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
         "--quiet", "--report", "-", "--index-url", index_url, requirement],
        env=hermetic_env(), capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (item,) = json.loads(result.stdout)["install"]
    return str(item["download_info"]["archive_info"]["hashes"]["sha256"])


def uv_installs(index_url: str, requirement: str, target: Path) -> str:
    """What real uv installs for ``requirement``: the version its module says (each test
    wheel's module names its own version, so it names the file)."""
    result = subprocess.run(
        [uv_binary(), "pip", "install", "--no-cache", "--no-deps", "--target", str(target),
         "--index-url", index_url, requirement],
        env=hermetic_env(), capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (module,) = target.glob("*/__init__.py")
    return module.read_text()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


#: name: (project, first release, refused attempts, allowed with the setting or None).
SCENARIOS = {
    "unlabelled, then a label": ("eqa", "1.0", ["1.0+evil"], None),
    "labelled, then a new label": ("eqb", "2.7.0+rocm6.3", ["2.7.0+rocm6.4"], "2.7.0+rocm6.4"),
    "labelled, then unlabelled": ("eqc", "1.0+rocm6.3", ["1.0"], None),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_equals_installs_the_same_bytes_after_every_refused_attempt(
    stack: LocalWheelGate,
    buckets: tuple[Bucket, Bucket],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    scenario: str,
) -> None:
    project, first, refused, allowed = SCENARIOS[scenario]
    index = f"eq/{project}"
    index_url = f"{stack.nightly_url}{index}/"
    public = first.split("+")[0]
    pin = f"{project}=={public}"
    # Given a public version released to nightly...
    released = wheel(tmp_path / "r0", project, first)
    run = Run(buckets, tmp_path, f"{project}-0", index).stage(released)
    assert run.report(run.manifest())["state"] == "promoted"
    before = (pip_chooses(index_url, pin), uv_installs(index_url, pin, tmp_path / "uv0"))
    assert before == (sha256(released), f'__version__ = "{first}"\n')
    for n, version in enumerate(refused, start=1):
        # When a later run releases the same public version under another local label...
        later = wheel(tmp_path / f"r{n}", project, version)
        attempt = Run(buckets, tmp_path, f"{project}-{n}", index).stage(later)
        record: dict[str, Any] = attempt.report(attempt.manifest())
        # Then it is refused, and == installs the same bytes with pip and with uv.
        assert (record["state"], record["reason"]) == ("rejected", "local-label-conflict")
        assert f"{project}=={public}" in record["message"]
        after = (pip_chooses(index_url, pin), uv_installs(index_url, pin, tmp_path / f"uv{n}"))
        assert after == before
    if allowed is None:
        return
    # Where the deployment allows new labels for the directory, the new build is promoted and
    # is what == installs from then on.
    monkeypatch.setenv(ENV_ALLOW_NEW_LOCAL_LABELS, json.dumps([index]))
    handler.promoter.cache_clear()
    try:
        newer = wheel(tmp_path / "allowed", project, allowed)
        run = Run(buckets, tmp_path, f"{project}-allowed", index).stage(newer)
        assert run.report(run.manifest())["state"] == "promoted"
        assert pip_chooses(index_url, pin) == sha256(newer)
        assert (
            uv_installs(index_url, pin, tmp_path / "uv-allowed") == f'__version__ = "{allowed}"\n'
        )
    finally:
        monkeypatch.delenv(ENV_ALLOW_NEW_LOCAL_LABELS)
        handler.promoter.cache_clear()
