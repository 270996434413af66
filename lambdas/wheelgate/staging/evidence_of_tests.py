"""The evidence of each test ``wheelgate report`` reports: each ``--installed DIR:NAME=PATH`` read
(:func:`read_evidence`, the file by :func:`wheelgate.staging.installs.read_installs`), judged
against what the run's index offers (a :class:`Judge`:
:class:`wheelgate.staging.evidence.EvidenceJudge`), and put in its test's result
(:func:`with_installs`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from wheelgate.core.layout import check_index
from wheelgate.core.manifest import EvidenceRefusal, InstalledFile
from wheelgate.core.manifest_limits import MAX_INSTALLED_PER_TEST, MAX_REFUSALS_PER_TEST
from wheelgate.staging.environment import InstalledEnvironment
from wheelgate.staging.installs import Install, read_installs
from wheelgate.staging.manifest_building import TestSpec


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What one ``--installed DIR:NAME=PATH`` says test NAME of DIR installed: files, or the
    environment it installed into (:func:`read_installs`)."""

    index: str
    test: str
    source: Path
    installed: tuple[Install, ...] | InstalledEnvironment


@dataclasses.dataclass(frozen=True)
class Judged:
    """What one piece of evidence vouches for: the files the test installed that the manifest
    lists, the evidence ``report`` refused (the promoter rejects the set for it), and
    warnings for the person reading ``report``'s output."""

    installed: tuple[InstalledFile, ...] = ()
    refused: tuple[EvidenceRefusal, ...] = ()
    warnings: tuple[str, ...] = ()


class Judge(Protocol):
    """Judges evidence against what the run's index offers
    (:class:`wheelgate.staging.evidence.EvidenceJudge`)."""

    def files(self, index: str, installs: Sequence[Install], source: str) -> Judged: ...

    def environment(self, index: str, environment: InstalledEnvironment, source: str) -> Judged: ...


def read_evidence(tests: Sequence[TestSpec], specs: Sequence[str]) -> list[Evidence]:
    """Each ``DIR:NAME=PATH`` of ``specs``, read. Raises ``ValueError`` for a spec that is
    malformed, names a test ``tests`` lacks, or whose file :func:`read_installs` refuses."""
    known = {(t.index, t.name) for t in tests}
    evidence = []
    for spec in specs:
        head, sep, path = spec.partition("=")
        index, colon, name = head.partition(":")
        if not sep or not colon or not index or not name or not path:
            raise ValueError(f"{spec!r} is not DIR:NAME=PATH")
        check_index(index)
        if (index, name) not in known:
            raise ValueError(f"{spec!r} names test {name!r} of {index}, which no --test gives")
        found = read_installs(Path(path))
        installed = found if isinstance(found, InstalledEnvironment) else tuple(found)
        evidence.append(Evidence(index, name, Path(path), installed))
    return evidence


def with_installs(
    tests: Sequence[TestSpec], evidence: Sequence[Evidence], judge: Judge | None = None
) -> tuple[list[TestSpec], list[str]]:
    """``tests`` with what each :class:`Evidence` says its test installed (each SHA-256 once)
    and what ``judge`` refused of it, and the judge's warnings. Without ``judge`` files are
    taken as the evidence names them, and an environment is refused. Raises ``ValueError``
    for a test with more than :data:`MAX_INSTALLED_PER_TEST` installs, and for an environment
    without ``judge``."""
    installs: dict[tuple[str, str], dict[str, InstalledFile]] = {
        (t.index, t.name): {i.sha256: i for i in t.installed} for t in tests
    }
    refused: dict[tuple[str, str], list[EvidenceRefusal]] = {
        (t.index, t.name): list(t.refused) for t in tests
    }
    warnings: list[str] = []
    for item in evidence:
        source = str(item.source)
        if judge is not None:
            judged = (
                judge.environment(item.index, item.installed, source)
                if isinstance(item.installed, InstalledEnvironment)
                else judge.files(item.index, item.installed, source)
            )
        elif isinstance(item.installed, InstalledEnvironment):
            raise ValueError(f"evidence {source}: an environment needs the staged files")
        else:
            judged = Judged(installed=tuple(i.file for i in item.installed))
        test = installs[(item.index, item.test)]
        for installed in judged.installed:
            test.setdefault(installed.sha256, installed)
        if len(test) > MAX_INSTALLED_PER_TEST:
            raise ValueError(
                f"test {item.test!r} of {item.index} installed {len(test)} files; "
                f"a manifest holds at most {MAX_INSTALLED_PER_TEST} a test"
            )
        refused[(item.index, item.test)] += judged.refused
        warnings += judged.warnings
    return [
        dataclasses.replace(
            t,
            installed=tuple(installs[(t.index, t.name)].values()),
            refused=tuple(refused[(t.index, t.name)][:MAX_REFUSALS_PER_TEST]),
        )
        for t in tests
    ], warnings
