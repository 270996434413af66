"""``wheelgate rehearse``: the release workflow's build-stage-test-report path for one family,
on this machine, against the embedded stack (``wheelgate local``, needs the ``local`` extra).

It runs what the workflow's jobs run, from the same families file: the file's ``build``
command (unless ``--dist`` holds the wheels already), ``wheelgate stage`` (what the stage
action runs), ``wheelgate job handover``, then for each of the family's Pythons ``wheelgate job
install`` and ``wheelgate job test``, ``wheelgate job collect``, ``wheelgate report`` and
``wheelgate status --wait`` (the report and status actions'). Each is its own process, named on
stderr as it starts, with the embedded stack's settings and no other AWS or WheelGate setting:
nothing reaches a deployed stack, and nothing is published.

Its stdout is one JSON line, the decision: ``state``, ``reason``, ``run_id``, ``index``,
``requirements`` and ``nightly_index_url``, with the stack's ``env``. With ``--serve`` the
stack then stays up until interrupted, so the released files can be installed from its nightly.
Exit 0 promoted, 1 rejected, 3 still pending, 2 bad input (a step that could not run), 130
interrupted (Ctrl-C, SIGTERM) before the decision; the embedded stack is stopped either way.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wheelgate.cli.check_workflows import DEFAULT_FAMILIES, read_families
from wheelgate.cli.common import EXIT_OK, EXIT_PENDING, EXIT_REJECTED, UsageError
from wheelgate.cli.job import INSTALLED_FILE, INSTALLERS, TESTS_FILE
from wheelgate.core.env_names import (
    AWS_PREFIX,
    WHEELGATE_PREFIX,
    environment,
    without_settings,
)
from wheelgate.core.families import FamiliesError
from wheelgate.core.release_job import Handover

#: The exit code of a rehearsal interrupted (Ctrl-C, SIGTERM) before its decision.
EXIT_INTERRUPTED = 130
#: Seconds the embedded promoter may take to decide (a rehearsal's few files take seconds).
DECISION_WAIT = 300
#: Seconds ``wheelgate local`` may take to print its ready line.
READY_WAIT = 120
#: Test URLs must be on a host of the stack's test_url_hosts: the embedded stack's default.
RUN_URL_HOST = "https://github.com"


def _say(message: str) -> None:
    print(f"wheelgate rehearse: {message}", file=sys.stderr, flush=True)


def _outside_env() -> dict[str, str]:
    """This environment without any AWS or WheelGate setting: a rehearsal talks to the
    embedded stack alone."""
    return without_settings(os.environ, AWS_PREFIX, WHEELGATE_PREFIX)


def _step(command: Sequence[str], env: Mapping[str, str]) -> None:
    """Run a command of the families file (the build) as its own process, named on stderr,
    its output on stderr; one that fails is a UsageError naming it."""
    shown = shlex.join(command)
    _say(f"$ {shown}")
    done = subprocess.run(list(command), env=dict(env), stdout=sys.stderr.fileno(), check=False)
    if done.returncode != 0:
        raise UsageError(f"`{shown}` ended with exit code {done.returncode} (its output is above)")


@contextlib.contextmanager
def _children_print_to_stderr() -> Iterator[None]:
    """The processes a step starts (pip, uv, the tests) print to stderr meanwhile: stdout is
    the decision's."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


#: ``wheelgate``'s main, which runs a command line (the parser's ``main`` default).
Main = Callable[[Sequence[str]], int]


def _wheelgate(
    main: Main,
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: Path | None = None,
    capture: bool = False,
    codes: Sequence[int] = (EXIT_OK,),
) -> tuple[int, str]:
    """Run ``wheelgate ARGS`` (the command the workflow's step runs, in this process: no
    second start-up) with ``env`` in ``cwd``, named on stderr: its exit code and, with
    ``capture``, what it printed (else its output goes to stderr, stdout being the decision's).
    Another exit code than ``codes`` is a UsageError naming the step."""
    shown = shlex.join(["wheelgate", *args])
    _say(f"$ {shown}")
    printed = io.StringIO()
    with (
        environment(env),
        contextlib.chdir(cwd or Path.cwd()),
        contextlib.redirect_stdout(printed if capture else sys.stderr),
        contextlib.nullcontext() if capture else _children_print_to_stderr(),
    ):
        code = main(list(args))
    if code not in codes:
        raise UsageError(f"`{shown}` ended with exit code {code} (its output is above)")
    return code, printed.getvalue()


@contextlib.contextmanager
def _embedded_stack(
    index: str, required: Sequence[str], log: Path
) -> Iterator[tuple[dict[str, str], str]]:
    """``wheelgate local`` for ``index``, requiring ``required``: its environment and its
    nightly URL; stopped on exit."""
    options = [f"--require-test={index}={name}" for name in required]
    command = [sys.executable, "-m", "wheelgate", "local", "--index", index, *options]
    _say(f"$ {shlex.join(['wheelgate', *command[3:]])}")
    with log.open("w") as errors:
        process = subprocess.Popen(
            command, env=_outside_env(), stdout=subprocess.PIPE, stderr=errors, text=True
        )
        try:
            assert process.stdout is not None
            timer = threading.Timer(READY_WAIT, process.kill)
            timer.start()
            line = process.stdout.readline()
            timer.cancel()
            if not line:
                raise UsageError(
                    f"wheelgate local did not start: {log.read_text().strip() or 'no output'}"
                )
            ready = json.loads(line)
            env: dict[str, str] = ready["env"]
            if not env["AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:"):
                raise UsageError(f"not the embedded stack: {env['AWS_ENDPOINT_URL']}")
            yield env, str(ready["nightly_url"])
        finally:
            process.terminate()
            process.wait(timeout=60)


def _commit() -> str:
    """The checkout's commit (what the run is built from), else forty zeros."""
    done = subprocess.run(
        ["git", "rev-parse", "--verify", "HEAD"], capture_output=True, text=True, check=False
    )
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) == 40 else "0" * 40


def _interpreter(version: str) -> str:
    found = shutil.which(f"python{version}")
    if found is None:
        raise UsageError(
            f"the family tests with Python {version}, and there is no python{version} on "
            "PATH: install it, or rehearse another of its Pythons (--python)"
        )
    return found


@dataclass(frozen=True)
class _Family:
    """The family rehearsed, as the families file and the options say."""

    families_file: str
    index: str
    name: str
    build: Mapping[str, str]
    #: The test matrix's entries rehearsed, each with the interpreter of its Python.
    entries: tuple[tuple[Mapping[str, Any], str], ...]


def _family(args: argparse.Namespace) -> _Family:
    families = read_families(args.families)
    try:
        families = families.named(args.family)
    except FamiliesError as exc:
        raise UsageError(f"--family: {exc}") from exc
    (build,) = families.build_matrix()
    entries = [t for t in families.test_matrix() if args.python in (None, t["python"])]
    if not entries:
        pythons = ", ".join(families.families[0].pythons)
        raise UsageError(f"--python {args.python} is not one of the family's ({pythons})")
    if args.installer == "uv" and shutil.which("uv") is None:
        raise UsageError("--installer uv: there is no uv on PATH (or rehearse with pip)")
    return _Family(
        str(Path(args.families).resolve()),
        build["index"],
        build["name"],
        build,
        tuple((e, _interpreter(e["python"])) for e in entries),
    )


def _built(family: _Family, dist: Path | None) -> tuple[Path, list[str]]:
    """The build job's step (the families file's command, with the build job's variables)
    unless ``dist`` holds the wheels: the directory and its wheels."""
    if dist is None:
        variables = {k.upper(): family.build[k] for k in ("index", "name", "pythons")}
        _step(
            ["bash", "-eo", "pipefail", "-c", family.build["build"]],
            {**_outside_env(), **variables},
        )
        dist = Path("dist")
    wheels = sorted(str(p) for p in dist.glob("*.whl"))
    if not wheels:
        raise UsageError(f"no wheel in {dist}/ to stage")
    return dist, wheels


@dataclass(frozen=True)
class _Run:
    """One rehearsal run on the embedded stack: its id, its test URL, its job directory (the
    artifacts' staged/ and results/, the venvs) and the stack's environment."""

    run_id: str
    run_url: str
    work: Path
    env: Mapping[str, str]
    main: Main

    def step(self, *args: str, **options: Any) -> tuple[int, str]:
        return _wheelgate(self.main, args, self.env, **options)


def _stage(run: _Run, family: _Family, dist: Path, wheels: list[str]) -> Handover:
    """The build job: stage, then hand over (into the job directory's staged/)."""
    commit = _commit()
    staged = run.step(
        *("stage", "--run-id", run.run_id, "--index", family.index, "--commit", commit),
        *("--", *wheels),
        capture=True,
    )[1]
    index_url = json.loads(staged)["index_url"]
    handover = run.step(
        *("job", "handover", family.families_file, "--family", family.name),
        *("--dist", str(dist), "--index-url", index_url),
        capture=True,
    )[1]
    (run.work / "staged").mkdir()
    (run.work / "staged" / f"{family.name}.txt").write_text(handover)
    return Handover.parse(handover, "the handover")


def _test_jobs(run: _Run, family: _Family, installer: str) -> bool:
    """Each test job: install, then test in the venv; whether every one passed."""
    passed = True
    for entry, python in family.entries:
        venv, job = run.work / "venvs" / entry["name"], f"results/{family.name}/{entry['name']}"
        installed, _ = run.step(
            *("job", "install", "--installer", installer, "--python", python),
            *("--venv", str(venv), "--handover", f"staged/{family.name}.txt"),
            *("--evidence", f"{job}.installed.json"),
            cwd=run.work,
            codes=(EXIT_OK, EXIT_REJECTED),
        )
        if installed != EXIT_OK:
            passed = False
            continue
        # The install step's GITHUB_PATH and GITHUB_ENV lines: the venv first on PATH.
        in_venv = {
            "PATH": f"{venv / 'bin'}{os.pathsep}{run.env.get('PATH', '')}",
            "VIRTUAL_ENV": str(venv),
        }
        tested, _ = _wheelgate(
            run.main,
            (
                *("job", "test", "--tests", json.dumps(entry["tests"]), "--index", family.index),
                *("--run-url", run.run_url, "--output", f"{job}.txt"),
            ),
            {**run.env, **in_venv},
            cwd=run.work,
            codes=(EXIT_OK, EXIT_REJECTED),
        )
        passed = passed and tested == EXIT_OK
    return passed


def _report(run: _Run, passed: bool) -> tuple[str, dict[str, Any]]:
    """The report job: collect, report, wait; the state and the manifest's decision."""
    result = "success" if passed else "failure"
    run.step("job", "collect", "--test-result", result, "--run-url", run.run_url, cwd=run.work)
    specs = [
        *(f"--test={line}" for line in (run.work / TESTS_FILE).read_text().splitlines()),
        *(f"--installed={line}" for line in (run.work / INSTALLED_FILE).read_text().splitlines()),
    ]
    reported = run.step(
        "report", "--run-id", run.run_id, "--commit", _commit(), *specs, cwd=run.work, capture=True
    )[1]
    code, status = run.step(
        *("status", "--json", "--wait", str(DECISION_WAIT)),
        *("--manifest-sha256", json.loads(reported)["manifest_sha256"], "--", run.run_id),
        capture=True,
        codes=(EXIT_OK, EXIT_REJECTED, EXIT_PENDING),
    )
    state = {EXIT_OK: "promoted", EXIT_REJECTED: "rejected"}.get(code, "pending")
    return state, dict(json.loads(status).get("manifest_decision") or {})


def cmd_rehearse(args: argparse.Namespace) -> int:
    family = _family(args)
    # Nothing of a deployed stack, from the first import on: the promoter's modules build
    # clients as they load, and a profile this machine does not have would fail them.
    with environment(_outside_env()):
        _require_local_extra()
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return _rehearse(args, family)
    except KeyboardInterrupt:
        _say("interrupted; the embedded stack is stopped")
        return EXIT_INTERRUPTED


def _rehearse(args: argparse.Namespace, family: _Family) -> int:
    dist, wheels = _built(family, args.dist)
    run_id = f"rehearsal-{int(time.time())}"
    required = [test["name"] for entry, _ in family.entries for test in entry["tests"]]
    with tempfile.TemporaryDirectory(prefix="wheelgate-rehearsal-") as temp:
        work = Path(temp)
        with _embedded_stack(family.index, required, work / "local.log") as (stack, nightly_url):
            run_url = args.run_url or f"{RUN_URL_HOST}/rehearsal/{run_id}"
            run = _Run(run_id, run_url, work, {**_outside_env(), **stack}, args.main)
            handover = _stage(run, family, dist, wheels)
            state, decision = _report(run, _test_jobs(run, family, args.installer))
            reason = decision.get("reason") or ""
            line = {
                "state": state,
                "reason": reason,
                "message": decision.get("message") or "",
                "run_id": run_id,
                "index": family.index,
                "requirements": list(handover.requirements),
                "nightly_index_url": f"{nightly_url}{family.index}/",
                "env": stack,
            }
            print(json.dumps(line), flush=True)
            _say(
                f"rehearsal of {family.name}: {state}{f' ({reason})' if reason else ''} on the "
                "embedded stack; nothing published"
            )
            if args.serve:
                _say(f"serving nightly at {line['nightly_index_url']} until interrupted")
                _wait_for_a_signal()
    return {"promoted": EXIT_OK, "rejected": EXIT_REJECTED}.get(state, EXIT_PENDING)


def _require_local_extra() -> None:
    """The embedded stack's modules, before the build: a missing extra costs no build."""
    from wheelgate.local.extra import LocalExtraMissing, require_local_extra
    from wheelgate.local.moto_version import UnpatchedMoto

    try:
        require_local_extra()
    except (LocalExtraMissing, UnpatchedMoto) as exc:
        raise UsageError(str(exc)) from exc


def _wait_for_a_signal() -> None:
    """Until Ctrl-C or SIGTERM (:func:`_interrupt`)."""
    with contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait()


def _interrupt(*_: object) -> None:
    """SIGTERM as Ctrl-C: the embedded stack is stopped on the way out, whenever it comes."""
    raise KeyboardInterrupt


def register(subparsers: Any) -> None:
    """Add ``rehearse`` to the ``wheelgate`` command."""
    rehearse = subparsers.add_parser(
        "rehearse",
        help="run the release workflow's path for one family against the embedded stack",
        description=(
            "Rehearse the release of one family on this machine: the families file's build "
            "(unless --dist holds the wheels), wheelgate stage, wheelgate job handover, then "
            "for each of the family's Pythons (python3.X on PATH) wheelgate job install and "
            "wheelgate job test, wheelgate job collect, wheelgate report and wheelgate status, "
            "the steps the release workflow runs, against wheelgate local started for the "
            "family's index and tests (needs the local extra). Prints one JSON line, the "
            "decision. Exit 0 promoted, 1 rejected, 3 pending, 2 a step that could not run, "
            "130 interrupted before the decision."
        ),
    )
    rehearse.add_argument("--family", required=True, metavar="NAME", help="the family to rehearse")
    rehearse.add_argument(
        "--families",
        type=Path,
        default=DEFAULT_FAMILIES,
        metavar="FILE",
        help=f"the families file (default: {DEFAULT_FAMILIES})",
    )
    rehearse.add_argument(
        "--installer",
        choices=INSTALLERS,
        default="uv",
        help="how the test jobs install: uv (release-nightly-uv.yml, the default) or pip "
        "(release-nightly.yml)",
    )
    rehearse.add_argument(
        "--dist",
        type=Path,
        metavar="DIR",
        help="stage the wheels in DIR, built already (default: run the families file's build, "
        "which leaves them in dist/)",
    )
    rehearse.add_argument(
        "--python", metavar="VERSION", help="only the tests of this one of the family's Pythons"
    )
    rehearse.add_argument(
        "--run-url",
        metavar="URL",
        help=f"the URL each test result names (default: one under {RUN_URL_HOST}, a host the "
        "embedded stack's test_url_hosts allow)",
    )
    rehearse.add_argument(
        "--serve",
        action="store_true",
        help="after the decision, keep the embedded stack up until interrupted (Ctrl-C, or "
        "SIGTERM), so the released files can be installed from its nightly",
    )
    rehearse.set_defaults(func=cmd_rehearse)
