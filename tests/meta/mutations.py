"""Mutation checks: break one security check at a time, run the tests that should catch it,
and print which did.

    .venv/bin/python -m tests.meta.mutations                 # every mutation, then the table
    .venv/bin/python -m tests.meta.mutations --list          # each mutation and where its line is
    .venv/bin/python -m tests.meta.mutations evidence writer # some of them

A mutation replaces one line, found by its text (stripped) wherever it is under ``lambdas/``:
the file may move or be renamed, but the line must be there exactly once, else the script
stops before running anything and names the mutation to update. The tests run in a temporary
copy of the repository (its tracked and untracked files, never the ignored ones), so the
working tree is never changed, not even by an interrupted run; the processes the tests start
import the copy too (``PYTHONPATH``). The selected tests first run on the unchanged copy:
a test that fails there would be taken for a catch.

The table says, for each mutation, whether any test failed and which. Exit status 0 when
every mutation was caught, 1 when one was missed or the baseline failed, 2 for a mutation
whose line is not found. Not part of ``make test``: it runs the integration tests once per
mutation (docs/reliability.md records the last table and how long it took).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCE = "lambdas"
PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")
#: Seconds one pytest run may take before it is stopped (and the mutation counted missed).
RUN_TIMEOUT = 1800

#: The tests that install with pip or uv (the decoy in tests/integration/decoy.py guards them).
INSTALL_TESTS = (
    "tests/integration/test_decoy.py",
    "tests/integration/test_cycle.py",
    "tests/integration/test_per_run_staging.py",
    "tests/integration/test_evidence.py",
    "tests/integration/test_exact_evidence.py",
    "tests/integration/test_redirected_evidence.py",
    "tests/integration/test_tag_shadowing.py",
    "tests/integration/test_equals_pin.py",
    "tests/integration/test_plus_in_file_names.py",
    "tests/integration/test_listing_retention.py",
    "tests/integration/test_index_maintenance.py",
    "tests/integration/test_local_fanout.py",
    "tests/integration/test_secrets.py",
    "tests/integration/test_actions.py",
    "tests/integration/test_deps.py",
    "tests/integration/test_status_wait.py",
    "tests/integration/test_promoter.py::test_uv_resolves_through_the_json_api",
    "tests/integration/test_promoter.py::test_dry_run_resolution_reads_metadata_not_the_wheel",
)
HOSTILE = (
    "tests/integration/test_hostile.py"
    "::test_hostile_manifest_is_rejected_once_and_nightly_is_untouched"
)


@dataclass(frozen=True)
class Mutation:
    """One line of a check replaced by a line that turns the check off."""

    name: str
    #: What the mutation breaks, in a few words.
    breaks: str
    #: The line to replace, as it reads without its indentation (unique under lambdas/).
    line: str
    #: What replaces it (the indentation is kept).
    replacement: str
    #: The pytest arguments (files or node ids) of the tests that should catch it.
    tests: tuple[str, ...]


MUTATIONS = (
    Mutation(
        "evidence",
        "every file counts as installed by a passed test",
        "if not untested:",
        "if True:",
        (
            "tests/unit/test_evidence.py",
            "tests/integration/test_evidence.py",
            f"{HOSTILE}[evidence for another hash]",
            f"{HOSTILE}[no evidence]",
            f"{HOSTILE}[untested sibling wheel]",
            f"{HOSTILE}[replaced after its test]",
        ),
    ),
    Mutation(
        "record against members",
        "a wheel's RECORD is trusted without holding it to the wheel's own members",
        "check_record(filename, dist_info, content.rows, members)",
        "pass",
        (
            "tests/unit/test_wheelmembers.py",
            "tests/integration/test_redirected_evidence.py"
            "::test_a_wheel_whose_record_lies_about_its_members_is_never_released_as_tested",
            "tests/unit/test_installed_release.py"
            "::test_a_wheel_whose_record_lies_about_its_members_is_refused",
        ),
    ),
    Mutation(
        "refused evidence",
        "the promoter releases a set whose test's evidence report refused",
        "check_refused_evidence(artifact_set)",
        "pass",
        (
            "tests/unit/test_evidence.py",
            "tests/integration/test_redirected_evidence.py"
            "::test_a_wheel_whose_record_lies_about_its_members_is_never_released_as_tested",
            "tests/integration/test_redirected_evidence.py"
            "::test_a_test_that_ran_on_another_runs_dependency_does_not_vouch",
        ),
    ),
    Mutation(
        "foreign bytes at report",
        "report takes installed bytes of an offered release that are none of its files",
        'if judgement == "foreign":',
        "if False:",
        (
            "tests/integration/test_redirected_evidence.py"
            "::test_a_test_that_ran_on_another_runs_dependency_does_not_vouch",
        ),
    ),
    Mutation(
        "foreign build of the set",
        "the promoter takes a passed test that installed another build of the set's release",
        "check_own_releases(artifact_set)",
        "pass",
        ("tests/unit/test_evidence.py",),
    ),
    Mutation(
        "pins held to objects",
        "pins pins whatever file the run's pages link",
        'if offer.judge(name, found.version, found.sha256) != "offered":',
        "if False:",
        (
            "tests/unit/test_pins.py",
            "tests/integration/test_redirected_evidence.py"
            "::test_a_test_that_ran_on_another_runs_dependency_does_not_vouch",
        ),
    ),
    Mutation(
        "checksum",
        "S3's SHA-256 of a staged file is not compared with the manifest's",
        "if info.s3_sha256 != f.sha256:",
        "if False:",
        (
            "tests/unit/test_planning.py",
            "tests/integration/test_promoter.py::test_tampered_staged_file_is_rejected",
            "tests/integration/test_what_ships.py::test_a_hash_only_in_user_metadata_is_not_trusted",
            f"{HOSTILE}[tampered bytes]",
        ),
    ),
    Mutation(
        "checksum of a hashed read",
        "the SHA-256 of a file read in full (staged multipart) is not compared",
        "if digest != step.file.sha256:",
        "if False:",
        (
            "tests/integration/test_large_files.py",
            "tests/integration/test_fanout.py::test_a_multipart_file_with_other_bytes_is_refused_by_its_hash_step_before_any_copy",
        ),
    ),
    Mutation(
        "writer check",
        "a manifest from any principal decides its run",
        "if not written_by(principal_id, trusted):",
        "if False:",
        (
            "tests/integration/test_promoter.py::test_manifest_from_another_principal_never_decides_the_run",
            "tests/integration/test_promoter.py::test_event_without_identity_never_decides_the_run",
            "tests/integration/test_promoter.py::test_mirror_runs_are_accepted_only_from_the_mirror_role",
            f"{HOSTILE}[another principal]",
            f"{HOSTILE}[no principal]",
            f"{HOSTILE}[reporter id as a prefix]",
        ),
    ),
    Mutation(
        "If-None-Match on pages",
        "a new index or status page replaces one another writer created meanwhile",
        "if_none_match=etag is None,",
        "if_none_match=False,",
        ("tests/integration/test_concurrency.py",),
    ),
    Mutation(
        "If-None-Match on leases",
        "taking an index directory's lease replaces another taker's",
        "self.bucket.put(key, body, content_type=_CONTENT_TYPE, if_none_match=True)",
        "self.bucket.put(key, body, content_type=_CONTENT_TYPE, if_none_match=False)",
        ("tests/integration/test_lease.py",),
    ),
    Mutation(
        "hermetic env",
        "pip and uv run with the caller's environment and configuration unchanged",
        "source = os.environ if base is None else base",
        "return dict(os.environ if base is None else base)",
        INSTALL_TESTS,
    ),
    Mutation(
        "sidecar equality",
        "a staged .metadata sidecar is released without being compared with the wheel's",
        "if sidecar is not None and sidecar[0] != metadata.content:",
        "if False:",
        (
            "tests/integration/test_what_ships.py::test_a_forged_metadata_sidecar_is_refused_before_any_copy",
        ),
    ),
    Mutation(
        "release conflict",
        "the same release under another file name or build tag is released",
        "if self.allow_build_tag_rereleases and other_build != build:",
        "if True:",
        (
            "tests/unit/test_planning.py",
            "tests/integration/test_what_ships.py::test_the_same_release_under_another_file_name_is_refused",
            "tests/integration/test_listing_retention.py::test_a_release_conflict_with_a_delisted_release_is_still_refused",
        ),
    ),
    Mutation(
        "tag shadowing",
        "a wheel joining a released version is released though an interpreter ranks its tag first",
        "if new_rank < best[0]:",
        "if False:",
        (
            "tests/unit/test_shadowing.py",
            "tests/unit/test_planning.py",
            "tests/unit/test_importing.py::test_screening_refuses_a_wheel_an_interpreter_would_install_instead_of_nightlys",
            "tests/integration/test_tag_shadowing.py::test_a_wheel_this_python_would_prefer_is_refused_and_equals_installs_the_same_bytes",
        ),
    ),
    Mutation(
        "METADATA inflation cap",
        "a METADATA whose header lies about its size is inflated in full",
        "content = inflater.decompress(raw, limit + 1)",
        "content = inflater.decompress(raw)",
        (
            "tests/integration/test_what_ships.py::test_a_metadata_bomb_is_refused_within_bounded_memory",
        ),
    ),
    Mutation(
        "verify needs a gate",
        "verify goes on with neither a gate nor a key to trust",
        "if gate is None:",
        "if False:",
        (
            "tests/integration/test_verdicts.py::test_verify_without_a_gate_trusts_no_keys_a_build_job_planted_beside_its_file",
        ),
    ),
    Mutation(
        "installed: listed bytes",
        "verify --installed compares an installation with a download that is not the bytes "
        "its page lists",
        "if digest != wheel.sha256:",
        "if False:",
        (
            "tests/unit/test_installed_release.py"
            "::test_a_candidate_with_other_bytes_than_listed_or_gone_is_refused",
        ),
    ),
    Mutation(
        "verifier is the gate",
        "a verdict naming another gate verifies when its key is trusted (given as --key)",
        'if gate is not None and verifier_id.rstrip("/") != gate.rstrip("/"):',
        "if False:",
        (
            "tests/unit/test_verdicts.py::test_a_verdict_verifies_for_its_file_only_and_under_its_key_only",
            "tests/integration/test_verdicts.py::test_verify_with_a_gate_refuses_a_planted_verdict_and_another_gates_verdict",
        ),
    ),
    Mutation(
        "import source segments",
        "a '.' or '..' segment in an import source or import_sources prefix passes, under an entry",
        "if segment in _DOT_SEGMENTS:",
        "if False:",
        (
            "tests/unit/test_cli_options.py::test_import_refuses_a_source_with_a_dot_or_empty_segment",
            "tests/unit/test_importing.py::test_bad_allow_list_entries_are_named",
            "tests/infra/test_props.py::test_bad_import_sources_are_refused_naming_the_key",
            "tests/integration/test_import.py::test_a_source_with_a_dot_or_empty_segment_is_refused_before_it_is_read",
        ),
    ),
    Mutation(
        "reporter id required",
        "the promoter starts without a trusted reporter id and decides any writer's manifest",
        "trusted_reporter_id: Text = _var(ENV_TRUSTED_REPORTER_ID)",
        "trusted_reporter_id: Text | None = _var(ENV_TRUSTED_REPORTER_ID, None)",
        ("tests/unit/test_settings.py::test_the_promoter_refuses_to_start_without_a_gate_setting",),
    ),
    Mutation(
        "allowed indexes required",
        "the promoter starts without allowed index directories and promotes to any directory",
        "] = _var(ENV_ALLOWED_INDEXES)",
        "] = _var(ENV_ALLOWED_INDEXES, frozenset())",
        ("tests/unit/test_settings.py::test_the_promoter_refuses_to_start_without_a_gate_setting",),
    ),
    Mutation(
        "verdict key required",
        "the promoter starts without a verdict key and releases files unsigned",
        "verdict_key_arn: Text = _var(ENV_VERDICT_KEY_ARN)",
        "verdict_key_arn: Text | None = _var(ENV_VERDICT_KEY_ARN, None)",
        ("tests/unit/test_settings.py::test_the_promoter_refuses_to_start_without_a_gate_setting",),
    ),
    Mutation(
        "verdicts left named",
        "a rejected run's left_in_nightly leaves out the verdicts it left in nightly",
        "left += [k for k in (key, key + METADATA_SUFFIX, key + VERDICT_SUFFIX) if k in held]",
        "left += [k for k in (key, key + METADATA_SUFFIX) if k in held]",
        (
            "tests/integration/test_fanout_verdicts.py::test_a_run_refused_by_its_publish_step_signs_nothing_and_names_the_verdict_it_found",
        ),
    ),
    Mutation(
        "verdict keys read first",
        "the signer signs before it finds a verdict key taken, and a retried publish step "
        "signs again",
        "if fanout or not s.copy or NIGHTLY.verdict(s.index, s.file.filename) in held_keys",
        "if not s.copy and not fanout",
        (
            "tests/integration/test_fanout_verdicts.py::test_a_run_refused_by_its_publish_step_signs_nothing_and_names_the_verdict_it_found",
            "tests/integration/test_fanout_verdicts.py::test_a_publish_step_retried_after_signing_keeps_the_verdicts_it_wrote",
            "tests/integration/test_fanout_verdicts.py::test_a_single_invocation_finds_a_taken_verdict_key_before_it_signs_anything",
        ),
    ),
    Mutation(
        "fan-out busy delay",
        "a run waiting on a fan-out job's lease comes back after a promotion's delay",
        "delay = FANOUT_LEASE_BUSY_RETRY_SECONDS if exc.fanout else LEASE_BUSY_RETRY_SECONDS",
        "delay = LEASE_BUSY_RETRY_SECONDS",
        (
            "tests/integration/test_fanout.py::test_a_run_waiting_on_a_fan_out_job_comes_back_less_often",
        ),
    ),
    Mutation(
        "history entry against objects",
        "the promoter folds a stage entry whose SHA-256 the staged object does not hold",
        "if found.sha256 != f.sha256:",
        "if False:",
        ("tests/unit/test_history_writers.py",),
    ),
    Mutation(
        "bisect never blames its own trouble",
        "a run the installer cannot install exactly is counted bad instead of skipped",
        "return _Probed(Verdict.SKIP, skip.reason, skip.message, None, downloaded, install)",
        "return _Probed(Verdict.BAD, skip.reason, skip.message, None, downloaded, install)",
        ("tests/unit/test_bisect_runner.py", "tests/unit/test_bisect_cli.py"),
    ),
    Mutation(
        "bisect downloads held to the history",
        "a downloaded file whose bytes are not the ones the history recorded is installed",
        "if digest.hexdigest() != sha256:",
        "if False:",
        (
            "tests/unit/test_bisect_cache.py",
            "tests/integration/test_bisect_install.py"
            "::test_a_file_whose_bytes_differ_from_the_history_skips_the_run_as_hash_mismatch",
        ),
    ),
    Mutation(
        "history hash from S3, never metadata",
        "the fold takes a staged file's SHA-256 from the writer's user metadata",
        "sha256 = head.s3_sha256",
        "sha256 = head.sha256",
        ("tests/unit/test_history_forgeries.py",),
    ),
    Mutation(
        "history offer checked against nightly",
        "a stage entry's offer of bytes nightly never released is kept and installed",
        "if released != offered.sha256:",
        "if False:",
        ("tests/unit/test_history_offer.py",),
    ),
    Mutation(
        "history reported runs are their manifests'",
        "a stage entry folded after the run was reported adds files to it",
        "if existing.state is not RunState.STAGED:",
        "if False:",
        ("tests/unit/test_history_forgeries.py",),
    ),
    Mutation(
        "history flood cap",
        "never-reported runs past a day's cap are folded, pushing reported runs off the page",
        "if cap is not None and old is None and _over_cap(runs.values(), new, cap):",
        "if False:",
        ("tests/unit/test_history_forgeries.py",),
    ),
    Mutation(
        "history directories served",
        "an entry for a directory the deployment does not serve is folded (and dead-lettered)",
        "if allowed and entry.index not in allowed:",
        "if False:",
        ("tests/unit/test_history_forgeries.py",),
    ),
    Mutation(
        "bisect cache hits hashed again",
        "a cached file whose bytes changed behind the cache is installed",
        "if not _holds(path, file.sha256):",
        "if False:",
        ("tests/unit/test_bisect_trust.py",),
    ),
    Mutation(
        "bisect private directories",
        "a session or cache directory other users can write is used",
        "if info.st_mode & _SHARED_WRITE:",
        "if False:",
        ("tests/unit/test_bisect_trust.py", "tests/unit/test_bisect_cli_trust.py"),
    ),
    Mutation(
        "bisect resume holds its candidates",
        "a resumed session installs candidates the history no longer shows",
        "changed = changed_candidates(session.candidates, read_runs(args, saved.index, "
        "saved.install))",
        "changed: list[str] = []",
        ("tests/unit/test_bisect_cli_trust.py",),
    ),
)


class LineNotFound(Exception):
    """A mutation's line is not under lambdas/ exactly once."""


@dataclass(frozen=True)
class Site:
    """Where a mutation's line is: the file (relative to the repository) and its number."""

    path: str
    number: int


def locate(mutation: Mutation, root: Path = REPO) -> Site:
    """The one line under ``root/lambdas`` that reads ``mutation.line``; :class:`LineNotFound`
    naming the mutation when there is none or more than one."""
    found = []
    for path in sorted((root / SOURCE).rglob("*.py")):
        for number, text in enumerate(path.read_text().splitlines(), start=1):
            if text.strip() == mutation.line:
                found.append(Site(path.relative_to(root).as_posix(), number))
    if len(found) != 1:
        where = ", ".join(f"{s.path}:{s.number}" for s in found) or "nowhere"
        raise LineNotFound(
            f"mutation {mutation.name!r}: the line {mutation.line!r} is found {len(found)} "
            f"time(s) under {SOURCE}/ ({where}), not once; update tests/meta/mutations.py"
        )
    return found[0]


def mutated(text: str, site: Site, mutation: Mutation) -> str:
    """``text`` (the file at ``site``) with the mutation's line replaced."""
    lines = text.splitlines(keepends=True)
    original = lines[site.number - 1]
    if original.strip() != mutation.line:
        raise LineNotFound(f"mutation {mutation.name!r}: {site.path}:{site.number} changed")
    indent = original[: len(original) - len(original.lstrip())]
    lines[site.number - 1] = indent + mutation.replacement + "\n"
    changed = "".join(lines)
    compile(changed, site.path, "exec")
    return changed


def copy_repository(destination: Path) -> None:
    """The repository's tracked and untracked (not ignored) files, copied to
    ``destination``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


@dataclass(frozen=True)
class Outcome:
    ran: int
    failed: tuple[str, ...]
    seconds: float


def run_tests(copy: Path, tests: Sequence[str], report: Path) -> Outcome:
    """Run ``tests`` in ``copy`` (the copy's own code, in this process's Python)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy / SOURCE), str(copy)])}
    started = time.monotonic()
    subprocess.run(
        [*PYTEST, f"--junitxml={report}", *tests],
        cwd=copy,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    seconds = time.monotonic() - started
    if not report.exists():
        return Outcome(0, ("(pytest wrote no report)",), seconds)
    ran, failed = 0, []
    # The report is the one pytest just wrote in our own temporary directory.
    for case in ElementTree.parse(report).iter("testcase"):  # noqa: S314
        ran += 1
        if case.find("failure") is not None or case.find("error") is not None:
            module = str(case.get("classname", "")).replace(".", "/")
            failed.append(f"{module}.py::{case.get('name')}")
    report.unlink()
    return Outcome(ran, tuple(dict.fromkeys(failed)), seconds)


def table(rows: Sequence[tuple[Mutation, Site, Outcome]]) -> str:
    lines = [
        "| mutation | what it breaks | line | caught | tests that failed |",
        "| --- | --- | --- | --- | --- |",
    ]
    for mutation, site, outcome in rows:
        caught = (
            f"caught ({len(outcome.failed)} of {outcome.ran})"
            if outcome.failed
            else (f"**missed** (0 of {outcome.ran})")
        )
        names = "<br>".join(f"`{short(n)}`" for n in outcome.failed) or "none"
        lines.append(
            f"| {mutation.name} | {mutation.breaks} | `{site.path}:{site.number}` | {caught} "
            f"| {names} |"
        )
    return "\n".join(lines)


def short(node: str) -> str:
    return node.removeprefix("tests/integration/").removeprefix("tests/")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.meta.mutations", description=__doc__)
    parser.add_argument("names", nargs="*", help="mutations to run (default: all)")
    parser.add_argument("--list", action="store_true", help="say where each line is and stop")
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the run on the unchanged copy"
    )
    options = parser.parse_args(argv)
    by_name = {m.name: m for m in MUTATIONS}
    unknown = [n for n in options.names if n not in by_name]
    if unknown:
        parser.error(f"no mutation named {', '.join(unknown)} (known: {', '.join(by_name)})")
    chosen = [by_name[n] for n in options.names] or list(MUTATIONS)
    try:
        sites = {m.name: locate(m) for m in chosen}
    except LineNotFound as exc:
        print(f"mutations: {exc}", file=sys.stderr)
        return 2
    if options.list:
        for m in chosen:
            site = sites[m.name]
            print(f"{m.name}: {site.path}:{site.number}: {m.line}  ->  {m.replacement}")
        return 0
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="wheelgate-mutations-") as work:
        copy = Path(work) / "repo"
        copy_repository(copy)
        report = Path(work) / "report.xml"
        if not options.no_baseline:
            every = list(dict.fromkeys(t for m in chosen for t in m.tests))
            baseline = run_tests(copy, every, report)
            print(f"baseline: {baseline.ran} tests, {baseline.seconds:.0f} s", file=sys.stderr)
            if baseline.failed or not baseline.ran:
                print("baseline failed (fix these first):", file=sys.stderr)
                print("\n".join(baseline.failed), file=sys.stderr)
                return 1
        rows = []
        for m in chosen:
            site = sites[m.name]
            path = copy / site.path
            original = path.read_text()
            path.write_text(mutated(original, site, m))
            try:
                outcome = run_tests(copy, m.tests, report)
            finally:
                path.write_text(original)
            verdict = "caught" if outcome.failed else "MISSED"
            print(
                f"{m.name}: {verdict} by {len(outcome.failed)} of {outcome.ran} tests "
                f"({outcome.seconds:.0f} s)",
                file=sys.stderr,
            )
            rows.append((m, site, outcome))
    print(table(rows))
    print(f"\n{len(rows)} mutations in {(time.monotonic() - began) / 60:.0f} min")
    return 0 if all(o.failed for _, _, o in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
