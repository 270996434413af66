"""The local S3 a benchmark measures against, in a process of its own.

``wheelgate local --no-promoter`` (moto server, real HTTP) runs in another process, so the
objects it holds do not slow the measured one; this process gets its endpoint and buckets in
its environment, and local mode's request fix-ups.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from wheelgate.local.stack import install_moto_compatibility


@contextmanager
def local_s3() -> Iterator[dict[str, Any]]:
    """Start the local S3, yield its ready line (``env``, ``nightly_url``...), stop it."""
    local = subprocess.Popen(
        [sys.executable, "-m", "wheelgate", "local", "--no-promoter"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert local.stdout is not None
        ready: dict[str, Any] = json.loads(local.stdout.readline())
        os.environ.update(ready["env"])
        # This process talks to the local S3 itself: it needs local mode's request fix-ups.
        install_moto_compatibility()
        yield ready
    finally:
        local.terminate()
        try:
            local.wait(timeout=60)
        except subprocess.TimeoutExpired:
            local.kill()
