"""The example GitHub Actions workflows in ``examples/github/`` and the composite actions in
``actions/`` that they use.

actionlint checks the workflows as GitHub would read them (syntax, expressions, action inputs,
job graph), with WheelGate's own actions resolved to ``actions/`` so that their inputs and
outputs are checked too; the structural checks below hold the workflows to the security model
of ``docs/security.md`` (OIDC roles only, no long-lived keys, the dev workflow never touching
the build or reporter roles) and the actions to theirs (inputs reach scripts only through
``env``). ``tests/integration/test_actions.py`` runs the actions.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.example_copy import fill_placeholders
from tests.infra.synth import REPO_ROOT
from tests.tools import require_tool
from wheelgate import __version__
from wheelgate.cli.main import main
from wheelgate.core.copied_workflows import check_copy
from wheelgate.core.families import parse_families
from wheelgate.core.workflows import Deployment, compare, compare_families, triggers

EXAMPLES = REPO_ROOT / "examples" / "github"
ACTIONLINT_CONFIG = EXAMPLES / "actionlint.yaml"
WORKFLOWS = sorted(EXAMPLES.glob("*.yml"))
#: The release examples: the test jobs install with pip, or with uv.
RELEASE_EXAMPLES = ("release-nightly.yml", "release-nightly-uv.yml")
#: The one families file both are copied with (as .github/wheelgate-families.json).
FAMILIES = EXAMPLES / "wheelgate-families.json"
ACTIONS = REPO_ROOT / "actions"
ACTION_FILES = sorted(ACTIONS.glob("*/action.yml"))
#: How the examples name WheelGate's own actions: the adopter puts the WheelGate repository
#: and the commit of the release its stack was deployed from in place of the two
#: placeholders, keeping the release's tag in the comment (README there).
WHEELGATE_USES = re.compile(r"<owner>/wheelgate/actions/(?P<name>[\w-]+)@<commit>")
#: The comment every WheelGate action carries: this release's tag, which Dependabot reads.
RELEASE_TAG = f"v{__version__}"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
CONFIGURE_AWS = "aws-actions/configure-aws-credentials"
PRIVILEGED_ROLE_VARS = (
    "WHEELGATE_BUILD_ROLE_ARN",
    "WHEELGATE_REPORTER_ROLE_ARN",
    "WHEELGATE_DEPS_ROLE_ARN",
)
# Names that mean a long-lived access key, in any casing or separator.
LONG_LIVED_KEY = re.compile(
    r"secrets\.AWS|aws[-_]access[-_]key[-_]id|aws[-_]secret[-_]access[-_]key|AKIA[0-9A-Z]{16}",
    re.IGNORECASE,
)
SHELLCHECK_INSTALL = "apt-get install shellcheck; .ci/run installs it"
PINNED_USES = re.compile(r"^\s*(?:-\s*)?uses:\s*[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*\s*$")


def actionlint() -> str:
    """The actionlint binary installed with requirements-dev.txt (or on PATH)."""
    beside_python = Path(sys.executable).parent / "actionlint"
    found = str(beside_python) if beside_python.is_file() else shutil.which("actionlint")
    if found is None:
        pytest.fail("actionlint is missing: install requirements-dev.txt (make venv)")
    return found


def run_actionlint(*paths: Path, shellcheck: bool = False) -> subprocess.CompletedProcess[str]:
    # Without shellcheck the result does not depend on what else the machine has installed.
    options = [] if shellcheck else ["-shellcheck="]
    return subprocess.run(
        [actionlint(), "-no-color", "-pyflakes=", *options, "-config-file", str(ACTIONLINT_CONFIG)]
        + [str(p) for p in paths],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def load(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text())
    assert isinstance(document, dict), f"{path.name} is not a mapping"
    return document


def strings(node: Any) -> Iterator[str]:
    """Every key and scalar in a parsed YAML document, as text."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield str(key)
            yield from strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from strings(item)
    elif node is not None:
        yield str(node)


def long_lived_key_problems(document: dict[str, Any]) -> list[str]:
    return sorted({s for s in strings(document) if LONG_LIVED_KEY.search(s)})


def role_problems(document: dict[str, Any]) -> list[str]:
    """Jobs that assume a role without `id-token: write`, or name a role other than by a
    repository variable."""
    problems = []
    for job_id, job in document.get("jobs", {}).items():
        # Job-level permissions replace the workflow's; without them the workflow's apply.
        permissions = job.get("permissions", document.get("permissions", {}))
        for step in job.get("steps", []):
            if not str(step.get("uses", "")).startswith(f"{CONFIGURE_AWS}@"):
                continue
            if not isinstance(permissions, dict) or permissions.get("id-token") != "write":
                problems.append(f"{job_id}: assumes a role without id-token: write")
            role = str(step.get("with", {}).get("role-to-assume", ""))
            if not re.fullmatch(r"\$\{\{ vars\.WHEELGATE_[A-Z]+_ROLE_ARN \}\}", role):
                problems.append(f"{job_id}: role-to-assume {role!r} is not a repository variable")
    return problems


def roles(job: dict[str, Any]) -> list[str]:
    """The roles a job's steps assume, in order."""
    return [
        s["with"]["role-to-assume"]
        for s in job["steps"]
        if str(s.get("uses", "")).startswith(CONFIGURE_AWS)
    ]


def wheelgate_action(line: str) -> str | None:
    """The name of the WheelGate action a ``uses:`` line names, if it names an existing one
    and carries this release's tag in its comment."""
    found = re.fullmatch(r"\s*(?:-\s*)?uses:\s*(\S+) # (\S+)\s*", line)
    named = WHEELGATE_USES.fullmatch(found.group(1)) if found else None
    tagged = found is not None and found.group(2) == RELEASE_TAG
    if named and tagged and (ACTIONS / named["name"] / "action.yml").is_file():
        return named["name"]
    return None


#: A run's staging index URL spelled out from the run id (GitHub's own .../actions/runs/ aside).
HAND_BUILT_RUN_URL = re.compile(r"(?<!actions/)runs/(?:\$GITHUB_RUN_ID|\$\{\{\s*github\.run_id)")

#: A call of a workflow of the same repository runs it at the caller's commit: pinned as it is.
LOCAL_USES = re.compile(r"^\s*(?:-\s*)?uses:\s*\./\.github/workflows/[\w.-]+\.ya?ml\s*$")


def unpinned_actions(text: str) -> list[str]:
    return [
        line.strip()
        for line in text.splitlines()
        if re.match(r"^\s*(?:-\s*)?uses:", line)
        and not PINNED_USES.match(line)
        and wheelgate_action(line) is None
        and not LOCAL_USES.match(line)
    ]


def with_local_actions(text: str) -> str:
    """The workflow with WheelGate's actions named by their path in this repository."""
    return WHEELGATE_USES.sub(lambda m: f"./actions/{m['name']}", text)


def repository_with(tmp_path: Path, workflows: dict[str, str]) -> Path:
    """A repository laid out as GitHub reads it: the workflows, this repository's actions."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    shutil.copytree(ACTIONS, tmp_path / "actions")
    for name, text in workflows.items():
        (tmp_path / ".github" / "workflows" / name).write_text(text)
    return tmp_path


def action_problems(action: dict[str, Any]) -> list[str]:
    """What breaks the actions' rules: composite, a shell on every run step, no expression in
    a script (inputs reach it through env), every input declared and used, every output read
    from a step that exists and writes it."""
    problems = []
    runs = action.get("runs", {})
    if runs.get("using") != "composite":
        problems.append("not a composite action")
    declared = set(action.get("inputs") or {})
    referenced: set[str] = set()
    steps = runs.get("steps", [])
    for index, step in enumerate(steps):
        where = step.get("id", f"step {index}")
        script = step.get("run")
        if script is not None:
            if "shell" not in step:
                problems.append(f"{where}: run step without shell")
            if "${{" in script:
                problems.append(f"{where}: expression inside run (pass it through env)")
        for text in strings({k: v for k, v in step.items() if k != "run"}):
            referenced.update(EXPRESSION.findall(text))
    for spec in (action.get("inputs") or {}).values():
        referenced.update(EXPRESSION.findall(str(spec.get("default", ""))))
    used = {e.removeprefix("inputs.") for e in referenced if e.startswith("inputs.")}
    problems += [f"input {name} is not declared" for name in sorted(used - declared)]
    problems += [f"input {name} is never used" for name in sorted(declared - used)]
    scripts = {step.get("id"): str(step.get("run", "")) for step in steps}
    for name, spec in (action.get("outputs") or {}).items():
        source = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.([\w-]+) \}\}", spec["value"])
        if source is None or source[1] not in scripts:
            problems.append(f"output {name} is not a step's output")
        elif not re.search(rf"(set_output {source[2]} |\b{source[2]}=)", scripts[source[1]]):
            problems.append(f"output {name}: step {source[1]} never writes {source[2]}")
    return problems


# -- actionlint ---------------------------------------------------------------------------


def test_there_are_example_workflows() -> None:
    assert {p.name for p in WORKFLOWS} == {
        "release-nightly.yml",
        "release-nightly-uv.yml",
        "rehearse-release.yml",
        "report.yml",
        "dev.yml",
        "deps.yml",
    }


def test_examples_pass_actionlint() -> None:
    result = run_actionlint(*WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_examples_pass_actionlint_with_the_actions_of_this_repository(tmp_path: Path) -> None:
    # Given the examples in a repository that holds WheelGate's actions at ./actions/
    texts = {p.name: with_local_actions(p.read_text()) for p in WORKFLOWS}
    used = {m for text in texts.values() for m in re.findall(r"uses: \./actions/([\w-]+)", text)}
    assert used == {"setup", "stage", "report", "status"}
    repository = repository_with(tmp_path, texts)
    # When actionlint checks them, it reads each action's inputs and outputs
    result = run_actionlint(*sorted((repository / ".github" / "workflows").iterdir()))
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_checks_the_inputs_and_outputs_of_the_actions(tmp_path: Path) -> None:
    # Given a workflow that misses a required input, passes an unknown one and reads an
    # output that the action does not have
    repository = repository_with(
        tmp_path,
        {
            "bad.yml": "on: push\n"
            "jobs:\n"
            "  stage:\n"
            "    runs-on: ubuntu-24.04\n"
            "    steps:\n"
            "      - uses: ./actions/stage\n"
            "        with:\n"
            "          files: dist/*.whl\n"
            "          run_id: '1'\n"
            "      - id: status\n"
            "        uses: ./actions/status\n"
            '      - run: echo "${{ steps.status.outputs.decision }}"\n'
        },
    )
    # When actionlint checks it
    result = run_actionlint(repository / ".github" / "workflows" / "bad.yml")
    # Then it names all three
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'missing input "index" which is required by action "wheelgate stage"' in result.stdout
    assert 'input "run_id" is not defined in action "wheelgate stage"' in result.stdout
    assert 'property "decision" is not defined' in result.stdout


def test_every_example_action_of_wheelgate_exists() -> None:
    assert {a.parent.name for a in ACTION_FILES} == {"setup", "stage", "report", "pins", "status"}
    for path in WORKFLOWS:
        for named in WHEELGATE_USES.finditer(path.read_text()):
            assert (ACTIONS / named["name"] / "action.yml").is_file(), named[0]


@pytest.mark.parametrize("path", ACTION_FILES, ids=lambda p: p.parent.name)
def test_actions_pass_input_output_and_script_checks(path: Path) -> None:
    assert action_problems(load(path)) == []


def test_action_scripts_pass_shellcheck(tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck", shutil.which("shellcheck"), SHELLCHECK_INSTALL)
    # Each run script written where its action is, beside the lib.sh it sources
    shutil.copy2(ACTIONS / "lib.sh", tmp_path / "lib.sh")
    scripts = [tmp_path / "lib.sh"]
    for path in ACTION_FILES:
        (tmp_path / path.parent.name).mkdir()
        for index, step in enumerate(load(path)["runs"]["steps"]):
            script = tmp_path / path.parent.name / f"step{index}.sh"
            script.write_text(f"# shellcheck shell={step['shell']}\n{step['run']}")
            scripts.append(script)
    result = subprocess.run(
        [shellcheck, "--external-sources", "--source-path=SCRIPTDIR", *map(str, scripts)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_example_scripts_pass_shellcheck() -> None:
    # actionlint checks the run: scripts with shellcheck.
    require_tool("shellcheck", shutil.which("shellcheck"), SHELLCHECK_INSTALL)
    result = run_actionlint(*WORKFLOWS, shellcheck=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_reports_a_broken_workflow(tmp_path: Path) -> None:
    # Given a workflow that needs a job that does not exist and reads an undefined output
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\n"
        "jobs:\n"
        "  report:\n"
        "    needs: tests\n"
        "    runs-on: ubuntu-24.04\n"
        "    steps:\n"
        "      - run: echo ${{ needs.build.outputs.version }}\n"
    )
    # When actionlint checks it
    result = run_actionlint(broken)
    # Then it fails, naming both mistakes
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'job "report" needs job "tests" which does not exist' in result.stdout
    assert "[expression]" in result.stdout


# -- structure ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_no_long_lived_keys(path: Path) -> None:
    assert long_lived_key_problems(load(path)) == []
    assert not LONG_LIVED_KEY.search(path.read_text())


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_roles_are_assumed_through_oidc(path: Path) -> None:
    document = load(path)
    assert role_problems(document) == []
    assert document.get("permissions") == {"contents": "read"}, "least privilege by default"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_actions_are_pinned_to_commits(path: Path) -> None:
    assert unpinned_actions(path.read_text()) == []


def test_dev_workflow_uses_only_the_dev_role() -> None:
    text = (EXAMPLES / "dev.yml").read_text()
    for name in PRIVILEGED_ROLE_VARS:
        assert name not in text
    assert "vars.WHEELGATE_DEV_ROLE_ARN" in text
    # The proof step: a write to staging that must be refused.
    assert re.search(r'if aws s3 cp \S+ "s3://\$STAGING_BUCKET/runs/', text)


@pytest.mark.parametrize("release", RELEASE_EXAMPLES)
def test_release_roles_by_job(release: str) -> None:
    jobs = load(EXAMPLES / release)["jobs"]

    assert roles(jobs["build"]) == ["${{ vars.WHEELGATE_BUILD_ROLE_ARN }}"]
    assert roles(jobs["test"]) == [], "tests install from the public staging index"
    assert roles(jobs.get("plan", {"steps": []})) == []
    # The reporter runs in its own reusable workflow, whose job_workflow_ref is report.yml:
    # no job of this file names the reporter role.
    assert "WHEELGATE_REPORTER_ROLE_ARN" not in (EXAMPLES / release).read_text()
    assert jobs["report"]["uses"] == "./.github/workflows/report.yml"
    assert jobs["report"]["if"] == "${{ always() }}"
    assert jobs["report"]["needs"] == ["build", "test"]
    assert jobs["report"]["permissions"]["id-token"] == "write"


def test_reporter_workflow_is_called_only_and_holds_the_reporter_role_alone() -> None:
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]["wheelgate"]
    document = load(EXAMPLES / "report.yml")
    triggers = document.get("on", document.get(True))
    assert isinstance(triggers, dict)
    assert set(triggers) == {"workflow_call"}, "no run of its own: only release runs call it"
    assert context["reporter_workflow"] == ".github/workflows/report.yml"
    assert context["reporter_workflow"] not in context["release_workflows"]
    assert [roles(job) for job in document["jobs"].values()] == [
        ["${{ vars.WHEELGATE_REPORTER_ROLE_ARN }}"]
    ]
    text = (EXAMPLES / "report.yml").read_text()
    assert "WHEELGATE_BUILD_ROLE_ARN" not in text


def test_deps_workflow_checks_without_credentials_and_syncs_with_the_deps_role() -> None:
    jobs = load(EXAMPLES / "deps.yml")["jobs"]

    assert roles(jobs["check"]) == [], "pull requests validate deps.yml with no AWS access"
    assert jobs["check"]["permissions"] == {"contents": "read"}
    assert roles(jobs["sync"]) == ["${{ vars.WHEELGATE_DEPS_ROLE_ARN }}"]
    runs = [str(s.get("run", "")) for s in jobs["sync"]["steps"]]
    upload = next(i for i, r in enumerate(runs) if "--step upload" in r)
    report = next(i for i, r in enumerate(runs) if "--step report" in r)
    uses = [str(s.get("uses", "")) for s in jobs["sync"]["steps"]]
    (deps,) = (i for i, u in enumerate(uses) if u.startswith(CONFIGURE_AWS))
    assert deps < upload < report
    # The release roles are not needed: the deps role holds exactly the sync's keys.
    text = (EXAMPLES / "deps.yml").read_text()
    assert "WHEELGATE_BUILD_ROLE_ARN" not in text
    assert "WHEELGATE_REPORTER_ROLE_ARN" not in text


def test_deps_workflow_can_assume_the_deps_role() -> None:
    # The deps trust names the workflow file (deps_workflows) and push events on the default
    # branch, which the workflow pushes from.
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]["wheelgate"]
    document = load(EXAMPLES / "deps.yml")
    triggers = document.get("on", document.get(True))
    assert isinstance(triggers, dict)
    assert set(triggers) == {"pull_request", "push"}, "only push runs sync; PRs only check"
    assert ".github/workflows/deps.yml" in context["deps_workflows"]
    assert triggers["push"]["branches"] == [context["default_branch"]]


@pytest.mark.parametrize("release", RELEASE_EXAMPLES)
def test_release_workflow_can_assume_the_release_roles(release: str) -> None:
    # The build and reporter trust names the workflow file and the events (cdk.json); a trigger
    # outside release_events (workflow_dispatch) would run without the roles.
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]["wheelgate"]
    document = load(EXAMPLES / release)
    # PyYAML reads the bare key `on` as the boolean True.
    triggers = document.get("on", document.get(True))
    assert isinstance(triggers, dict)
    assert set(triggers) <= set(context["release_events"])
    assert "workflow_dispatch" not in triggers
    assert ".github/workflows/release-nightly.yml" in context["release_workflows"]


def test_release_reports_what_each_test_installed() -> None:
    # The promoter releases only files a passed test installed: the build job hands over what
    # the families file says a test installs, the test job installs it from the run's own index
    # with pip's installation report, and the report job passes it on.
    jobs = load(EXAMPLES / "release-nightly.yml")["jobs"]
    build = jobs["build"]["steps"]
    (handover,) = (s for s in build if "staged/$NAME.txt" in str(s.get("run", "")))
    assert handover["env"]["INDEX_URL"] == "${{ steps.stage.outputs.index_url }}"
    assert (
        'wheelgate job handover .github/wheelgate-families.json --family "$NAME" --dist dist \\\n'
        '  --index-url "$INDEX_URL" > "staged/$NAME.txt"'
    ) in handover["run"]
    test_runs = "\n".join(str(s.get("run", "")) for s in jobs["test"]["steps"])
    assert (
        'wheelgate job install --installer pip --python "$PYTHON" --venv "$venv" \\\n'
        '  --handover "staged/$FAMILY.txt" --evidence "results/$FAMILY/$NAME.installed.json"'
    ) in test_runs
    # into a venv that is on PATH for the tests (wheelgate job test refuses any other python)
    assert 'echo "$venv/bin" >> "$GITHUB_PATH"' in test_runs
    assert 'echo "VIRTUAL_ENV=$venv" >> "$GITHUB_ENV"' in test_runs
    assert test_runs.index("job install") < test_runs.index("job test")
    upload = next(s for s in jobs["test"]["steps"] if "results-" in str(s.get("with", {})))
    assert upload["with"]["path"] == "results/"
    # The reporter (report.yml, called by the release workflow) collects each test's evidence
    assert jobs["report"]["uses"] == "./.github/workflows/report.yml"
    steps = load(EXAMPLES / "report.yml")["jobs"]["report"]["steps"]
    (collect,) = (s for s in steps if "job collect" in str(s.get("run", "")))
    assert collect["run"] == (
        'wheelgate job collect --test-result "$TEST_JOB_RESULT" --run-url "$RUN_URL"'
    )
    [report] = [s for s in steps if "/actions/report@" in str(s.get("uses", ""))]
    assert report["with"] == {"test-files": "tests.txt", "installed-files": "installed.txt"}
    # and the status step waits for the decision about that manifest
    [status] = [s for s in steps if "/actions/status@" in str(s.get("uses", ""))]
    assert status["with"] == {"manifest-sha256": "${{ steps.report.outputs.manifest_sha256 }}"}
    # the setup action (wheelgate on PATH) runs before the role is assumed
    uses = [str(s.get("uses", "")) for s in steps]
    setup = next(i for i, u in enumerate(uses) if "/actions/setup@" in u)
    assert setup < next(i for i, u in enumerate(uses) if u.startswith(CONFIGURE_AWS))


def test_uv_release_installs_uv_by_hash_and_runs_the_tests_in_its_venv() -> None:
    steps = load(EXAMPLES / "release-nightly-uv.yml")["jobs"]["test"]["steps"]
    runs = [str(s.get("run", "")) for s in steps]
    # uv comes from wheelgate-uv.txt with pip's --require-hashes, a hash for each wheel
    (uv,) = (i for i, r in enumerate(runs) if "--require-hashes" in r)
    assert "-r .github/wheelgate-uv.txt" in runs[uv]
    pinned = (EXAMPLES / "wheelgate-uv.txt").read_text()
    assert re.search(r"^uv==\d+\.\d+\.\d+ \\$", pinned, re.MULTILINE)
    assert len(re.findall(r"--hash=sha256:[0-9a-f]{64}\b", pinned)) == 2
    # what the build handed over, installed with uv into a venv wheelgate job install records
    (install,) = (i for i, r in enumerate(runs) if "job install" in r)
    assert '--installer uv --python "$PYTHON" --venv "$venv"' in runs[install]
    assert '--evidence "results/$FAMILY/$NAME.installed.json"' in runs[install]
    # and that venv is on PATH for the tests
    assert 'echo "$venv/bin" >> "$GITHUB_PATH"' in runs[install]
    (tests,) = (i for i, r in enumerate(runs) if "matrix.tests" in str(steps[i].get("env")))
    assert runs[tests].startswith("wheelgate job test ")
    assert uv < install < tests
    # The setup action (wheelgate on PATH) comes after uv, so it installs with it
    setup = next(i for i, s in enumerate(steps) if "/actions/setup@" in str(s.get("uses", "")))
    assert uv < setup < install


def test_the_rehearsal_takes_no_role_and_runs_the_release_steps_with_wheelgate_rehearse() -> None:
    text = (EXAMPLES / "rehearse-release.yml").read_text()
    document = load(EXAMPLES / "rehearse-release.yml")
    # Manual, with no job that may request an OIDC token or assume a role, and no setting of
    # the deployed stack (its buckets, URLs): only the embedded stack's
    assert set(triggers(document)) == {"workflow_dispatch"}
    for job in document["jobs"].values():
        assert job.get("permissions", document["permissions"]) == {"contents": "read"}
        assert roles(job) == []
    assert "vars." not in text
    # and the command a team runs on its own machine, which runs the release's own steps
    # (wheelgate job ...), from the families file, for the family and installer asked for
    installer = triggers(document)["workflow_dispatch"]["inputs"]["installer"]
    assert (installer["type"], installer["options"]) == ("choice", ["uv", "pip"])
    rehearsal = document["jobs"]["rehearse"]["steps"]
    (rehearse,) = (s for s in rehearsal if "rehearse" in str(s.get("run", "")))
    assert (
        '"$RUNNER_TEMP/wheelgate-local/bin/wheelgate" rehearse \\\n'
        '  --families .github/wheelgate-families.json --family "$FAMILY" \\\n'
        '  --installer "$INSTALLER" --dist dist --python "$PYTHON_VERSION"'
    ) in rehearse["run"]
    assert rehearse["env"]["INSTALLER"] == "${{ inputs.installer }}"
    # uv installed as the uv example installs it, on uv's route alone
    (ours,) = (s for s in rehearsal if s.get("name") == "Install uv, hash-pinned")
    (theirs,) = (
        s
        for s in load(EXAMPLES / "release-nightly-uv.yml")["jobs"]["test"]["steps"]
        if s.get("name") == "Install uv, hash-pinned"
    )
    assert ours["run"] == theirs["run"]
    assert ours["if"] == "${{ inputs.installer == 'uv' }}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_no_workflow_builds_a_staging_url_by_hand(path: Path) -> None:
    # The run's index URL comes from the stage action (index_url); a workflow that spelled
    # out the key layout (runs/<run id>/<dir>/) would break when it changes. GitHub's own
    # run URLs (.../actions/runs/<run id>) are not staging's.
    text = path.read_text()
    assert not HAND_BUILT_RUN_URL.search(text)
    for line in text.splitlines():
        if "vars.WHEELGATE_STAGING_URL" in line:
            assert line.strip() == "WHEELGATE_STAGING_BASE_URL: ${{ vars.WHEELGATE_STAGING_URL }}"


def test_the_hand_built_url_check_can_fail() -> None:
    assert HAND_BUILT_RUN_URL.search('--index-url "${STAGING_URL%/}/runs/$GITHUB_RUN_ID/$INDEX/"')
    assert HAND_BUILT_RUN_URL.search("url: ${{ vars.X }}runs/${{ github.run_id }}/v2/")
    assert not HAND_BUILT_RUN_URL.search(
        "${{ github.repository }}/actions/runs/${{ github.run_id }}"
    )


def settings() -> Deployment:
    """This repository's deployment settings (cdk.json), as check-workflows reads them."""
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]["wheelgate"]
    return Deployment.from_context(context)


@pytest.mark.parametrize("release", RELEASE_EXAMPLES)
def test_release_examples_agree_with_the_settings(release: str) -> None:
    # Given one release example copied as the release workflow cdk.json names, beside
    # report.yml and deps.yml, and the families file it reads its matrices from
    workflows = {
        ".github/workflows/release-nightly.yml": load(EXAMPLES / release),
        ".github/workflows/report.yml": load(EXAMPLES / "report.yml"),
        ".github/workflows/deps.yml": load(EXAMPLES / "deps.yml"),
    }
    families = parse_families(json.loads(FAMILIES.read_text()))
    # Then check-workflows' comparison finds every index directory built and tested, every
    # required test run (the families'), the triggers trusted
    assert compare(workflows, settings(), families) == []
    assert compare_families(families, settings(), FAMILIES.name) == []
    # and, once a copy fills the placeholders, no line of any example is a copy's mistake:
    # every action pinned by commit, every project named one the families file declares
    texts = {path.name: fill_placeholders(path.read_text()) for path in WORKFLOWS}
    assert check_copy(texts, families, FAMILIES.name) == []


@pytest.mark.parametrize("release", RELEASE_EXAMPLES)
def test_a_release_example_names_no_family_runner_or_test_of_its_own(release: str) -> None:
    # Each is copied unchanged: its matrices are the plan job's, read from the families file,
    # so no index directory, family, runner or test name is written in the workflow
    document = load(EXAMPLES / release)
    for job in ("build", "test"):
        include = document["jobs"][job]["strategy"]["matrix"]["include"]
        assert include == f"${{{{ fromJSON(needs.plan.outputs.{job}) }}}}"
    (read,) = (s for s in document["jobs"]["plan"]["steps"] if s.get("id") == "families")
    assert read["run"].startswith("wheelgate families .github/wheelgate-families.json ")
    families = parse_families(json.loads(FAMILIES.read_text()))
    words = set(re.findall(r"[\w./-]+", (EXAMPLES / release).read_text()))
    written = {
        *families.commands,
        *(value for f in families.families for value in (f.index, f.name, f.runner)),
    }
    assert written & words == set()


def test_both_release_examples_differ_only_in_the_test_jobs_installer() -> None:
    pip, uv = (load(EXAMPLES / release)["jobs"] for release in RELEASE_EXAMPLES)
    # The plan, build and report jobs are one; the test job's setting and its test step too
    for job in ("plan", "build", "report"):
        assert pip[job] == uv[job], job
    assert {k: v for k, v in pip["test"].items() if k != "steps"} == {
        k: v for k, v in uv["test"].items() if k != "steps"
    }
    # and every step but uv's own install, the install's name, comment and --installer
    uv_steps = [s for s in uv["test"]["steps"] if s.get("name") != "Install uv, hash-pinned"]
    assert len(uv_steps) == len(pip["test"]["steps"])
    for ours, theirs in zip(pip["test"]["steps"], uv_steps, strict=True):
        if "job install" in str(ours.get("run")):
            assert ours["run"].replace("--installer pip", "--installer uv") == theirs["run"]
            assert ours["env"] == theirs["env"]
        else:
            assert ours == theirs
    # and pip's route never runs uv
    assert not re.search(r"\buv\b", (EXAMPLES / "release-nightly.yml").read_text())


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_no_example_workflow_names_a_project(path: Path) -> None:
    # The same for every project: the projects released and installed are the families file's
    families = parse_families(json.loads(FAMILIES.read_text()))
    words = {w.lower() for w in re.findall(r"[A-Za-z0-9_.-]+", path.read_text())}
    assert {p.lower() for p in (*families.projects, *families.install)} & words == set()


def test_both_release_examples_are_copied_with_the_one_families_file() -> None:
    # Each test name and command is written once, in the one file a team copies, whichever
    # route it picks
    assert sorted(EXAMPLES.glob("*famil*")) == [FAMILIES]
    for release in RELEASE_EXAMPLES:
        header = (EXAMPLES / release).read_text().split("\nname:")[0]
        assert set(re.findall(r"wheelgate-families[\w-]*\.json", header)) == {FAMILIES.name}
    # A test installs its tools with `python -m pip`, in either route's venv: pip's route has
    # no uv, and uv's seeds its venv with pip (checked above), so no test names uv
    tests = json.loads(FAMILIES.read_text())["tests"]
    assert any("python -m pip install" in run for run in tests.values())
    assert not any(re.search(r"\buv\b", run) for run in tests.values())


def test_the_families_file_names_the_runners_actionlint_knows() -> None:
    labels = set(yaml.safe_load(ACTIONLINT_CONFIG.read_text())["self-hosted-runner"]["labels"])
    families = parse_families(json.loads(FAMILIES.read_text()))
    assert {f.runner for f in families.families} <= labels


# -- the structural checks can fail -------------------------------------------------------


def test_structural_checks_catch_bad_workflows() -> None:
    # Given a workflow with a long-lived key and a role assumed without id-token: write
    bad = yaml.safe_load(
        """
        permissions: {contents: read}
        jobs:
          upload:
            steps:
              - uses: aws-actions/configure-aws-credentials@v6
                with:
                  aws-access-key-id: ${{ secrets.AWS_ACCESS_KEY_ID }}
                  role-to-assume: arn:aws:iam::111122223333:role/build
        """
    )
    # Then every check reports it
    assert long_lived_key_problems(bad) == [
        "${{ secrets.AWS_ACCESS_KEY_ID }}",
        "aws-access-key-id",
    ]
    assert role_problems(bad) == [
        "upload: assumes a role without id-token: write",
        "upload: role-to-assume 'arn:aws:iam::111122223333:role/build' is not a repository "
        "variable",
    ]
    assert unpinned_actions("      - uses: aws-actions/configure-aws-credentials@v6\n") == [
        "- uses: aws-actions/configure-aws-credentials@v6"
    ]
    assert unpinned_actions(
        f"  - uses: <owner>/wheelgate/actions/stage@main # {RELEASE_TAG}\n"
        f"  - uses: <owner>/wheelgate/actions/deploy@<commit> # {RELEASE_TAG}\n"
        "  - uses: <owner>/wheelgate/actions/stage@<commit>\n"
        "  - uses: <owner>/wheelgate/actions/stage@<commit> # v0.0.1\n"
        f"  - uses: <owner>/wheelgate/actions/stage@<commit> # {RELEASE_TAG}\n"
    ) == [
        f"- uses: <owner>/wheelgate/actions/stage@main # {RELEASE_TAG}",
        f"- uses: <owner>/wheelgate/actions/deploy@<commit> # {RELEASE_TAG}",
        "- uses: <owner>/wheelgate/actions/stage@<commit>",
        "- uses: <owner>/wheelgate/actions/stage@<commit> # v0.0.1",
    ]
    # A reusable workflow of another repository (or branch) is not a local call
    assert unpinned_actions("    uses: ROCm/TheRock/.github/workflows/report.yml@main\n") == [
        "uses: ROCm/TheRock/.github/workflows/report.yml@main"
    ]


def test_action_checks_catch_bad_actions() -> None:
    # Given an action that interpolates an input into its script, has a run step without a
    # shell, reads an undeclared input, declares one it never uses, and an output that no
    # step writes
    bad = yaml.safe_load(
        """
        inputs:
          index: {required: true}
          unused: {required: false}
        outputs:
          summary: {value: "${{ steps.stage.outputs.summary }}"}
          state: {value: "${{ steps.nowhere.outputs.state }}"}
        runs:
          using: composite
          steps:
            - id: stage
              shell: bash
              env:
                RUN_ID: ${{ inputs.run-id }}
              run: wheelgate stage --index "${{ inputs.index }}"
            - run: echo done
        """
    )
    # Then the checks report each of them
    assert action_problems(bad) == [
        "stage: expression inside run (pass it through env)",
        "step 1: run step without shell",
        "input run-id is not declared",
        "input index is never used",
        "input unused is never used",
        "output summary: step stage never writes summary",
        "output state is not a step's output",
    ]


def test_the_report_job_collects_a_test_job_per_python_and_names_a_family_left_untested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two staged families: one tested by a job per Python (results/<family>/*.txt, each
    # with its evidence), one whose test job left nothing
    (tmp_path / "staged").mkdir()
    (tmp_path / "staged" / "gfx94X.txt").write_text("v2/gfx94X-dcgpu\ntorch==2.9.0\nhttps://s/\n")
    (tmp_path / "staged" / "gfx120X.txt").write_text("v2/gfx120X-all\ntorch==2.9.0\nhttps://s/\n")
    results = tmp_path / "results" / "gfx94X"
    results.mkdir(parents=True)
    for python in ("3.11", "3.12"):
        (results / f"gfx94X-py{python}.txt").write_text(
            f"v2/gfx94X-dcgpu:smoke-py{python}=passed@https://github.com/r\n"
        )
        (results / f"gfx94X-py{python}.installed.json").write_text("{}")
    steps = load(EXAMPLES / "report.yml")["jobs"]["report"]["steps"]
    (collect,) = (s for s in steps if s.get("name", "").startswith("Collect the test results"))
    assert collect["env"]["TEST_JOB_RESULT"] == "${{ inputs.test-result }}"
    # When the report job's collection runs, as its step runs it
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(
        collect["run"]
        .replace("$TEST_JOB_RESULT", "failure")
        .replace("$RUN_URL", "https://github.com/x")
    )
    assert argv[0] == "wheelgate"
    assert main(argv[1:]) == 0
    # Then each Python's tests are reported with their own evidence, and the untested family
    # is named as failed
    assert sorted((tmp_path / "tests.txt").read_text().splitlines()) == [
        "v2/gfx120X-all:results=failed@https://github.com/x",
        "v2/gfx94X-dcgpu:smoke-py3.11=passed@https://github.com/r",
        "v2/gfx94X-dcgpu:smoke-py3.12=passed@https://github.com/r",
    ]
    assert (tmp_path / "installed.txt").read_text().splitlines() == [
        "v2/gfx94X-dcgpu:smoke-py3.11=results/gfx94X/gfx94X-py3.11.installed.json",
        "v2/gfx94X-dcgpu:smoke-py3.12=results/gfx94X/gfx94X-py3.12.installed.json",
    ]
