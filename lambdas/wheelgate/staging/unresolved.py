"""The requirements of a run's wheels that nobody can resolve: projects a staged wheel's
``Requires-Dist`` names (whatever its marker or extra) that neither the run nor nightly holds.

A test installing from the run's index then fails with "No matching distribution" for such a
project; ``wheelgate stage`` says so before it uploads (``--strict`` refuses the run). What
the check reads is what the run's pages need anyway: the local wheels' METADATA and nightly's
pages of their closure (:func:`~wheelgate.staging.run_index.run_closure`), and only when a
project is missing, the run's root page (once), for the files an earlier call staged.

Only the staged wheels' own requirements are checked: what nightly's files require is the
closure's business, and an sdist's requirements are not known until it is built.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from wheelgate.core.layout import project_dir
from wheelgate.core.wheelmeta import requirement_extras
from wheelgate.index.pages import ProjectPage
from wheelgate.staging.errors import StageError
from wheelgate.staging.local_artifacts import LocalArtifact

#: Where a missing project is sent: the run itself, or nightly through ``deps.yml``.
ADVICE = (
    "stage it with the run, or mirror it into nightly with deps.yml "
    '(docs/deps.md, "A dependency nobody can resolve")'
)


@dataclass(frozen=True)
class Unresolved:
    """A project the staged wheels require that neither the run nor nightly holds, with each
    wheel requiring it and the extras it is required under there (empty: outside any extra)."""

    project: str
    required_by: tuple[tuple[str, frozenset[str]], ...]

    def describe(self, index: str) -> str:
        """One line naming the project and each wheel requiring it."""
        wheels = ", ".join(
            filename + (f" (extra {', '.join(sorted(extras))})" if extras else "")
            for filename, extras in self.required_by
        )
        return (
            f"{self.project}, required by {wheels}, is held by neither this run nor "
            f"nightly's {index}"
        )


class UnresolvedRequirementsError(StageError):
    """``--strict``: the staged wheels require projects nobody can resolve; nothing was
    uploaded."""

    def __init__(self, index: str, unresolved: Sequence[Unresolved]) -> None:
        self.unresolved = tuple(unresolved)
        super().__init__(
            "; ".join(u.describe(index) for u in unresolved) + f" (nothing was staged: {ADVICE})"
        )


def unresolved_requirements(
    artifacts: Sequence[LocalArtifact],
    closure: Mapping[str, ProjectPage],
    held: Collection[str] = (),
) -> tuple[Unresolved, ...]:
    """The projects ``artifacts``' METADATA require (any marker or extra) that are none of
    their own projects, nor listed on nightly's page of the ``closure`` (project -> page, as
    :func:`~wheelgate.staging.run_index.run_closure` reads them), nor in ``held`` (what the
    run's index already names), by project name."""
    own = {project_dir(a.project) for a in artifacts}
    required_by: dict[str, list[tuple[str, frozenset[str]]]] = defaultdict(list)
    for artifact in artifacts:
        if artifact.metadata is None:
            continue
        for project, extras in requirement_extras(artifact.metadata.content).items():
            page = closure.get(project)
            if project in own or project in held or (page is not None and page.entries):
                continue
            required_by[project].append((artifact.filename, extras))
    return tuple(
        Unresolved(project, tuple(sorted(required_by[project]))) for project in sorted(required_by)
    )
