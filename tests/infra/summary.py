"""Key under which infra tests leave tables for the terminal summary (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

#: Title -> text, printed after the test run without needing ``-s``.
SUMMARY_KEY = pytest.StashKey[dict[str, str]]()


def publish(
    config: pytest.Config, artifacts_dir: Path, filename: str, title: str, table: str
) -> None:
    """Keep ``table`` as ``test-artifacts/<filename>`` and print it in the terminal summary."""
    (artifacts_dir / filename).write_text(table)
    config.stash.setdefault(SUMMARY_KEY, {})[f"{title} (test-artifacts/{filename})"] = table
