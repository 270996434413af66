"""Every HTTP read rides out a flaky network: through a proxy that answers each path first with a
503, then drops the connection before the response, then drops it halfway through the body
(tests/integration/faulty_proxy.py), the run history, a staged and a nightly file, an index page
and a deps download all arrive whole. A store that is down ends the command with exit 4,
naming it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.broken_storage import free_port
from tests.integration.faulty_proxy import FAULTS, FaultyProxy, faulty_proxy
from tests.integration.test_run_history import buckets, entry_keys, service, stage_wheels
from wheelgate.bisect.download import Downloader
from wheelgate.bisect.run_installer import PlannedFile
from wheelgate.cli.main import main
from wheelgate.core.layout import NIGHTLY, PAGES, STAGING, key_url
from wheelgate.deps.download import Fetcher, https_client
from wheelgate.history.reader import HttpHistorySource, read_history
from wheelgate.local.sample_wheels import build_wheel
from wheelgate.local.stack import LocalWheelGate
from wheelgate.promotion.event import ManifestEvent
from wheelgate.storage.http import DEFAULT_ATTEMPTS, HttpClient

INDEX = "faults/http"
PROJECT = "faultpkg"
#: What storage answers when it is down: the CLI's exit code for a storage error.
EXIT_STORAGE = 4
#: The product's client (its attempts, the retries and their causes), waiting less between tries.
CLIENT = HttpClient(backoff=0.01)


@pytest.fixture
def staging_proxy(stack: LocalWheelGate) -> Iterator[FaultyProxy]:
    with faulty_proxy(stack.staging_url) as proxy:
        yield proxy


@pytest.fixture
def nightly_proxy(stack: LocalWheelGate) -> Iterator[FaultyProxy]:
    with faulty_proxy(stack.nightly_url) as proxy:
        yield proxy


def every_fault_met(proxy: FaultyProxy, reads: int) -> bool:
    return all(proxy.faults[fault] == reads for fault in FAULTS)


def test_the_run_history_and_a_staged_file_ride_out_503s_and_dropped_connections(
    stack: LocalWheelGate, staging_proxy: FaultyProxy, tmp_path: Path
) -> None:
    # Given a run staged and folded into the history
    wheel = build_wheel(tmp_path / "w", PROJECT, "1.0")
    stage_wheels(stack, "9101", INDEX, wheel)
    [key] = entry_keys(INDEX)
    service(stack).handle(ManifestEvent(key))

    # When the history and the staged file are read through the flaky proxy
    [run] = read_history(HttpHistorySource(staging_proxy.url, CLIENT.get), INDEX)
    staged = key_url(staging_proxy.url, STAGING.artifact("9101", INDEX, wheel.name))
    data = wheel.read_bytes()
    file = PlannedFile(wheel.name, hashlib.sha256(data).hexdigest(), len(data), staged)
    size = Downloader(CLIENT).download(file, tmp_path / "staged.whl")

    # Then both arrive whole, each read having met every fault once (head, month, file)
    assert run.run_id == "9101"
    assert (size, (tmp_path / "staged.whl").read_bytes()) == (len(data), data)
    assert every_fault_met(staging_proxy, 3)


def test_a_nightly_file_an_index_page_and_a_deps_download_ride_out_the_same(
    stack: LocalWheelGate, nightly_proxy: FaultyProxy, tmp_path: Path
) -> None:
    # Given a released file and its project page in nightly
    _, nightly = buckets()
    wheel = build_wheel(tmp_path / "w", PROJECT, "2.0")
    data = wheel.read_bytes()
    nightly.put(NIGHTLY.artifact(INDEX, wheel.name), data, content_type="binary/octet-stream")
    page = f'<a href="{wheel.name}">{wheel.name}</a>'.encode()
    nightly.put(PAGES.project_page(INDEX, PROJECT), page, content_type="text/html")
    released = key_url(nightly_proxy.url, NIGHTLY.artifact(INDEX, wheel.name))
    sha256 = hashlib.sha256(data).hexdigest()

    # When bisect downloads the file and a reader fetches the page, through the flaky proxy,
    # and deps downloads the file over https through another
    size = Downloader(CLIENT).download(
        PlannedFile(wheel.name, sha256, len(data), released), tmp_path / "nightly.whl"
    )
    read_page = CLIENT.get(key_url(nightly_proxy.url, PAGES.project_page(INDEX, PROJECT)))
    with faulty_proxy(stack.nightly_url, tls=tmp_path) as https_proxy:
        assert https_proxy.cert is not None
        fetcher = Fetcher(https_client(str(https_proxy.cert), retries=4, backoff=0.01))
        https_url = key_url(https_proxy.url, NIGHTLY.artifact(INDEX, wheel.name))
        deps_size = fetcher.download(https_url, tmp_path / "deps.whl", sha256=sha256, size=None)
        https_met = every_fault_met(https_proxy, 1)

    # Then each arrives whole, after every fault
    assert (size, (tmp_path / "nightly.whl").read_bytes()) == (len(data), data)
    assert read_page == page
    assert (deps_size, (tmp_path / "deps.whl").read_bytes()) == (len(data), data)
    assert every_fault_met(nightly_proxy, 2)
    assert https_met


@pytest.mark.slow  # the product's own backoff, 3.5 s
def test_bisect_install_against_a_staging_distribution_that_is_down_exits_4_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    down = f"http://127.0.0.1:{free_port()}/"

    code = main(
        [
            *("bisect", "install", "run:1", "--index", INDEX),
            *("--staging-url", down, "--cache-dir", str(tmp_path / "cache")),
            *("--venv", str(tmp_path / "venv")),
        ]
    )

    err = capsys.readouterr().err
    assert code == EXIT_STORAGE
    assert "storage error" in err
    assert down + STAGING.history_head(INDEX) in err
    assert f"gave up after {DEFAULT_ATTEMPTS} attempts" in err
