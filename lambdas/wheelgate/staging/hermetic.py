"""Environment for pip and uv that installs only from the index it is given.

This machine's global pip configuration can add an extra index and find-links; an install that
honours it proves nothing about WheelGate's index. The demo, the tests and the benchmarks all
run their clients with this environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def hermetic_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) without pip's and uv's own settings,
    with their configuration files and caches turned off."""
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if not k.startswith(("PIP_", "UV_"))}
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_NO_CACHE_DIR="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_INPUT="1",
        UV_NO_CONFIG="1",
        UV_NO_CACHE="1",
    )
    return env
