"""What a repository's GitHub workflows must agree on with its deployment's settings, so that
the roles trust its release runs and the promoter finds every test it requires.

:func:`compare` takes the workflows as parsed YAML documents keyed by their path in the
repository (``.github/workflows/release-nightly.yml``) and returns one :class:`Mismatch` per
disagreement, each with a machine :class:`MismatchKind` and a sentence. It reads:

- the release workflows (``release_workflows``): each present, triggered only by events of
  ``release_events`` (never ``workflow_dispatch``: a manual run is refused the roles), calling
  the reporter workflow; the jobs that use the ``stage`` action build the index directories of
  their matrix, the other matrix jobs with an ``index`` test them;
- the reporter workflow (``reporter_workflow``): present and ``on: workflow_call`` only;
- the deps workflows (``deps_workflows``) given: run on ``push`` to ``default_branch``;
- the index directories: every one built and tested is in ``index_dirs``, every one of
  ``index_dirs`` is built, every one built is tested, and the tests of each cover its
  ``required_tests`` (a static matrix's tests are the test job's step ids; a matrix computed
  with ``fromJSON`` is the families file's, :mod:`wheelgate.core.families`).

Nothing here reads files or the environment; the caller parses them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import PurePosixPath
from typing import Any

from wheelgate.core.families import Families

#: A ``uses:`` of WheelGate's stage action: pinned (``.../actions/stage@<commit>``) or local.
_STAGE_ACTION = re.compile(r"(?:^|/)actions/stage(?:@|$)")
#: A matrix computed from an expression (``${{ fromJSON(needs.plan.outputs.test) }}``).
_EXPRESSION = re.compile(r"^\s*\$\{\{.*\}\}\s*$", re.DOTALL)


class WorkflowsError(ValueError):
    """The workflows or settings given cannot be compared (bad input, not a mismatch)."""


class MismatchKind(StrEnum):
    """What disagrees, as ``wheelgate check-workflows`` names it."""

    RELEASE_WORKFLOW_MISSING = "release-workflow-missing"
    REPORTER_WORKFLOW_MISSING = "reporter-workflow-missing"
    UNTRUSTED_TRIGGER = "untrusted-trigger"
    REPORTER_NOT_CALL_ONLY = "reporter-not-call-only"
    REPORTER_NOT_CALLED = "reporter-not-called"
    DEPS_TRIGGER = "deps-trigger"
    INDEX_NOT_ALLOWED = "index-not-allowed"
    INDEX_NOT_BUILT = "index-not-built"
    INDEX_NOT_TESTED = "index-not-tested"
    REQUIRED_TEST_NOT_RUN = "required-test-not-run"
    PLACEHOLDER = "placeholder"
    ACTION_NOT_PINNED = "action-not-pinned"
    PROJECT_NOT_DECLARED = "project-not-declared"


@dataclass(frozen=True)
class Mismatch:
    """One disagreement: its kind, the workflow file it is about, a whole sentence, and the
    line of that file when it is about one line."""

    kind: MismatchKind
    workflow: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.workflow if self.line is None else f"{self.workflow}:{self.line}"
        return f"{where}: {self.kind.value}: {self.message}"


@dataclass(frozen=True)
class Deployment:
    """The settings the workflows must agree with, named as ``cdk.json`` names them."""

    index_dirs: tuple[str, ...]
    required_tests: Mapping[str, tuple[str, ...]]
    release_workflows: tuple[str, ...]
    reporter_workflow: str
    release_events: tuple[str, ...]
    deps_workflows: tuple[str, ...] = ()
    default_branch: str = "main"

    @classmethod
    def from_context(cls, context: Mapping[str, Any]) -> Deployment:
        """The settings of a ``cdk.json`` ``wheelgate`` context object (only the keys read
        here); :class:`WorkflowsError` names a missing or mistyped key."""

        def strings(name: str, *, required: bool = True) -> tuple[str, ...]:
            value = context.get(name)
            if value is None and not required:
                return ()
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise WorkflowsError(f"wheelgate.{name} must be a list of strings")
            return tuple(value)

        tests = context.get("required_tests")
        if not isinstance(tests, dict) or not all(
            isinstance(v, list) and all(isinstance(t, str) for t in v) for v in tests.values()
        ):
            raise WorkflowsError(
                "wheelgate.required_tests must map index directories to lists of test names"
            )
        for name in ("reporter_workflow", "default_branch"):
            if not isinstance(context.get(name), str):
                raise WorkflowsError(f"wheelgate.{name} must be a string")
        return cls(
            index_dirs=strings("index_dirs"),
            required_tests={k: tuple(v) for k, v in tests.items()},
            release_workflows=strings("release_workflows"),
            reporter_workflow=context["reporter_workflow"],
            release_events=strings("release_events"),
            deps_workflows=strings("deps_workflows", required=False),
            default_branch=context["default_branch"],
        )


@dataclass
class _Matrix:
    """What a release workflow's matrix jobs build and test: index -> test names run."""

    built: set[str] = field(default_factory=set)
    tested: dict[str, set[str]] = field(default_factory=dict)


def triggers(document: Mapping[Any, Any]) -> dict[str, Any]:
    """A workflow's ``on:`` as a mapping of event names (PyYAML reads a bare ``on`` as
    ``True``; a string or list of events becomes a mapping of them)."""
    on = document.get("on", document.get(True))
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return {str(event): None for event in on}
    if isinstance(on, dict):
        return {str(event): spec for event, spec in on.items()}
    return {}


def compare(
    workflows: Mapping[str, Mapping[Any, Any]],
    deployment: Deployment,
    families: Families | None = None,
) -> list[Mismatch]:
    """Every way ``workflows`` (parsed, keyed by repository path) disagree with
    ``deployment``. A matrix computed with ``fromJSON`` is read as ``families`` says; without
    them it raises :class:`WorkflowsError`, as it does for a workflow that is not a mapping of
    jobs."""
    found: list[Mismatch] = []
    reporter = deployment.reporter_workflow
    if reporter not in workflows:
        found.append(
            Mismatch(
                MismatchKind.REPORTER_WORKFLOW_MISSING,
                reporter,
                f"the reporter workflow {reporter} (reporter_workflow) is not among the workflows",
            )
        )
    else:
        events = set(triggers(workflows[reporter]))
        if events != {"workflow_call"}:
            found.append(
                Mismatch(
                    MismatchKind.REPORTER_NOT_CALL_ONLY,
                    reporter,
                    f"{reporter} runs on {', '.join(sorted(events)) or 'no event'}: the "
                    "reporter workflow must be on: workflow_call only, so that only release "
                    "runs call it",
                )
            )
    built: set[str] = set()
    tested: dict[str, set[str]] = {}
    for path in deployment.release_workflows:
        if path not in workflows:
            found.append(
                Mismatch(
                    MismatchKind.RELEASE_WORKFLOW_MISSING,
                    path,
                    f"the release workflow {path} (release_workflows) is not among the workflows",
                )
            )
            continue
        document = workflows[path]
        found += _release_triggers(path, document, deployment)
        if not _calls(document, reporter):
            found.append(
                Mismatch(
                    MismatchKind.REPORTER_NOT_CALLED,
                    path,
                    f"{path} has no job with uses: ./{reporter}: its tests would never be "
                    "reported with the reporter role",
                )
            )
        matrix = _matrix(path, document, families)
        built |= matrix.built
        for index, names in matrix.tested.items():
            tested.setdefault(index, set()).update(names)
        found += _indexes(path, matrix, deployment)
    found += _coverage(deployment, built, tested)
    for path in deployment.deps_workflows:
        if path in workflows:
            found += _deps(path, workflows[path], deployment)
    return found


def _release_triggers(
    path: str, document: Mapping[Any, Any], deployment: Deployment
) -> list[Mismatch]:
    untrusted = sorted(set(triggers(document)) - set(deployment.release_events))
    return [
        Mismatch(
            MismatchKind.UNTRUSTED_TRIGGER,
            path,
            f"{path} runs on {event}, which is not in release_events "
            f"({', '.join(deployment.release_events)}): such a run is refused the build and "
            "reporter roles"
            + (
                " (rehearse with wheelgate local instead: examples/github/README.md)"
                if event == "workflow_dispatch"
                else ""
            ),
        )
        for event in untrusted
    ]


def _calls(document: Mapping[Any, Any], reporter: str) -> bool:
    return any(
        isinstance(job, dict) and str(job.get("uses", "")).strip() == f"./{reporter}"
        for job in _jobs(document).values()
    )


def _jobs(document: Mapping[Any, Any]) -> dict[str, Any]:
    jobs = document.get("jobs")
    if not isinstance(jobs, dict):
        raise WorkflowsError("a workflow has no jobs mapping")
    return jobs


def _matrix(path: str, document: Mapping[Any, Any], families: Families | None) -> _Matrix:
    matrix = _Matrix()
    for job_id, job in _jobs(document).items():
        if not isinstance(job, dict) or "steps" not in job:
            continue
        stages = any(_STAGE_ACTION.search(str(s.get("uses", ""))) for s in job["steps"])
        spec = (job.get("strategy") or {}).get("matrix")
        if spec is None:
            continue
        include = spec.get("include") if isinstance(spec, dict) else spec
        if isinstance(include, str) and _EXPRESSION.match(include):
            if families is None:
                raise WorkflowsError(
                    f"{path}: the matrix of job {job_id} is computed ({include.strip()}): give "
                    "the families file it is read from (--families)"
                )
            entries: list[dict[str, Any]] = (
                families.build_matrix() if stages else families.test_matrix()
            )
            own_tests = None
        elif isinstance(include, list):
            entries = [e for e in include if isinstance(e, dict)]
            own_tests = {str(s["id"]) for s in job["steps"] if "id" in s}
        else:
            continue
        for entry in entries:
            if "index" not in entry:
                continue
            index = str(entry["index"])
            if stages:
                matrix.built.add(index)
            else:
                names = (
                    own_tests
                    if own_tests is not None
                    else {str(t["name"]) for t in entry.get("tests", [])}
                )
                matrix.tested.setdefault(index, set()).update(names)
    return matrix


def _indexes(path: str, matrix: _Matrix, deployment: Deployment) -> list[Mismatch]:
    allowed = set(deployment.index_dirs)
    return [
        Mismatch(
            MismatchKind.INDEX_NOT_ALLOWED,
            path,
            f"{path} {what} {index}, which is not in index_dirs "
            f"({', '.join(deployment.index_dirs)}): stage and the promoter refuse it",
        )
        for what, indexes in (("builds", matrix.built), ("tests", set(matrix.tested)))
        for index in sorted(indexes - allowed)
    ]


def _coverage(
    deployment: Deployment, built: set[str], tested: Mapping[str, set[str]]
) -> list[Mismatch]:
    workflows = ", ".join(deployment.release_workflows)
    found = [
        Mismatch(
            MismatchKind.INDEX_NOT_BUILT,
            workflows,
            f"{index} is in index_dirs but no release workflow builds it (no job that uses "
            "the stage action has it in its matrix)",
        )
        for index in deployment.index_dirs
        if index not in built
    ]
    found += [
        Mismatch(
            MismatchKind.INDEX_NOT_TESTED,
            workflows,
            f"{index} is built but no test job tests it: its set would be reported "
            "results=failed and never promoted",
        )
        for index in sorted(built - set(tested))
    ]
    for index in sorted(built & set(tested)):
        missing = [t for t in deployment.required_tests.get(index, ()) if t not in tested[index]]
        if missing:
            found.append(
                Mismatch(
                    MismatchKind.REQUIRED_TEST_NOT_RUN,
                    workflows,
                    f"{index} requires {', '.join(missing)} (required_tests) but its test jobs "
                    f"run only {', '.join(sorted(tested[index])) or 'nothing'}: the promoter "
                    "would reject every set",
                )
            )
    return found


def _deps(path: str, document: Mapping[Any, Any], deployment: Deployment) -> list[Mismatch]:
    push = triggers(document).get("push")
    branches: Sequence[Any] = push.get("branches", []) if isinstance(push, dict) else []
    if "push" in triggers(document) and list(branches) == [deployment.default_branch]:
        return []
    return [
        Mismatch(
            MismatchKind.DEPS_TRIGGER,
            path,
            f"{path} (deps_workflows) must sync on push to {deployment.default_branch} "
            "(default_branch) alone: the deps role trusts no other run",
        )
    ]


def workflow_key(path: PurePosixPath | str) -> str:
    """The repository path a workflow file is known by in the settings:
    ``.github/workflows/<file name>``, wherever the file was read from."""
    return f".github/workflows/{PurePosixPath(path).name}"


def compare_families(families: Families, deployment: Deployment, where: str) -> list[Mismatch]:
    """Every family whose index directory is not in ``index_dirs``, or whose tests cover less
    than its ``required_tests``: checked even before a workflow reads the file (``where``
    names it)."""
    found = []
    for family in families.families:
        if family.index not in deployment.index_dirs:
            found.append(
                Mismatch(
                    MismatchKind.INDEX_NOT_ALLOWED,
                    where,
                    f"family {family.name}: {family.index} is not in index_dirs "
                    f"({', '.join(deployment.index_dirs)})",
                )
            )
        reported = family.required()
        missing = [t for t in deployment.required_tests.get(family.index, ()) if t not in reported]
        if missing:
            found.append(
                Mismatch(
                    MismatchKind.REQUIRED_TEST_NOT_RUN,
                    where,
                    f"family {family.name} ({family.index}) reports {', '.join(reported)} but "
                    f"required_tests lists {', '.join(missing)} too",
                )
            )
    return found
