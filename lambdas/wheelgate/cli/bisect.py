"""``wheelgate bisect run`` (search staged runs for the first bad one) and ``bisect log``.

Exit codes of ``bisect run``: 0 the first bad run is found; 1 an end did not hold (the good
end is bad, the bad end good, or an end was skipped); 2 bad options, or a REF naming no run
or several; 4 storage error; 6 inconclusive (skipped runs hide the first bad: it could be any
of those listed); 130 aborted (the command was killed by a signal or exited 128 or more, or
the bisect was interrupted: --resume continues it).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from wheelgate.bisect.candidates import OrderError, candidates
from wheelgate.bisect.command import CommandAborted, TimeoutIs, run_command
from wheelgate.bisect.first_parent import GitError, first_parent_commits
from wheelgate.bisect.install import PipRunInstaller
from wheelgate.bisect.private_dir import UnsafeDirectory
from wheelgate.bisect.refs import RefError, resolve
from wheelgate.bisect.render import step_line, summary
from wheelgate.bisect.result import BisectResult, bisect_result
from wheelgate.bisect.runner import run_bisect
from wheelgate.bisect.search import Conclusion
from wheelgate.bisect.session import (
    Session,
    SessionArgs,
    SessionError,
    SessionStore,
    Step,
    changed_candidates,
)
from wheelgate.cli.bisect_install import (
    build_installer,
    installable,
    installer_args,
    installer_options,
    pin_ends,
    read_runs,
    register_install,
)
from wheelgate.cli.common import (
    EXIT_OK,
    EXIT_REJECTED,
    UsageError,
    index_option,
    storage_options,
)

#: Skipped runs hide the first bad run: it could be any of the runs listed.
EXIT_INCONCLUSIVE = 6
#: The bisect was aborted: by the command (a signal, an exit of 128 or more) or by Ctrl-C.
EXIT_ABORTED = 130
#: Where CMD's output goes with --json (stdout carries the result alone).
STDERR_FD = 2
#: Where the session lives unless ``--session`` says otherwise (relative to the cwd).
DEFAULT_SESSION = ".wheelgate-bisect"
EXIT_OF = {
    Conclusion.FOUND: EXIT_OK,
    Conclusion.INCONCLUSIVE: EXIT_INCONCLUSIVE,
    Conclusion.GOOD_END_IS_BAD: EXIT_REJECTED,
    Conclusion.BAD_END_IS_GOOD: EXIT_REJECTED,
    Conclusion.END_SKIPPED: EXIT_REJECTED,
}


def cmd_run(args: argparse.Namespace) -> int:
    store = SessionStore(Path(args.session))
    if args.resume:
        session = _resumed(args, store)
        # The installer follows the session's choices, also when a resume does not repeat them.
        saved = session.args
        installer = build_installer(saved.install, projects=saved.projects, target=saved.target)
    else:
        session, installer = _started(args, store)
        saved = session.args
    pin_ends(installer, (session.candidates[0], session.candidates[-1]), as_test=saved.as_test)
    if not args.resume:
        store.save(session)
    people = sys.stderr if args.json else sys.stdout
    for note in session.notes:
        print(note, file=people)
    for step in session.steps:
        print(step_line(step), file=people)

    def shown(step: Step) -> None:
        print(step_line(step), file=people, flush=True)

    # With --json, stdout carries the result alone: the command's output goes to stderr.
    output = STDERR_FD if args.json else None
    try:
        session, outcome = run_bisect(
            session,
            store,
            installer,
            lambda venv: _command(session.args, venv, output),
            on_step=shown,
        )
    except CommandAborted as exc:
        print(f"wheelgate bisect run: aborted: {exc}; fix it, then --resume", file=sys.stderr)
        return EXIT_ABORTED
    except KeyboardInterrupt:
        print("wheelgate bisect run: interrupted: --resume continues it", file=sys.stderr)
        return EXIT_ABORTED
    result = bisect_result(session, outcome, repository_url=session.args.repository_url)
    _print(result, as_json=args.json)
    return EXIT_OF[outcome.conclusion]


def _command(args: SessionArgs, venv: Path, output: int | None) -> Any:
    return run_command(
        args.command, venv, timeout=args.timeout, timeout_is=args.timeout_is, stdout=output
    )


def _print(result: BisectResult, *, as_json: bool) -> None:
    if as_json:
        print(result.model_dump_json(by_alias=True, indent=2))
    else:
        print("\n".join(summary(result)))


def _session_args(args: argparse.Namespace) -> SessionArgs:
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise UsageError("give the command to run after --: wheelgate bisect run ... -- CMD ARGS")
    if args.index is None or args.good is None or args.bad is None:
        raise UsageError("--index, --good and --bad are required (or --resume a bisect)")
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError(f"--timeout: {args.timeout:g} is not a positive number of seconds")
    return SessionArgs(
        index=index_option(args),
        good=args.good,
        bad=args.bad,
        command=tuple(command),
        timeout=args.timeout,
        timeout_is=TimeoutIs(args.timeout_is),
        projects=tuple(args.project or ()),
        target=args.target,
        repo=args.repo,
        repository_url=args.repository_url or _known_repository(),
        as_test=args.as_test,
        install=installer_args(args),
    )


def _known_repository() -> str | None:
    """The repository GitHub Actions runs for, when this runs there."""
    repository = os.environ.get("GITHUB_REPOSITORY")
    if not repository:
        return None
    return f"{os.environ.get('GITHUB_SERVER_URL', 'https://github.com')}/{repository}"


def _started(args: argparse.Namespace, store: SessionStore) -> tuple[Session, PipRunInstaller]:
    """A new session, not saved yet (the history read, the ends resolved, ``latest`` the
    newest run that installs, the candidates chosen), and the installer that judged it."""
    if store.exists():
        raise UsageError(
            f"{store.directory} holds a bisect session: --resume it, or remove the directory "
            "to start over"
        )
    wanted = _session_args(args)
    try:
        store.create()
    except (SessionError, UnsafeDirectory) as exc:
        raise UsageError(str(exc)) from exc
    runs = read_runs(args, wanted.index, wanted.install)
    installer = build_installer(wanted.install, projects=wanted.projects, target=wanted.target)
    why_not = installable(installer, as_test=wanted.as_test)
    try:
        good = resolve(wanted.good, runs, why_not=why_not)
        bad = resolve(wanted.bad, runs, why_not=why_not)
        listed = (
            first_parent_commits(Path(wanted.repo), good.run.commit, bad.run.commit)
            if wanted.repo
            else None
        )
        chosen = candidates(runs, good.run, bad.run, first_parent=listed)
    except (RefError, OrderError, GitError) as exc:
        raise UsageError(str(exc)) from exc
    session = Session(
        schema="wheelgate/bisect-session/v1",
        args=wanted,
        order=chosen.order,
        notes=(
            *good.notes,
            *bad.notes,
            f"{len(chosen.runs)} candidates in {chosen.order} order",
            *chosen.notes,
        ),
        candidates=chosen.runs,
    )
    return session, installer


def _resumed(args: argparse.Namespace, store: SessionStore) -> Session:
    """The saved session; options given again must be the ones it was started with, and its
    candidates must be the history's as read now (same runs, commits and files)."""
    try:
        session = store.load()
    except (SessionError, UnsafeDirectory) as exc:
        raise UsageError(str(exc)) from exc
    saved = session.args
    given: dict[str, tuple[object, object]] = {
        "--index": (args.index, saved.index),
        "--good": (args.good, saved.good),
        "--bad": (args.bad, saved.bad),
        "--as-test": (args.as_test, saved.as_test),
    }
    command = tuple(args.command[1:] if args.command[:1] == ["--"] else args.command)
    given["CMD"] = (command or None, saved.command)
    for option, (value, was) in given.items():
        if value is not None and value != was:
            raise UsageError(f"{option} differs from the resumed session's ({was!r})")
    changed = changed_candidates(session.candidates, read_runs(args, saved.index, saved.install))
    if changed:
        listed = "".join(f"\n  {change}" for change in changed)
        raise UsageError(
            f"{store.directory}'s candidates are not the history's any more, so its steps "
            f"prove nothing: start a new bisect in another --session{listed}"
        )
    return session


def cmd_log(args: argparse.Namespace) -> int:
    try:
        session = SessionStore(Path(args.session)).load()
    except (SessionError, UnsafeDirectory) as exc:
        raise UsageError(str(exc)) from exc
    for note in session.notes:
        print(note)
    for step in session.steps:
        print(step_line(step))
    outcome = session.bisection().outcome()
    if outcome is None:
        print(f"in progress: {len(session.steps)} step(s) done; bisect run --resume continues it")
    else:
        result = bisect_result(session, outcome, repository_url=session.args.repository_url)
        print("\n".join(summary(result)))
    return EXIT_OK


RUN_DESCRIPTION = """\
Find the first bad run of an index directory between a good and a bad one. It reads the run
history, takes one run per commit in commit order, and checks both ends first. Then it
bisects: each step installs a run into the session's venv and runs CMD there.

CMD's exit, as git bisect run reads it: 0 good, 125 skip, any other 1-127 bad; killed by a
signal, or 128 or more, aborts. A run the installer cannot install exactly (missing project
or file, expired, hash mismatch, failed install) is skipped with its reason, never counted bad.

REF: a run id (run:ID), a commit prefix of 4+ hex digits (commit:PREFIX), an ISO date or
date-time (the last run committed at or before it, by the commit time the reporter stated,
else by when it was staged; a date means the end of that day, a time without a zone is UTC),
promoted (the newest promoted run) or latest (the newest run that can be installed; the newer
runs passed over are named, with why).

The session (the candidates and every step) is saved after each step: --resume continues a
killed bisect without retesting a step, once the candidates are still the history's; wheelgate
bisect log shows it. The session and cache directories must be yours, writable by no one else;
a new session refuses a venv it did not make. With --json, stdout holds the result alone: the
notes, the steps and CMD's own output go to stderr.

Exit codes: 0 first bad run found; 1 an end did not hold (the good end is bad, the bad end
good, or an end was skipped); 2 bad options, or a REF naming no run or several (they are
listed); 4 storage error; 6 inconclusive (skips hide the first bad run: it could be any of
those listed); 130 aborted by the command or by an interrupt (--resume continues).
"""


def register(subparsers: Any) -> None:
    """Add ``bisect run|log`` to the ``wheelgate`` command."""
    bisect = subparsers.add_parser(
        "bisect",
        help="search staged runs for the first bad one",
        description="Search an index directory's staged runs for the first bad one.",
    )
    actions = bisect.add_subparsers(dest="bisect_command", required=True, metavar="ACTION")
    run = actions.add_parser(
        "run",
        help="find the first bad run between --good and --bad, running CMD on each",
        description=RUN_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("--index", metavar="DIR", help="the index directory whose runs to search")
    run.add_argument("--good", metavar="REF", help="a run known to be good")
    run.add_argument("--bad", metavar="REF", help="a run known to be bad")
    run.add_argument(
        "--project",
        action="append",
        metavar="P",
        help="install only this project (and its pinned closure); a run without it is skipped",
    )
    run.add_argument("--target", metavar="PRESET", help="install the files of this target")
    run.add_argument(
        "--repo", metavar="PATH", help="a git checkout: order commits by its first-parent line"
    )
    run.add_argument(
        "--repository-url",
        metavar="URL",
        help="the repository's web URL, for a compare link (default: GitHub Actions' own)",
    )
    run.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="stop CMD after this long (exit 124)"
    )
    run.add_argument(
        "--timeout-is",
        choices=[t.value for t in TimeoutIs],
        default=TimeoutIs.BAD.value,
        help="what a timeout counts as (default bad)",
    )
    _session_option(run)
    run.add_argument("--resume", action="store_true", help="continue the session's bisect")
    run.add_argument(
        "--as-test",
        metavar="NAME",
        help="install at every step exactly the files this test of the run installed",
    )
    run.add_argument(
        "--json",
        action="store_true",
        help="print the result as JSON, alone on stdout (steps and CMD's output go to stderr)",
    )
    installer_options(run)
    storage_options(run, nightly=False)
    run.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS")
    run.set_defaults(func=cmd_run, command_name="bisect run")

    log = actions.add_parser(
        "log",
        help="the steps of the session's bisect, and what it found",
        description="Print the session's notes, one line per step, and the result once found.",
    )
    _session_option(log)
    log.set_defaults(func=cmd_log, command_name="bisect log")
    register_install(actions)


def _session_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--session",
        metavar="DIR",
        default=DEFAULT_SESSION,
        help=f"the session directory (default {DEFAULT_SESSION}/ in the current directory)",
    )
