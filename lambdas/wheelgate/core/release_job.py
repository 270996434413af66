"""What the example release workflow's jobs hand each other, the same for every project: the
build job's handover (the index directory, what a test job installs, and from where), a test
job's result lines, and the report job's collection of them.

The families file (:mod:`wheelgate.core.families`) says which projects a test job installs;
:func:`pinned_requirements` finds the version of each among the wheels the build left, so no
workflow line names a project. Nothing here reads files; ``wheelgate job`` does
(:mod:`wheelgate.cli.job`), in the release workflow and in ``wheelgate rehearse`` alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename


class HandoverError(ValueError):
    """A handover that cannot be written or read; the message says what is missing."""


@dataclass(frozen=True)
class Handover:
    """The build job's word to the test jobs of its family: the index directory, the
    requirements a test installs (``name==version``), and the run's own index (the stage
    action's ``index_url``). Written as three lines; the report job reads the first."""

    index: str
    requirements: tuple[str, ...]
    index_url: str

    def render(self) -> str:
        return f"{self.index}\n{' '.join(self.requirements)}\n{self.index_url}\n"

    @classmethod
    def parse(cls, text: str, where: str) -> Handover:
        """The handover written by :meth:`render`; :class:`HandoverError` naming ``where``."""
        lines = text.splitlines()
        if len(lines) != 3 or not all(line.strip() for line in lines):
            raise HandoverError(
                f"{where} is not a build job's handover (three lines: the index directory, "
                "the requirements, the run's index URL)"
            )
        requirements = tuple(lines[1].split())
        for requirement in requirements:
            if not _pinned(requirement):
                raise HandoverError(
                    f"{where}: {requirement!r} is not NAME==VERSION (a test job installs "
                    "exactly the versions the build left, and takes no installer option)"
                )
        url = urlsplit(lines[2])
        if url.scheme not in ("http", "https") or not url.hostname:
            raise HandoverError(f"{where}: {lines[2]!r} is not the run's index URL (http or https)")
        return cls(lines[0], requirements, lines[2])


def _pinned(text: str) -> bool:
    """Whether ``text`` is ``name==version`` and nothing more (no extra, marker or URL)."""
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return False
    specifiers = list(requirement.specifier)
    return (
        not requirement.extras
        and requirement.url is None
        and requirement.marker is None
        and len(specifiers) == 1
        and specifiers[0].operator == "=="
        and "*" not in specifiers[0].version
    )


def pinned_requirements(
    filenames: Iterable[str], projects: Sequence[str], where: str
) -> tuple[str, ...]:
    """``project==version`` for each of ``projects``, its version read from the wheels among
    ``filenames`` (the names of the files in ``where``, the build's ``dist/``).

    Raises :class:`HandoverError` naming a project with no wheel there, or with wheels of more
    than one version."""
    versions: dict[str, set[str]] = {}
    for filename in filenames:
        if not filename.endswith(".whl"):
            continue
        try:
            name, version, _build, _tags = parse_wheel_filename(filename)
        except InvalidWheelFilename:
            continue
        versions.setdefault(name, set()).add(str(version))
    pinned = []
    for project in projects:
        found = sorted(versions.get(canonicalize_name(project), ()))
        if not found:
            raise HandoverError(
                f"no wheel of {project} in {where}/ (the families file's install names it): "
                "the build command must leave it there"
            )
        if len(found) > 1:
            raise HandoverError(
                f"{where}/ holds wheels of {project} in {len(found)} versions "
                f"({', '.join(found)}): a run releases one"
            )
        pinned.append(f"{project}=={found[0]}")
    return tuple(pinned)


def result_line(index: str, test: str, result: str, run_url: str) -> str:
    """One test's result as ``wheelgate report --test`` reads it: ``DIR:NAME=RESULT@URL``."""
    return f"{index}:{test}={result}@{run_url}"


@dataclass(frozen=True)
class JobResults:
    """One test job's results file: its ``DIR:NAME=RESULT@URL`` lines, and the path of its
    evidence (what the job installed) when it left one."""

    lines: tuple[str, ...]
    evidence: str | None


@dataclass(frozen=True)
class Collected:
    """The report job's input: every test result line, and each test's evidence."""

    tests: tuple[str, ...]
    installed: tuple[str, ...]


def collect(
    staged: Mapping[str, str],
    results: Mapping[str, Sequence[JobResults]],
    test_job_result: str,
    run_url: str,
) -> Collected:
    """Every staged family (name -> index directory) gets results: its test jobs' own lines,
    each test with its job's evidence, or, when no job left any, one line saying why the set
    is not promoted (``results=skipped`` when the test jobs were skipped, else
    ``results=failed``: cancelled, or a lost runner).

    Raises :class:`HandoverError` when nothing was staged: there is no manifest to write."""
    tests: list[str] = []
    installed: list[str] = []
    for name, index in staged.items():
        jobs = [job for job in results.get(name, ()) if job.lines]
        for job in jobs:
            tests += job.lines
            if job.evidence is not None:
                # Every test of the job ran in the environment the evidence describes.
                installed += [f"{line.split('=', 1)[0]}={job.evidence}" for line in job.lines]
        if not jobs:
            outcome = "skipped" if test_job_result == "skipped" else "failed"
            tests.append(result_line(index, "results", outcome, run_url))
    if not tests:
        raise HandoverError("nothing was staged; no manifest to write")
    return Collected(tuple(tests), tuple(installed))
