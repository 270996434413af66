"""``wheelgate job``: the steps of the example release workflow's jobs that are the same for
every project, each reading what is a project's own from the families file or what an earlier
job handed over (:mod:`wheelgate.core.release_job`). The release workflows run them, and
``wheelgate rehearse`` runs the very same commands against the embedded stack.

- ``handover`` (build job, after ``stage``): what the family's test jobs install, and from where.
- ``install`` (test job): a clean venv of the job's Python, the handover's requirements
  installed from the run's own index with pip (its report is the evidence) or uv
  (``wheelgate installed``'s record is), hermetically.
- ``test`` (test job): each test of the matrix in that venv, one result line each.
- ``collect`` (report job): every staged family's result lines and evidence, for ``report``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wheelgate.cli.check_workflows import DEFAULT_FAMILIES, read_families
from wheelgate.cli.common import EXIT_OK, EXIT_REJECTED, UsageError
from wheelgate.cli.installed import environment_record
from wheelgate.core.families import FamiliesError
from wheelgate.core.release_job import (
    Handover,
    HandoverError,
    JobResults,
    collect,
    pinned_requirements,
    result_line,
)
from wheelgate.staging.hermetic import hermetic_env

#: The installers a test job may install with.
INSTALLERS = ("pip", "uv")
#: The pip a test job's report is written with: 23.0 made the installation report stable.
MINIMUM_PIP = "pip>=23.0"
#: Where ``collect`` reads the artifacts and writes what ``report`` reads (the job's directory).
STAGED, RESULTS, TESTS_FILE, INSTALLED_FILE = "staged", "results", "tests.txt", "installed.txt"


def cmd_handover(args: argparse.Namespace) -> int:
    families = read_families(args.families)
    try:
        family = families.named(args.family).families[0]
    except FamiliesError as exc:
        raise UsageError(f"--family: {exc}") from exc
    if not families.install:
        raise UsageError(
            f"{args.families}: 'install' is missing: name the projects a test job installs "
            '(such as ["torch"]), or give "projects", which it defaults to'
        )
    try:
        names = os.listdir(args.dist)
    except OSError as exc:
        raise UsageError(f"--dist {args.dist}: {exc.strerror}") from exc
    try:
        requirements = pinned_requirements(sorted(names), families.install, str(args.dist))
    except HandoverError as exc:
        raise UsageError(str(exc)) from exc
    sys.stdout.write(Handover(family.index, requirements, args.index_url).render())
    return EXIT_OK


def _run(command: Sequence[str], what: str, env: dict[str, str] | None = None) -> None:
    """Run an installer, its output the job's; :class:`InstallFailed` when it fails."""
    sys.stdout.flush()
    done = subprocess.run(list(command), env=env, check=False)
    if done.returncode != 0:
        raise InstallFailed(f"{what} failed with exit code {done.returncode} (its output is above)")


class InstallFailed(Exception):
    """An installer the test job ran failed: the step fails, as a failed install would."""


def cmd_install(args: argparse.Namespace) -> int:
    try:
        handover = Handover.parse(_read(args.handover, "--handover"), str(args.handover))
    except HandoverError as exc:
        raise UsageError(str(exc)) from exc
    venv, evidence = Path(args.venv), Path(args.evidence)
    if venv.exists():
        raise UsageError(f"--venv {venv} exists: the tests install into a clean venv")
    python = str(venv / "bin" / "python")
    evidence.parent.mkdir(parents=True, exist_ok=True)
    index = ["--index-url", handover.index_url, *handover.requirements]
    try:
        if args.installer == "pip":
            # pip 23.0 made the installation report stable: the venv's own pip when it is as
            # new (no download), else a newer one with the runner's configuration. The install
            # from the run's index uses none.
            _run([args.python, "-m", "venv", str(venv)], "python -m venv")
            _run([python, "-m", "pip", "install", "--quiet", MINIMUM_PIP], "pip install pip")
            _run(
                [
                    python,
                    "-m",
                    "pip",
                    "install",
                    "--no-cache-dir",
                    "--report",
                    str(evidence),
                    *index,
                ],
                "pip install",
                hermetic_env(),
            )
        else:
            uv = shutil.which("uv")
            if uv is None:
                raise UsageError("--installer uv: there is no uv on PATH (install it first)")
            # Seeded with pip, so a test installs its tools with `python -m pip` in either route.
            _run([uv, "venv", "--seed", "--python", args.python, str(venv)], "uv venv")
            _run(
                [uv, "pip", "install", "--python", python, "--no-cache", *index],
                "uv pip install",
                hermetic_env(),
            )
            _record(python, evidence)
    except InstallFailed as exc:
        print(f"wheelgate job install: {exc}", file=sys.stderr)
        return EXIT_REJECTED
    print(
        f"installed {' '.join(handover.requirements)} from {handover.index_url} into {venv} "
        f"with {args.installer}; evidence: {evidence}",
        file=sys.stderr,
    )
    return EXIT_OK


def _record(python: str, evidence: Path) -> None:
    """What the environment holds, as ``wheelgate installed`` records it."""
    evidence.write_text(environment_record(python)[1])


def _read(path: Path, option: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{option} {path}: {exc.strerror}") from exc


def _tests(value: str) -> list[tuple[str, str]]:
    try:
        tests = json.loads(value)
        return [(str(t["name"]), str(t["run"])) for t in tests]
    except (ValueError, TypeError, KeyError) as exc:
        raise UsageError(
            '--tests must be the test matrix entry\'s tests: a JSON list of {"name", "run"}'
        ) from exc


def cmd_test(args: argparse.Namespace) -> int:
    tests = _tests(args.tests)
    venv = os.environ.get("VIRTUAL_ENV", "")
    found = shutil.which("python")
    if not venv or found != str(Path(venv) / "bin" / "python"):
        raise UsageError(
            f"python is {found}, not the venv's ({venv or 'VIRTUAL_ENV is unset'}): put the "
            "venv job install made first on PATH, with VIRTUAL_ENV naming it"
        )
    lines, failed = [], []
    for name, run in tests:
        print(f"::group::{name}", flush=True)
        ran = subprocess.run(["bash", "-eo", "pipefail", "-c", run], check=False)
        print("::endgroup::", flush=True)
        result = "passed" if ran.returncode == 0 else "failed"
        if result == "failed":
            failed.append(name)
        lines.append(result_line(args.index, name, result, args.run_url))
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("".join(line + "\n" for line in lines))
    print("\n".join(lines))
    if failed:
        print(f"::error::did not pass: {', '.join(failed)}")
        return EXIT_REJECTED
    return EXIT_OK


def cmd_collect(args: argparse.Namespace) -> int:
    staged = {
        path.stem: _read(path, "staged").split("\n", 1)[0]
        for path in sorted(Path(STAGED).glob("*.txt"))
    }
    results: dict[str, list[JobResults]] = {}
    for name in staged:
        for path in [Path(RESULTS) / f"{name}.txt", *sorted((Path(RESULTS) / name).glob("*.txt"))]:
            if not path.is_file() or not path.stat().st_size:
                continue
            evidence = path.with_name(path.stem + ".installed.json")
            has = evidence.is_file() and evidence.stat().st_size > 0
            results.setdefault(name, []).append(
                JobResults(
                    tuple(_read(path, "results").splitlines()), str(evidence) if has else None
                )
            )
    try:
        collected = collect(staged, results, args.test_result, args.run_url)
    except HandoverError as exc:
        print(f"::error::{exc}")
        raise UsageError(str(exc)) from exc
    Path(TESTS_FILE).write_text("".join(line + "\n" for line in collected.tests))
    Path(INSTALLED_FILE).write_text("".join(line + "\n" for line in collected.installed))
    print("\n".join(collected.tests))
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add ``job`` and its steps to the ``wheelgate`` command."""
    job = subparsers.add_parser(
        "job",
        help="a step of the example release workflow's jobs (and of wheelgate rehearse)",
        description=(
            "The steps of the release workflow's jobs that are the same for every project, "
            "reading what is a project's own from the families file or the build job's "
            "handover. wheelgate rehearse runs the same steps against the embedded stack."
        ),
    )
    steps = job.add_subparsers(dest="step", required=True, metavar="STEP")
    _register_handover(steps)
    _register_install(steps)
    _register_test(steps)
    _register_collect(steps)


def _register_handover(steps: Any) -> None:
    handover = steps.add_parser(
        "handover",
        help="print the build job's handover: the index, what to install, from where",
        description=(
            "Print three lines for the family's test jobs: its index directory, NAME==VERSION "
            "for each project the families file's install names (the version of its wheels in "
            "--dist), and --index-url (the stage action's index_url)."
        ),
    )
    handover.add_argument(
        "families",
        nargs="?",
        type=Path,
        default=DEFAULT_FAMILIES,
        metavar="FILE",
        help=f"the families file (default: {DEFAULT_FAMILIES})",
    )
    handover.add_argument("--family", required=True, metavar="NAME", help="the family built")
    handover.add_argument(
        "--dist", type=Path, default=Path("dist"), metavar="DIR", help="the wheels (default: dist)"
    )
    handover.add_argument(
        "--index-url", required=True, metavar="URL", help="the run's own index (stage's index_url)"
    )
    handover.set_defaults(func=cmd_handover, command_name="job handover")


def _register_install(steps: Any) -> None:
    install = steps.add_parser(
        "install",
        help="install the handover's requirements from the run's index into a clean venv",
        description=(
            "Make a clean venv with --python and install the handover's requirements from the "
            "run's own index, hermetically (no pip or uv configuration), exactly as users "
            "install from nightly. pip writes its installation report to --evidence; with uv, "
            "the environment is recorded as wheelgate installed does. Exit 1 when the install "
            "fails."
        ),
    )
    install.add_argument("--installer", required=True, choices=INSTALLERS)
    install.add_argument("--python", required=True, metavar="PYTHON", help="the job's Python")
    install.add_argument("--venv", required=True, type=Path, metavar="DIR", help="a new venv")
    install.add_argument(
        "--handover", required=True, type=Path, metavar="FILE", help="the build job's handover"
    )
    install.add_argument(
        "--evidence", required=True, type=Path, metavar="FILE", help="where the evidence goes"
    )
    install.set_defaults(func=cmd_install, command_name="job install")


def _register_test(steps: Any) -> None:
    test = steps.add_parser(
        "test",
        help="run the test matrix entry's tests in the venv, one result line each",
        description=(
            "Run each test (a shell command) with bash in the venv job install made, which "
            "must be first on PATH with VIRTUAL_ENV naming it; write one DIR:NAME=RESULT@URL "
            "line per test to --output, whatever its outcome. Exit 1 when a test did not pass."
        ),
    )
    test.add_argument(
        "--tests", required=True, metavar="JSON", help='the entry\'s tests: [{"name", "run"}]'
    )
    test.add_argument("--index", required=True, metavar="DIR", help="the index directory")
    test.add_argument("--run-url", required=True, metavar="URL", help="the run's log, per line")
    test.add_argument("--output", required=True, type=Path, metavar="FILE")
    test.set_defaults(func=cmd_test, command_name="job test")


def _register_collect(steps: Any) -> None:
    collect_step = steps.add_parser(
        "collect",
        help="collect every staged family's results into tests.txt and installed.txt",
        description=(
            "In the report job's directory: for each staged/<name>.txt, the lines of "
            "results/<name>.txt and results/<name>/*.txt, each test with its job's evidence "
            "(<results>.installed.json); a family no job left results for gets one line, "
            "results=skipped when --test-result is skipped, else results=failed. Writes "
            "tests.txt and installed.txt for the report action."
        ),
    )
    collect_step.add_argument(
        "--test-result", required=True, metavar="RESULT", help="needs.test.result"
    )
    collect_step.add_argument("--run-url", required=True, metavar="URL", help="the run's log")
    collect_step.set_defaults(func=cmd_collect, command_name="job collect")
