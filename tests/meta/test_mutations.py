"""The mutation checks (``tests/meta/mutations.py``) still find the line each one changes, and
say which mutation to update when they do not."""

from __future__ import annotations

import dataclasses

import pytest

from tests.meta.mutations import MUTATIONS, REPO, LineNotFound, Mutation, locate, main, mutated


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_each_mutation_changes_exactly_its_one_line(mutation: Mutation) -> None:
    site = locate(mutation)
    original = (REPO / site.path).read_text()
    changed = mutated(original, site, mutation)
    before, after = original.splitlines(), changed.splitlines()
    assert len(before) == len(after)
    differ = [n for n, (a, b) in enumerate(zip(before, after, strict=True), 1) if a != b]
    assert differ == [site.number]
    assert after[site.number - 1].strip() == mutation.replacement
    for test in mutation.tests:
        assert (REPO / test.split("::")[0]).is_file(), f"{mutation.name}: no {test}"


def test_a_line_that_is_gone_names_the_mutation_to_update() -> None:
    gone = dataclasses.replace(MUTATIONS[0], line="if this_line_is_nowhere:")
    with pytest.raises(LineNotFound, match=r"mutation 'evidence'.* found 0 time\(s\)"):
        locate(gone)
    assert main(["--list", "evidence"]) == 0  # the real one is there


def test_an_unknown_mutation_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["no-such-mutation"])
    assert refused.value.code == 2
    assert "no mutation named no-such-mutation" in capsys.readouterr().err
