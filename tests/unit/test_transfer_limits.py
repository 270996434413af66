"""Limits and concurrency live on the bucket adapter (storage/limits.py's ``TransferLimits``),
never in the constructors and functions of the components that use a bucket."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

from wheelgate.storage.bucket import Bucket
from wheelgate.storage.limits import TransferLimits

PACKAGE = Path(__file__).resolve().parents[2] / "lambdas" / "wheelgate"
#: The one layer that may take a limit as an argument: the adapter's own.
STORAGE = PACKAGE / "storage"
#: Names a limit was threaded through under, besides TransferLimits' own fields.
THREADED = {"workers", "part_size"} | {f.name for f in fields(TransferLimits)}


def _outside_storage() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if STORAGE not in p.parents)


def limit_parameters(source: str) -> list[str]:
    """``function(parameter)`` for each function or method in ``source`` taking a limit."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if arg.arg in THREADED:
                    found.append(f"{node.name}({arg.arg})")
    return found


def literal_pools(source: str) -> list[int]:
    """Lines of ``source`` that size a thread pool with a number written there."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.keyword)
        and node.arg == "max_workers"
        and isinstance(node.value, ast.Constant)
    ]


def test_no_component_outside_storage_takes_a_transfer_limit() -> None:
    found = {
        str(path.relative_to(PACKAGE)): hits
        for path in _outside_storage()
        if (hits := limit_parameters(path.read_text()))
    }
    assert found == {}, f"read the bucket's limits (TransferLimits) instead: {found}"


def test_no_thread_pool_outside_storage_is_sized_by_a_number_of_its_own() -> None:
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path in _outside_storage()
        if (lines := literal_pools(path.read_text()))
    }
    assert found == {}, f"size the pool by the bucket's limits.workers: {found}"


def test_the_rules_find_a_threaded_limit_and_a_pool_of_its_own() -> None:
    source = (
        "class Releaser:\n"
        "    def __init__(self, *, workers: int, single_request_limit: int) -> None:\n"
        "        with ThreadPoolExecutor(max_workers=16) as pool:\n"
        "            pass\n"
    )
    assert limit_parameters(source) == ["__init__(workers)", "__init__(single_request_limit)"]
    assert literal_pools(source) == [3]


def test_a_bucket_has_the_default_limits_and_its_sibling_has_its_own() -> None:
    lowered = TransferLimits(workers=2, single_request_limit=5)
    assert Bucket(object(), "staging").limits == TransferLimits()  # type: ignore[arg-type]
    source = Bucket(object(), "staging", limits=lowered).sibling("source")  # type: ignore[arg-type]
    assert (source.name, source.limits) == ("source", lowered)


@pytest.mark.parametrize("name", [f.name for f in fields(TransferLimits)])
def test_a_limit_below_one_is_refused_by_name(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        TransferLimits(**{name: 0})
