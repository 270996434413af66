"""Key under which infra tests leave tables for the terminal summary (see conftest)."""

from __future__ import annotations

import pytest

#: Title -> text, printed after the test run without needing ``-s``.
SUMMARY_KEY = pytest.StashKey[dict[str, str]]()
