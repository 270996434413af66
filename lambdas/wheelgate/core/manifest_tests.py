"""What a manifest's test results may say: a test's name, its URL (https, no credentials; on an
allowed host when the promoter or the CLI is given ``WHEELGATE_TEST_URL_HOSTS``) and the tests
of one set (no name twice, not too many)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from wheelgate.core.manifest_limits import MAX_TEST_URL, MAX_TESTS_PER_SET
from wheelgate.core.redact import redact_urls, url_credentials

TEST_URL_PATTERN = r"^https://[^\s]+$"
_TEST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/+-]{0,127}")
_TEST_URL = re.compile(TEST_URL_PATTERN)


def check_test_name(name: str) -> str:
    """Return ``name`` if it may name a test; else raise ``ValueError``."""
    if not _TEST_NAME.fullmatch(name):
        raise ValueError(
            f"test name {name!r} must be letters, digits or . _ : / + - (1-128 characters)"
        )
    return name


def check_test_url(url: str) -> str:
    """Return ``url`` if a test result may link it; else raise ``ValueError``: an https URL
    without spaces that carries no credentials (records, ``wheelgate status`` and the public
    status page show it). The message masks what it refuses."""
    if len(url) > MAX_TEST_URL or not _TEST_URL.fullmatch(url):
        raise ValueError(
            redact_urls(
                f"test URL {url!r} is not an https URL without spaces "
                f"(at most {MAX_TEST_URL} characters)"
            )
        )
    try:
        carried = url_credentials(url)
    except ValueError as exc:
        raise ValueError(redact_urls(f"test URL {url!r} is malformed: {exc}")) from None
    if carried:
        raise ValueError(
            redact_urls(f"test URL {url!r} carries {carried}; test URLs are public, use none")
        )
    return url


def check_test_url_host(url: str, hosts: frozenset[str]) -> str:
    """Return ``url`` if its host is one of ``hosts`` (``WHEELGATE_TEST_URL_HOSTS``); else
    raise ``ValueError``."""
    host = urlsplit(url).hostname
    if host not in hosts:
        raise ValueError(
            redact_urls(f"test URL {url!r} is not on an allowed host ({', '.join(sorted(hosts))})")
        )
    return url


def check_set_tests(index: str, names: Sequence[str]) -> None:
    """Raise ``ValueError`` when the tests of the set for ``index`` repeat a name or are more
    than :data:`MAX_TESTS_PER_SET`."""
    if len(names) > MAX_TESTS_PER_SET:
        raise ValueError(f"set {index!r} has {len(names)} tests; at most {MAX_TESTS_PER_SET}")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"test {dupes[0]!r} is listed twice in set {index!r}")
