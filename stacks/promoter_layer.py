"""The promoter's dependency layer: the packages of ``layer/requirements.txt`` (shipped with
this package), built for the function's platform without Docker.

Either built beforehand into a directory (``make layer``, which runs ``python -m
stacks.promoter_layer build/layer``) and given to the construct as ``layer_dir``, or built by
pip during synthesis through CDK's local bundling (:func:`layer_code` without a directory), so
an app that installed WheelGate with pip needs nothing from this repository. Both run
:func:`build_layer`.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import BundlingOptions, ILocalBundling
from aws_cdk import aws_lambda as lambda_

#: What the promoter imports that the Lambda runtime lacks, pinned (boto3 and botocore to
#: requirements.txt's versions: tests/unit/test_layer_requirements.py).
REQUIREMENTS = Path(__file__).resolve().parent / "layer" / "requirements.txt"
#: The function's platform (stacks/promoter_function.py: arm64, CPython 3.13), for pip: wheels
#: only, since nothing can be compiled here for another platform.
PLATFORM_OPTIONS = (
    *("--platform", "manylinux2014_aarch64", "--implementation", "cp"),
    *("--python-version", "3.13", "--only-binary=:all:"),
)
#: Where Lambda looks for a Python layer's packages, inside the layer.
PACKAGES_DIR = "python"
#: The stamp `make layer` leaves in a built layer; never part of the asset.
STAMP = ".built"
#: Lines of pip's output a failed build shows.
OUTPUT_TAIL_LINES = 15
_TIMEOUT_SECONDS = 900
#: This module's name (``stacks.promoter_layer`` in a checkout, ``wheelgate.cdk.promoter_layer``
#: installed).
_MODULE = __spec__.name if __spec__ else __name__


class LayerBuildError(RuntimeError):
    """pip could not build the layer (no access to the package index, no pip, ...)."""


def build_layer(target: Path, *, python: str = sys.executable) -> None:
    """Install :data:`REQUIREMENTS` for the function's platform into ``target/python``.

    Raises :class:`LayerBuildError` with pip's command and the end of its output, saying how to
    build the layer elsewhere and pass it as ``layer_dir`` instead.
    """
    command = [
        python,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-input",
        "--disable-pip-version-check",
        *PLATFORM_OPTIONS,
        "--target",
        str(target / PACKAGES_DIR),
        "-r",
        str(REQUIREMENTS),
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_TIMEOUT_SECONDS, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LayerBuildError(_failure(command, str(exc))) from exc
    if done.returncode != 0:
        raise LayerBuildError(
            _failure(command, f"exit {done.returncode}: {done.stderr or done.stdout}")
        )


def _failure(command: Sequence[str], output: str) -> str:
    tail = "\n".join(output.strip().splitlines()[-OUTPUT_TAIL_LINES:])
    return (
        "the WheelGate promoter's dependency layer could not be built with pip (it needs pip "
        "and access to the package index at synthesis): "
        f"{' '.join(command)}\n{tail}\n"
        f"Build it where that works (python -m {_MODULE} DIR) and pass layer_dir=DIR to "
        "WheelGate"
    )


@jsii.implements(ILocalBundling)
class _PipBundling:
    """CDK local bundling that runs :func:`build_layer` into the asset's output directory."""

    def try_bundle(self, output_dir: str, *_options: Any, **_keywords: Any) -> bool:
        build_layer(Path(output_dir))
        return True


def layer_code(layer_dir: Path | None) -> lambda_.Code:
    """The layer's code: ``layer_dir`` as built (it must hold ``python/``), or with ``None``
    built by pip at synthesis (its asset hash is that of the requirements and the platform, so
    an unchanged layer is built once per cloud assembly directory).

    Raises ``FileNotFoundError`` naming ``make layer`` when ``layer_dir`` has no ``python/``.
    """
    if layer_dir is not None:
        if not (layer_dir / PACKAGES_DIR).is_dir():
            raise FileNotFoundError(
                f"promoter dependency layer {layer_dir / PACKAGES_DIR} is missing: run "
                "`make layer`, or leave layer_dir unset to build it with pip at synthesis"
            )
        return lambda_.Code.from_asset(
            str(layer_dir), exclude=["**/__pycache__", "**/*.pyc", STAMP]
        )
    fingerprint = hashlib.sha256(
        "\n".join([REQUIREMENTS.read_text(encoding="utf-8"), *PLATFORM_OPTIONS]).encode()
    ).hexdigest()
    return lambda_.Code.from_asset(
        str(REQUIREMENTS.parent),
        asset_hash=fingerprint,
        bundling=BundlingOptions(
            # Never started: the local bundling builds the layer or raises.
            image=lambda_.Runtime.PYTHON_3_13.bundling_image,
            local=_PipBundling(),
        ),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m stacks.promoter_layer DIR``: build the layer into ``DIR`` (``make layer``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(f"usage: python -m {_MODULE} DIR", file=sys.stderr)
        return 2
    try:
        build_layer(Path(args[0]))
    except LayerBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
