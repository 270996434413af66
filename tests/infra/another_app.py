"""WheelGate as another CDK app gets it: the distribution built from this checkout, installed
with its ``cdk`` extra into a fresh virtualenv outside the repository, and
``tests/infra/platform_app.py`` synthesized there.

The build copies the files git knows (tracked, and new files not ignored) to a folder of its
own, so nothing that only lies around in the checkout (``build/layer``, ``.venv``) can help it;
``uv build`` makes the sdist and then the wheel from the sdist. The install pins the versions
of ``requirements.txt``, the dev venv's, so the two templates come from the same CDK.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.infra.synth import REPO_ROOT, Synthesis

UV = Path(sys.executable).with_name("uv")
PLATFORM_APP = Path(__file__).with_name("platform_app.py")
#: Generous: the first install on a fresh machine downloads the CDK (about 100 MB), and
#: synthesis runs pip for the layer.
TIMEOUT_SECONDS = 900


@dataclass(frozen=True)
class AnotherApp:
    """What the other app made: its synthesis, and where its ``wheelgate`` came from."""

    synthesis: Synthesis
    stack_name: str
    construct_id: str
    wheelgate_file: Path
    venv: Path
    #: Seconds each step took: build, install, synthesize.
    seconds: dict[str, float]


def _run(command: Sequence[str | Path], cwd: Path) -> str:
    # Nothing of this checkout's environment: no PYTHONPATH into it, no active virtualenv.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"} and not k.startswith("UV_")
    }
    env["JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"] = "20"
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, command))} exited {done.returncode}:\n{done.stdout[-3000:]}\n"
            f"{done.stderr[-3000:]}"
        )
    return done.stdout


def checkout_files() -> list[str]:
    """The files of this checkout git knows: tracked, or new and not ignored."""
    listed = _run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], REPO_ROOT
    )
    return sorted(f for f in listed.split("\0") if f and (REPO_ROOT / f).is_file())


def build_distribution(workdir: Path) -> tuple[Path, Path]:
    """The sdist and the wheel built from it, from a copy of :func:`checkout_files`."""
    source = workdir / "source"
    for name in checkout_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, source / name)
    dist = workdir / "dist"
    _run([UV, "build", "--quiet", "--out-dir", dist, source], workdir)
    (sdist,) = dist.glob("wheelgate-*.tar.gz")
    (wheel,) = dist.glob("wheelgate-*.whl")
    return sdist, wheel


def install(wheel: Path, venv: Path) -> Path:
    """A fresh virtualenv at ``venv`` (with pip, for the layer) holding ``wheel[cdk]``;
    returns its Python."""
    _run([UV, "venv", "--quiet", "--seed", "--python", sys.executable, venv], venv.parent)
    python = venv / "bin" / "python"
    constraints = REPO_ROOT / "requirements.txt"
    _run(
        [UV, "pip", "install", "--quiet", "--python", python, f"{wheel}[cdk]", "-c", constraints],
        venv.parent,
    )
    return python


def synthesize_another_app(workdir: Path, settings: dict[str, Any]) -> AnotherApp:
    """Build, install into ``workdir/venv`` and synthesize :mod:`platform_app` with
    ``settings`` (a ``wheelgate`` object) into ``workdir/cdk.out``."""
    seconds: dict[str, float] = {}
    started = time.monotonic()
    _, wheel = build_distribution(workdir)
    seconds["build"] = time.monotonic() - started
    started = time.monotonic()
    venv = workdir / "venv"
    python = install(wheel, venv)
    seconds["install"] = time.monotonic() - started
    app_dir = workdir / "app"
    app_dir.mkdir()
    shutil.copy2(PLATFORM_APP, app_dir / "app.py")
    (app_dir / "settings.json").write_text(json.dumps(settings))
    outdir = workdir / "cdk.out"
    started = time.monotonic()
    printed = _run([python, "app.py", "settings.json", outdir], app_dir)
    seconds["synthesize"] = time.monotonic() - started
    said = json.loads(printed.strip().splitlines()[-1])
    template = json.loads((outdir / f"{said['stack']}.template.json").read_text())
    report_path = outdir / "validation-report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    return AnotherApp(
        synthesis=Synthesis(template=template, report=report, outdir=outdir),
        stack_name=said["stack"],
        construct_id=said["construct"],
        wheelgate_file=Path(said["wheelgate"]),
        venv=venv,
        seconds=seconds,
    )
