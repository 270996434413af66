"""``wheelgate check-workflows`` and ``wheelgate families``: a repository laid out as the
examples say (``examples/github/`` copied under ``.github/``, with either release example and
the one families file) agrees with this repository's ``cdk.json``, as does one whose matrices are
written by hand; each kind of mismatch is named; bad input exits 2."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.example_copy import COMMIT, fill_placeholders
from wheelgate.cli.main import main
from wheelgate.core.families import FamiliesError, parse_families
from wheelgate.core.workflows import MismatchKind

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "github"
FAMILIES = json.loads((EXAMPLES / "wheelgate-families.json").read_text())
#: The release examples, both copied with the one families file.
RELEASE_EXAMPLES = ("release-nightly.yml", "release-nightly-uv.yml")


def repository(tmp_path: Path, release: str = "release-nightly-uv.yml") -> Path:
    """A user's repository: a release example as release-nightly.yml, report.yml, deps.yml,
    the families file, and the deployment's cdk.json beside them, the placeholders filled."""
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for source, name in [(release, "release-nightly.yml")] + [
        (n, n) for n in ("report.yml", "deps.yml", "dev.yml")
    ]:
        (workflows / name).write_text(fill_placeholders((EXAMPLES / source).read_text()))
    families = tmp_path / ".github" / "wheelgate-families.json"
    shutil.copy2(EXAMPLES / "wheelgate-families.json", families)
    shutil.copy2(REPO / "cdk.json", tmp_path / "cdk.json")
    return tmp_path


def write_matrices_by_hand(document: dict[Any, Any]) -> None:
    """The release example as a team may keep it instead: the families' matrices written out
    in the workflow, and a test step per test whose id is the test's name."""
    families = parse_families(FAMILIES)
    jobs = document["jobs"]
    jobs["build"]["strategy"]["matrix"]["include"] = [
        {"index": b["index"], "name": b["name"]} for b in families.build_matrix()
    ]
    jobs["test"]["strategy"]["matrix"]["include"] = [
        {k: t[k] for k in ("index", "family", "name", "runner", "python")}
        for t in families.test_matrix()
    ]
    steps = [s for s in jobs["test"]["steps"] if s.get("name") != "Run the tests"]
    jobs["test"]["steps"] = steps + [
        {"name": name, "id": name, "continue-on-error": True, "run": run}
        for name, run in families.commands.items()
    ]


def hand_written(tmp_path: Path) -> Path:
    """A repository whose release workflow has its matrices written by hand, and no families
    file: check-workflows reads the test names from the step ids."""
    repo = repository(tmp_path, "release-nightly.yml")
    (repo / ".github" / "wheelgate-families.json").unlink()
    edit(repo / ".github" / "workflows" / "release-nightly.yml", write_matrices_by_hand)
    return repo


def edit(path: Path, change: Callable[[dict[Any, Any]], None]) -> None:
    document = yaml.safe_load(path.read_text())
    change(document)
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def check(repo: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.chdir(repo)
    return main(["check-workflows", "--cdk-json", "cdk.json", *args])


@pytest.mark.parametrize("release", [*RELEASE_EXAMPLES, "hand-written"])
def test_a_repository_laid_out_as_the_examples_agrees_with_its_settings(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    release: str,
) -> None:
    repo = hand_written(tmp_path) if release == "hand-written" else repository(tmp_path, release)
    assert check(repo, monkeypatch) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert "4 workflow(s) agree with the settings (4 index directories)" in err


def test_settings_given_as_options_replace_cdk_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the settings on the command line, with a fifth index directory nothing builds
    repo = repository(tmp_path)
    (repo / "cdk.json").unlink()
    monkeypatch.chdir(repo)
    indexes = [f["index"] for f in FAMILIES["families"]] + ["v2/gfx1151"]
    code = main(
        [
            "check-workflows",
            *(f"--index-dir={i}" for i in indexes),
            "--release-workflow=.github/workflows/release-nightly.yml",
            "--reporter-workflow=.github/workflows/report.yml",
            "--release-event=schedule",
            "--required-test=v2/gfx94X-dcgpu=smoke",
        ]
    )
    # Then that directory is the one mismatch
    assert code == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert "index-not-built: v2/gfx1151 is in index_dirs but no release workflow builds it" in out


def drop_test_step(document: dict[Any, Any]) -> None:
    steps = document["jobs"]["test"]["steps"]
    document["jobs"]["test"]["steps"] = [s for s in steps if s.get("id") != "pytorch-unit"]


def add_dispatch(document: dict[Any, Any]) -> None:
    document[True]["workflow_dispatch"] = None


def drop_family_from_test(document: dict[Any, Any]) -> None:
    include = document["jobs"]["test"]["strategy"]["matrix"]["include"]
    document["jobs"]["test"]["strategy"]["matrix"]["include"] = include[:-1]


def rename_index(document: dict[Any, Any]) -> None:
    document["jobs"]["build"]["strategy"]["matrix"]["include"][0]["index"] = "v2/gfx94x-dcgpu"


def drop_report_call(document: dict[Any, Any]) -> None:
    del document["jobs"]["report"]


#: One edit of a release workflow with hand-written matrices per kind, and the line it must
#: cause.
RELEASE_EDITS = {
    MismatchKind.REQUIRED_TEST_NOT_RUN: (
        drop_test_step,
        "v2/gfx94X-dcgpu requires pytorch-unit (required_tests) but its test jobs run only",
    ),
    MismatchKind.UNTRUSTED_TRIGGER: (
        add_dispatch,
        "runs on workflow_dispatch, which is not in release_events (schedule, push)",
    ),
    MismatchKind.INDEX_NOT_TESTED: (
        drop_family_from_test,
        "v2/gfx120X-all is built but no test job tests it",
    ),
    MismatchKind.INDEX_NOT_ALLOWED: (
        rename_index,
        "builds v2/gfx94x-dcgpu, which is not in index_dirs",
    ),
    MismatchKind.REPORTER_NOT_CALLED: (
        drop_report_call,
        "has no job with uses: ./.github/workflows/report.yml",
    ),
}


@pytest.mark.parametrize("kind", list(RELEASE_EDITS), ids=str)
def test_each_mismatch_of_a_release_workflow_is_named(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: MismatchKind,
) -> None:
    # Given a release workflow with hand-written matrices and one thing changed
    repo = hand_written(tmp_path)
    change, sentence = RELEASE_EDITS[kind]
    edit(repo / ".github" / "workflows" / "release-nightly.yml", change)
    # When the workflows are checked, then the mismatch is named with its kind, exit 1
    assert check(repo, monkeypatch) == 1
    out = capsys.readouterr().out
    assert f": {kind.value}: " in out
    assert sentence in out


def test_mismatches_of_the_reporter_and_deps_workflows_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repository(tmp_path)
    workflows = repo / ".github" / "workflows"
    edit(workflows / "report.yml", lambda d: d[True].update({"push": None}))
    edit(workflows / "deps.yml", lambda d: d[True]["push"].update({"branches": ["dev"]}))
    assert check(repo, monkeypatch) == 1
    out = capsys.readouterr().out
    assert ".github/workflows/report.yml: reporter-not-call-only: " in out
    assert ".github/workflows/deps.yml: deps-trigger: " in out


def test_a_missing_release_or_reporter_workflow_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repository(tmp_path)
    (repo / ".github" / "workflows" / "release-nightly.yml").rename(
        repo / ".github" / "workflows" / "nightly.yml"
    )
    (repo / ".github" / "workflows" / "report.yml").unlink()
    assert check(repo, monkeypatch) == 1
    out = capsys.readouterr().out
    assert (
        "release-workflow-missing: the release workflow .github/workflows/release-nightly.yml"
        in out
    )
    assert "reporter-workflow-missing: " in out
    # with no release workflow, nothing is built
    assert out.count("index-not-built") == 4


@pytest.mark.parametrize("release", RELEASE_EXAMPLES)
def test_a_family_file_short_of_the_required_tests_is_named(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    release: str,
) -> None:
    # Given either release example, the families file's first family dropping a required test
    repo = repository(tmp_path, release)
    families = json.loads((repo / ".github" / "wheelgate-families.json").read_text())
    families["families"][0]["tests"] = ["smoke"]
    (repo / ".github" / "wheelgate-families.json").write_text(json.dumps(families))
    assert check(repo, monkeypatch) == 1
    out = capsys.readouterr().out
    assert "family gfx94X-dcgpu (v2/gfx94X-dcgpu) reports smoke but required_tests lists " in out
    assert f": {MismatchKind.REQUIRED_TEST_NOT_RUN.value}: v2/gfx94X-dcgpu requires" in out


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda r: (r / "cdk.json").write_text("{}"), "has no context.wheelgate object"),
        (
            lambda r: (r / ".github/workflows/dev.yml").write_text("jobs: [\n"),
            "dev.yml is not YAML",
        ),
        (
            lambda r: (r / ".github/wheelgate-families.json").write_text('{"families": []}'),
            "wheelgate-families.json: the families file: 'build' is missing",
        ),
        (
            lambda r: (r / ".github/wheelgate-families.json").unlink(),
            "the matrix of job build is computed (${{ fromJSON(needs.plan.outputs.build) }}): "
            "give the families file it is read from (--families)",
        ),
    ],
    ids=["no-settings", "bad-yaml", "bad-families", "computed-matrix-without-families"],
)
def test_bad_input_exits_2_naming_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setup: Callable[[Path], object],
    message: str,
) -> None:
    repo = repository(tmp_path)
    setup(repo)
    assert check(repo, monkeypatch) == 2
    err = capsys.readouterr().err
    assert err.startswith("wheelgate check-workflows: error: ")
    assert message in err


def test_no_settings_at_all_exits_2_saying_what_to_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(repository(tmp_path))
    assert main(["check-workflows", "--index-dir", "v2/x"]) == 2
    assert (
        "missing --release-workflow, --reporter-workflow, --release-event: give --cdk-json"
        in capsys.readouterr().err
    )


def test_families_prints_the_matrices_for_github_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(repository(tmp_path))
    monkeypatch.delenv("WHEELGATE_ALLOWED_INDEXES", raising=False)
    assert main(["families"]) == 0
    lines = dict(line.split("=", 1) for line in capsys.readouterr().out.splitlines())
    assert set(lines) == {"build", "test", "required"}
    build, test = json.loads(lines["build"]), json.loads(lines["test"])
    assert [b["index"] for b in build] == [t["index"] for t in test]
    assert test[0]["runner"] == "linux-mi300-1gpu"
    assert [t["name"] for t in test[0]["tests"]] == ["smoke", "pytorch-unit"]
    required = json.loads(lines["required"])
    context = json.loads((REPO / "cdk.json").read_text())["context"]["wheelgate"]
    assert required == context["required_tests"]


def test_families_refuses_an_index_the_stack_does_not_allow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(repository(tmp_path))
    monkeypatch.setenv("WHEELGATE_ALLOWED_INDEXES", '["v2/gfx94X-dcgpu"]')
    assert main(["families"]) == 2
    assert "index-not-allowed" in capsys.readouterr().err
    # One family alone, for a rehearsal, is allowed
    assert main(["families", "--family", "gfx94X-dcgpu"]) == 0
    assert main(["families", "--family", "gfx9000"]) == 2


def test_a_family_with_several_pythons_runs_a_test_job_per_python_and_names_its_tests() -> None:
    document = json.loads(json.dumps(FAMILIES))
    document["families"][0]["pythons"] = ["3.11", "3.12"]
    families = parse_families(document)
    jobs = [t for t in families.test_matrix() if t["family"] == "gfx94X-dcgpu"]
    assert [(j["name"], j["python"]) for j in jobs] == [
        ("gfx94X-dcgpu-py3.11", "3.11"),
        ("gfx94X-dcgpu-py3.12", "3.12"),
    ]
    assert [t["name"] for t in jobs[0]["tests"]] == ["smoke-py3.11", "pytorch-unit-py3.11"]
    assert families.required_tests()["v2/gfx94X-dcgpu"] == (
        "smoke-py3.11",
        "pytorch-unit-py3.11",
        "smoke-py3.12",
        "pytorch-unit-py3.12",
    )
    # one build job still builds both Pythons' wheels
    assert families.build_matrix()[0]["pythons"] == "3.11 3.12"


def test_every_kind_of_mismatch_is_a_row_of_the_examples_readme() -> None:
    text = (EXAMPLES / "README.md").read_text()
    section = text[text.index("## `wheelgate check-workflows`") :]
    rows = {
        line.split("|")[1].strip(" `") for line in section.splitlines() if line.startswith("| `")
    }
    assert {kind.value for kind in MismatchKind} <= rows


def placeholder_lines(text: str) -> list[tuple[int, str]]:
    """Each placeholder of a workflow's text outside comments: (line, placeholder)."""
    return [
        (number, placeholder)
        for number, line in enumerate(text.splitlines(), start=1)
        if not line.lstrip().startswith("#")
        for placeholder in ("<owner>", "<commit>")
        if placeholder in line
    ]


def test_the_examples_as_shipped_exit_1_naming_each_placeholder_and_filled_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given every example workflow as shipped, the families file and this cdk.json
    monkeypatch.chdir(REPO)
    shipped = sorted(EXAMPLES.glob("*.yml"))
    families = str(EXAMPLES / "wheelgate-families.json")
    args = ["check-workflows", "--cdk-json", "cdk.json", "--families", families]
    # When they are checked, then each placeholder is named with its file and line, exit 1
    assert main([*args, *map(str, shipped)]) == 1
    out = capsys.readouterr().out
    expected = {
        f"{path}:{number}: placeholder: {placeholder} is left in "
        for path in shipped
        for number, placeholder in placeholder_lines(path.read_text())
    }
    assert len(expected) >= 20
    named = {line[: line.index(" is left in ") + len(" is left in ")] for line in out.splitlines()}
    assert named == expected
    assert "replace it with the owner of the repository that holds WheelGate" in out
    assert "replace it with the 40-hex commit of the WheelGate release" in out
    # And once a team fills them, as a copy does, the same files agree: exit 0
    filled = tmp_path / "filled"
    filled.mkdir()
    for path in shipped:
        (filled / path.name).write_text(fill_placeholders(path.read_text()))
    assert main([*args, *map(str, sorted(filled.iterdir()))]) == 0
    assert capsys.readouterr().out == ""


def replace_line(path: Path, old: str, new: str) -> int:
    """Replace the first line holding ``old`` with the lines of ``new``, indented as it was;
    the number of the last line put in."""
    lines = path.read_text().splitlines()
    number = next(i for i, line in enumerate(lines) if old in line)
    indent = lines[number][: len(lines[number]) - len(lines[number].lstrip())]
    added = [indent + line for line in new.splitlines()]
    lines[number : number + 1] = added
    path.write_text("\n".join(lines) + "\n")
    return number + len(added)


#: A line put in place of dev.yml's checkout step, and the finding it must cause on its last
#: line: any placeholder in uses: or ref:, any remote action not pinned by a 40-hex commit.
LINE_FINDINGS = {
    "ref": (
        f"- uses: actions/checkout@{COMMIT}\n  with:\n    ref: <branch>",
        "placeholder: <branch> is left in `ref: <branch>`: replace it with the value <branch> "
        "stands for",
    ),
    "uses": (
        f"- uses: <org>/tool@{COMMIT}",
        f"placeholder: <org> is left in `uses: <org>/tool@{COMMIT}`",
    ),
    "action-name": (
        f"- uses: example-org/wheelgate/actions/<name>@{COMMIT}",
        "placeholder: <name> is left in",
    ),
    "tag": (
        "- uses: actions/checkout@v4",
        "action-not-pinned: actions/checkout is used at v4: pin it by commit",
    ),
    "branch": (
        "- uses: actions/checkout@main",
        "action-not-pinned: actions/checkout is used at main",
    ),
    "short-hash": (
        "- uses: actions/checkout@3d3c42e",
        "action-not-pinned: actions/checkout is used at 3d3c42e",
    ),
    "no-ref": (
        "- uses: actions/checkout",
        "action-not-pinned: actions/checkout is used with no ref",
    ),
    "workflow": (
        "- uses: org/repo/.github/workflows/x.yml@v1",
        "action-not-pinned: org/repo/.github/workflows/x.yml is used at v1",
    ),
}


@pytest.mark.parametrize("case", list(LINE_FINDINGS))
def test_a_placeholder_or_an_action_not_pinned_is_named_with_its_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: str,
) -> None:
    # Given a copy whose dev.yml has one line changed
    repo = repository(tmp_path)
    new, named = LINE_FINDINGS[case]
    number = replace_line(repo / ".github" / "workflows" / "dev.yml", "actions/checkout@", new)
    # When it is checked, then that line alone is named, with its file and number, exit 1
    assert check(repo, monkeypatch) == 1
    out = capsys.readouterr().out
    assert out.startswith(f".github/workflows/dev.yml:{number}: {named}")
    assert out.count("\n") == 1


@pytest.mark.parametrize("uses", ["./actions/build", "docker://alpine:3.20"])
def test_local_and_docker_actions_need_no_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uses: str
) -> None:
    repo = repository(tmp_path)
    replace_line(repo / ".github/workflows/dev.yml", "actions/checkout@", f"- uses: {uses}")
    assert check(repo, monkeypatch) == 0


def test_a_project_the_families_file_does_not_declare_is_named_on_each_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the families file of another project, beside a release workflow whose build step
    # was edited to look for torch's wheel and whose install pins torch, as an older copy did
    repo = repository(tmp_path, "release-nightly.yml")
    families_path = repo / ".github" / "wheelgate-families.json"
    families = json.loads(families_path.read_text())
    families["projects"] = families["install"] = ["jax"]
    families_path.write_text(json.dumps(families))
    workflow = repo / ".github/workflows/release-nightly.yml"
    first = replace_line(
        workflow, "bash -eo pipefail", 'run: ls dist/torch-*.whl && bash -eo pipefail -c "$BUILD"'
    )
    second = replace_line(
        workflow, "wheelgate job install", 'pip install "torch==$version" && wheelgate job install'
    )
    # When the workflows are checked
    assert check(repo, monkeypatch) == 1
    out = capsys.readouterr().out.splitlines()
    # Then each line naming torch is named, and nothing else
    assert [int(line.split(":")[1]) for line in out] == [first, second]
    assert all(": project-not-declared: names the project torch (`" in line for line in out)
    assert 'does not declare: add it to its "projects"' in out[0]


def test_a_families_file_with_a_bad_project_name_is_refused() -> None:
    document = {**FAMILIES, "projects": ["torch", "not a name"]}
    with pytest.raises(FamiliesError) as raised:
        parse_families(document)
    assert "projects: 'not a name' is not a project name" in str(raised.value)


def test_the_families_listing_of_the_examples_readme_is_the_families_file() -> None:
    # The README shows the file a team copies: the JSON block under "The families file" is
    # that file, byte for byte, so a change to one without the other fails here
    text = (EXAMPLES / "README.md").read_text()
    section = text[text.index("### The families file") :]
    listing = section[section.index("```json\n") + len("```json\n") :]
    listing = listing[: listing.index("```\n")]
    assert listing == (EXAMPLES / "wheelgate-families.json").read_text()
