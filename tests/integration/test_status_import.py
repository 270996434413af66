"""An import shows on the status page and in `wheelgate runs` as an import decision of its
directory (through the promoter handler, on the real S3 API)."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_import import (
    BREAK_GLASS,
    Seed,
    _imports_configured,  # noqa: F401 (the break-glass role and the import sources)
    request_import,
    seed,  # noqa: F401 (the source to import)
)
from tests.integration.test_promoter import deliver
from wheelgate.cli.main import main
from wheelgate.status.state import page_key
from wheelgate.storage.bucket import Bucket


def test_an_import_is_listed_on_its_directorys_page_and_in_runs(
    seed: Seed,  # noqa: F811 (the fixture imported above)
    buckets: tuple[Bucket, Bucket],
    capsys: pytest.CaptureFixture[str],
) -> None:
    staging, _ = buckets
    # Given an import the break-glass role asked for, promoted
    key, run_id = request_import(staging, seed.source.uri, seed.index)
    assert deliver(key, BREAK_GLASS) == {"batchItemFailures": []}
    # Then `wheelgate runs` lists it as an import of its directory
    capsys.readouterr()  # the handler's log lines
    assert main(["runs", "--index", seed.index, "--json", "--staging-bucket", staging.name]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["run_id"], r["kind"], r["state"]) for r in rows] == [(run_id, "import", "promoted")]
    # And the directory's page lists it among its decisions and its imports
    page = staging.get(page_key(seed.index))
    assert page is not None
    html = page[0].decode()
    assert "Imported, untested" in html
    assert run_id in html
