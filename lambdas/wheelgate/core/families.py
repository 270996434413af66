"""The GPU families file (``.github/wheelgate-families.json``): a repository's index
directories, the runner and Pythons of each, and the tests each must pass, written once.

Everything of a release that is a project's own is here, so the example workflows are the same
for every project: a release workflow reads it (``wheelgate families``) for the matrices of its
build and test jobs, so that build, test and report cannot disagree, and its build job's
handover (``wheelgate job handover``) for what the test jobs install; ``wheelgate
check-workflows`` holds it to the deployment's ``index_dirs`` and ``required_tests``. The
document::

    {
      "build": "./build_tools/build_wheels.sh --target \\"$NAME\\" --output-dir dist",
      "build_runner": "ubuntu-24.04",
      "projects": ["torch"],
      "install": ["torch"],
      "dev_families": ["gfx94X-dcgpu"],
      "pythons": ["3.12"],
      "tests": {"smoke": "python -c 'import torch'", "unit": "python -m pytest -q tests"},
      "families": [
        {"index": "v2/gfx94X-dcgpu", "name": "gfx94X-dcgpu", "runner": "linux-mi300-1gpu",
         "tests": ["smoke", "unit"], "pythons": ["3.11", "3.12"]}
      ]
    }

A family with one Python reports each test under its own name; one with several runs a test
job per Python and reports ``<test>-py<version>`` (``smoke-py3.11``), the names its
``required_tests`` must then list: every wheel staged is installed by a test. ``projects``
(optional) names the projects a run releases, which the release's workflows may name
(``check-workflows`` holds them to it). ``install`` (default: ``projects``; ``wheelgate job
handover`` needs one of the two) names the projects a test job installs, each at the version
its wheels in ``dist/`` have. ``build_runner`` (default ``ubuntu-24.04``) is the runner of the
build jobs, and ``dev_families`` (default: the first family) the families a pull request builds
(``dev.yml``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from packaging.utils import canonicalize_name

from wheelgate.core.layout import LayoutError, check_index
from wheelgate.core.manifest_tests import check_test_name

#: A family's name: the artifact names (``staged-<name>``) and the build's ``$NAME``.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: A Python version as ``actions/setup-python`` and ``uv venv --python`` take it.
_PYTHON = re.compile(r"3\.\d{1,2}")
_TOP_KEYS = frozenset(
    {"build", "build_runner", "projects", "install", "dev_families", "pythons", "tests", "families"}
)
#: The top-level keys with a default.
_OPTIONAL_KEYS = frozenset({"build_runner", "projects", "install", "dev_families", "pythons"})
#: The build jobs' runner when the file names none: GitHub's hosted Linux runner.
DEFAULT_BUILD_RUNNER = "ubuntu-24.04"
#: A project name as PEP 508 allows it.
_PROJECT = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_FAMILY_KEYS = frozenset({"index", "name", "runner", "tests", "pythons"})


class FamiliesError(ValueError):
    """The families file is not valid; the message names the key (``families[1].runner``)."""


@dataclass(frozen=True)
class Test:
    """One test a test job runs: the name it reports and the shell command that runs it."""

    name: str
    run: str


@dataclass(frozen=True)
class Family:
    """One index directory: where its tests run, with which Pythons, and which tests."""

    index: str
    name: str
    runner: str
    pythons: tuple[str, ...]
    tests: tuple[str, ...]

    def reported(self, test: str, python: str) -> str:
        """The name a test reports from the job of ``python``: the test's own with one Python,
        ``<test>-py<python>`` with several (test names are unique within a set)."""
        return test if len(self.pythons) == 1 else f"{test}-py{python}"

    def required(self) -> tuple[str, ...]:
        """Every name the family's test jobs report: what ``required_tests`` should list."""
        return tuple(self.reported(t, p) for p in self.pythons for t in self.tests)


@dataclass(frozen=True)
class Families:
    """The parsed families file."""

    build: str
    commands: Mapping[str, str]
    families: tuple[Family, ...]
    #: The projects a run releases, which the release's workflows may name (``check-workflows``).
    projects: tuple[str, ...] = ()
    #: The projects a test job installs (``install``, else ``projects``).
    install: tuple[str, ...] = ()
    #: The runner of the build jobs.
    build_runner: str = DEFAULT_BUILD_RUNNER
    #: The names of the families a pull request builds.
    dev_families: tuple[str, ...] = ()

    def build_matrix(self) -> list[dict[str, str]]:
        """One build job per family: ``index``, ``name``, ``pythons`` (space-separated),
        ``build`` (the command), ``runner`` (the build runner)."""
        return [
            {
                "index": f.index,
                "name": f.name,
                "pythons": " ".join(f.pythons),
                "build": self.build,
                "runner": self.build_runner,
            }
            for f in self.families
        ]

    def test_matrix(self) -> list[dict[str, Any]]:
        """One test job per family and Python: ``index``, ``family`` (its staged artifact),
        ``name`` (unique: the results' name), ``runner``, ``python`` and ``tests`` (each a
        :class:`Test` as ``{"name", "run"}``)."""
        return [
            {
                "index": f.index,
                "family": f.name,
                "name": f.name if len(f.pythons) == 1 else f"{f.name}-py{python}",
                "runner": f.runner,
                "python": python,
                "tests": [
                    {"name": f.reported(t, python), "run": self.commands[t]} for t in f.tests
                ],
            }
            for f in self.families
            for python in f.pythons
        ]

    def required_tests(self) -> dict[str, tuple[str, ...]]:
        """The tests each index directory's jobs report, as ``required_tests`` spells them."""
        return {f.index: f.required() for f in self.families}

    def named(self, name: str) -> Families:
        """Only the family called ``name``; :class:`FamiliesError` if there is none."""
        chosen = tuple(f for f in self.families if f.name == name)
        if not chosen:
            known = ", ".join(f.name for f in self.families)
            raise FamiliesError(f"no family is named {name!r} (the file names {known})")
        return replace(self, families=chosen)

    def dev(self) -> Families:
        """Only the families a pull request builds (``dev_families``)."""
        return replace(
            self, families=tuple(f for f in self.families if f.name in self.dev_families)
        )


def parse_families(document: object) -> Families:
    """The families file's parsed JSON as :class:`Families`.

    Raises :class:`FamiliesError` naming the first bad key: an unknown key, a missing one, an
    invalid index directory or test name, an index or name given twice, a test without a
    command.
    """
    top = _mapping(document, "the families file", _TOP_KEYS, required=_TOP_KEYS - _OPTIONAL_KEYS)
    build = _string(top["build"], "build")
    build_runner = _string(top.get("build_runner", DEFAULT_BUILD_RUNNER), "build_runner")
    projects = _projects(top.get("projects", []), "projects")
    install = _install(top, projects)
    pythons = _pythons(top.get("pythons", ["3.12"]), "pythons")
    raw_tests = top["tests"]
    if not isinstance(raw_tests, dict) or not raw_tests:
        raise FamiliesError("tests must be an object mapping test names to shell commands")
    commands = {
        _test_name(name, "tests"): _string(run, f"tests.{name}") for name, run in raw_tests.items()
    }
    raw_families = top["families"]
    if not isinstance(raw_families, list) or not raw_families:
        raise FamiliesError("families must be a non-empty list")
    families = tuple(
        _family(item, f"families[{i}]", pythons, commands) for i, item in enumerate(raw_families)
    )
    for attribute in ("index", "name"):
        seen: set[str] = set()
        for i, family in enumerate(families):
            value = getattr(family, attribute)
            if value in seen:
                raise FamiliesError(f"families[{i}].{attribute}: {value!r} is given twice")
            seen.add(value)
    dev = _dev_families(top.get("dev_families", [families[0].name]), families)
    return Families(build, commands, families, projects, install, build_runner, dev)


def _projects(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise FamiliesError(f"{where} must be a list of project names")
    for project in value:
        if not isinstance(project, str) or not _PROJECT.fullmatch(project):
            raise FamiliesError(f"{where}: {project!r} is not a project name")
    if len({canonicalize_name(p) for p in value}) != len(value):
        raise FamiliesError(f"{where} names a project twice")
    return tuple(value)


def _install(top: Mapping[str, Any], projects: tuple[str, ...]) -> tuple[str, ...]:
    """``install``, each one of ``projects`` when the file names them; else ``projects``
    (``wheelgate job handover`` refuses a file that names neither)."""
    if "install" not in top:
        return projects
    install = _projects(top["install"], "install")
    if not install:
        raise FamiliesError("install must name at least one project a test job installs")
    released = {canonicalize_name(p) for p in projects}
    for project in install:
        if projects and canonicalize_name(project) not in released:
            raise FamiliesError(
                f"install: {project!r} is not one of projects ({', '.join(projects)}), "
                "the projects a run releases"
            )
    return install


def _dev_families(value: object, families: tuple[Family, ...]) -> tuple[str, ...]:
    names = [f.name for f in families]
    if not isinstance(value, list) or not value:
        raise FamiliesError("dev_families must be a non-empty list of family names")
    for name in value:
        if name not in names:
            raise FamiliesError(
                f"dev_families: {name!r} is not the name of a family (the file names "
                f"{', '.join(names)})"
            )
    if len(set(value)) != len(value):
        raise FamiliesError("dev_families names a family twice")
    return tuple(value)


def _family(
    item: object, where: str, pythons: tuple[str, ...], commands: Mapping[str, str]
) -> Family:
    fields = _mapping(item, where, _FAMILY_KEYS, required=_FAMILY_KEYS - {"pythons"})
    index = _string(fields["index"], f"{where}.index")
    try:
        check_index(index)
    except LayoutError as exc:
        raise FamiliesError(f"{where}.index: {exc}") from exc
    name = _string(fields["name"], f"{where}.name")
    if not _NAME.fullmatch(name):
        raise FamiliesError(f"{where}.name: {name!r} must be letters, digits, '.', '_' or '-'")
    tests = fields["tests"]
    if not isinstance(tests, list) or not tests:
        raise FamiliesError(f"{where}.tests must be a non-empty list of test names")
    for test in tests:
        if test not in commands:
            raise FamiliesError(
                f"{where}.tests: {test!r} is not one of tests ({', '.join(commands)})"
            )
    if len(set(tests)) != len(tests):
        raise FamiliesError(f"{where}.tests names a test twice")
    own = _pythons(fields["pythons"], f"{where}.pythons") if "pythons" in fields else pythons
    return Family(index, name, _string(fields["runner"], f"{where}.runner"), own, tuple(tests))


def _mapping(
    value: object, where: str, allowed: frozenset[str], *, required: frozenset[str]
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FamiliesError(f"{where} must be an object")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise FamiliesError(
            f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(allowed))})"
        )
    missing = sorted(required - set(value))
    if missing:
        raise FamiliesError(f"{where}: {missing[0]!r} is missing")
    return value


def _string(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise FamiliesError(f"{where} must be a non-empty string")
    return value


def _test_name(name: str, where: str) -> str:
    try:
        return check_test_name(name)
    except ValueError as exc:
        raise FamiliesError(f"{where}: {exc}") from exc


def _pythons(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise FamiliesError(f'{where} must be a non-empty list of Python versions such as "3.12"')
    for python in value:
        if not isinstance(python, str) or not _PYTHON.fullmatch(python):
            raise FamiliesError(f'{where}: {python!r} is not a Python version such as "3.12"')
    if len(set(value)) != len(value):
        raise FamiliesError(f"{where} names a Python twice")
    return tuple(value)
