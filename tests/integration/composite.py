"""Run one of the repository's composite actions (``actions/<name>/action.yml``) the way the
GitHub runner does: the inputs, or their defaults, evaluated into each step's ``env``; each
``run`` script with ``bash --noprofile --norc -eo pipefail``; ``GITHUB_ACTION_PATH``,
``GITHUB_OUTPUT``, ``GITHUB_PATH`` and ``RUNNER_TEMP`` set; the action's outputs read back
from what the steps wrote.

Only the expressions the actions use are understood (``inputs.*``, ``github.run_id``,
``github.sha``, ``steps.<id>.outputs.*``); any other is an error, so an action that starts
using more fails here until this runner understands it.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
ACTIONS = REPO / "actions"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
STEP_OUTPUT = re.compile(r"steps\.[\w-]+\.outputs\.[\w-]+")
#: GitHub's command line for `shell: bash`.
BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]


@dataclass(frozen=True)
class ActionResult:
    returncode: int
    outputs: dict[str, str]
    #: Directories the steps added to PATH (GITHUB_PATH).
    path: list[str]
    stdout: str
    stderr: str


def read_github_file(text: str) -> dict[str, str]:
    """``GITHUB_OUTPUT`` syntax: ``name=value`` lines and ``name<<DELIMITER`` blocks."""
    found: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        name, sep, delimiter = line.partition("<<")
        if sep and "=" not in name:
            end = lines.index(delimiter, i + 1)
            found[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
            continue
        if line:
            name, _, value = line.partition("=")
            found[name] = value
        i += 1
    return found


def evaluate(text: str, context: Mapping[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        expression = match.group(1)
        if expression in context:
            return context[expression]
        if STEP_OUTPUT.fullmatch(expression):
            return ""  # as on GitHub: an output a step did not write is empty
        raise ValueError(f"expression not understood by this runner: {expression}")

    return EXPRESSION.sub(value, text)


def run_action(
    name: str,
    inputs: Mapping[str, str],
    *,
    workspace: Path,
    env: Mapping[str, str],
    run_id: str = "1",
    sha: str = "0" * 40,
    action_root: Path = ACTIONS,
    runner_temp: Path | None = None,
    timeout: float = 300,
) -> ActionResult:
    """Run ``<action_root>/<name>`` with ``inputs`` in ``workspace``; ``env`` is the job's
    environment and ``runner_temp`` its ``RUNNER_TEMP`` (default ``workspace/_runner_temp``:
    one per workspace, as one per job on a runner)."""
    action: dict[str, Any] = yaml.safe_load((action_root / name / "action.yml").read_text())
    declared: dict[str, dict[str, Any]] = action.get("inputs") or {}
    unknown = set(inputs) - set(declared)
    if unknown:
        raise ValueError(f"inputs not declared by {name}: {sorted(unknown)}")
    context = {"github.run_id": run_id, "github.sha": sha}
    for key, spec in declared.items():
        if key in inputs:
            context[f"inputs.{key}"] = inputs[key]
        elif spec.get("required"):
            raise ValueError(f"{name} requires the input {key}")
        else:
            context[f"inputs.{key}"] = evaluate(str(spec.get("default", "")), context)
    runner_temp = runner_temp or workspace / "_runner_temp"
    runner_temp.mkdir(exist_ok=True)
    returncode, stdout, stderr, path = 0, "", "", []
    for index, step in enumerate(action["runs"]["steps"]):
        step_id = step.get("id", f"step{index}")
        output, github_path = runner_temp / f"{step_id}.output", runner_temp / f"{step_id}.path"
        script = runner_temp / f"{name}-{step_id}.sh"
        script.write_text(step["run"])
        output.write_text("")
        github_path.write_text("")
        step_env = {k: evaluate(str(v), context) for k, v in (step.get("env") or {}).items()}
        completed = subprocess.run(
            [*BASH, str(script)],
            cwd=workspace,
            env={
                **env,
                **step_env,
                "GITHUB_ACTION_PATH": str(action_root / name),
                "GITHUB_OUTPUT": str(output),
                "GITHUB_PATH": str(github_path),
                "GITHUB_WORKSPACE": str(workspace),
                "RUNNER_TEMP": str(runner_temp),
            },
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        stdout, stderr = stdout + completed.stdout, stderr + completed.stderr
        for key, value in read_github_file(output.read_text()).items():
            context[f"steps.{step_id}.outputs.{key}"] = value
        path += github_path.read_text().split()
        returncode = completed.returncode
        if returncode:
            break
    outputs = {
        key: evaluate(str(spec["value"]), context)
        for key, spec in (action.get("outputs") or {}).items()
    }
    return ActionResult(returncode, outputs, path, stdout, stderr)
