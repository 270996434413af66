"""How much a manifest may hold (:mod:`wheelgate.core.manifest`): its bytes, its sets, a set's
files and tests, a test's installed files and refusals. ``docs/manifest.md`` states them."""

from __future__ import annotations

#: A manifest is a few hundred bytes per file; 1,000 files per set and a few sets fit easily.
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
MAX_FILES_PER_SET = 5000
MAX_SETS = 64
MAX_TESTS_PER_SET = 256
MAX_TEST_URL = 2048
#: A test may have to vouch for every file of a set (a mirror run's review names each reviewed
#: wheel), so it may name as many installed files as a set has files.
MAX_INSTALLED_PER_TEST = MAX_FILES_PER_SET
#: Refused evidence a test names: the first few are enough to reject its set and say why.
MAX_REFUSALS_PER_TEST = 20
#: A refusal's sentence names a file, a URL and what differs.
MAX_REFUSAL_MESSAGE = 2000
