"""Evidence from the environment a test installed into, whatever installed it (``wheelgate
installed`` in the test job, ``wheelgate report --installed`` in the reporter job).

uv has no installation report (``uv pip install --report``) and its JSON output names no file
or hash; a requirements file says only what a test was allowed to install. The environment
itself says what was installed: each distribution's ``.dist-info/RECORD`` names its files.

- :func:`inventory` (in the test job, no credentials): asks the environment's interpreter
  where its scheme puts each part of a wheel, then hashes, on disk, every file each
  distribution's installed RECORD lists (the installed RECORD's own hashes are copied from the
  wheel by the installer, so they are never used), and writes them with each distribution's
  name, version and entry-point scripts: ``wheelgate/environment/v1``.
- :class:`wheelgate.staging.evidence.EvidenceJudge` (in the reporter job) matches each
  installed distribution with the files the run's index offers for its name and version.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import os
import subprocess
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from wheelgate.core.manifest import (
    describe_errors,
)
from wheelgate.core.wheelrecord import (
    InstalledDistribution,
    RecordError,
    Scheme,
    parse_record,
)
from wheelgate.staging.local_artifacts import sha256_file

SCHEMA_ENVIRONMENT_V1 = "wheelgate/environment/v1"
#: A RECORD of 200,000 files is about 30 MB.
MAX_RECORD_BYTES = 64 * 1024 * 1024
#: A script is a few KB; one installers rewrite is read only when its bytes differ.
MAX_SCRIPT_BYTES = 16 * 1024 * 1024
#: Asking the interpreter where its scheme is takes well under a second.
PROBE_TIMEOUT_SECONDS = 60
#: Where the environment's interpreter puts each part of a wheel. It runs in the test's
#: interpreter (any Python 3), isolated (-I) so that no PYTHON* variable changes the answer.
#: Headers: pip and uv both install a wheel's headers under include/site/pythonX.Y/<project>
#: of a virtual environment, and under the interpreter's include/<project> otherwise.
_PROBE = """
import json, os, sys, sysconfig
paths = sysconfig.get_paths()
venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix)
version = "%d.%d" % sys.version_info[:2]
if venv:
    headers = os.path.join(sys.prefix, "include", "site", "python" + version)
else:
    headers = paths["include"]
print(json.dumps({
    "prefix": sys.prefix,
    "python": "%d.%d.%d" % sys.version_info[:3],
    "purelib": paths["purelib"],
    "platlib": paths["platlib"],
    "scripts": paths["scripts"],
    "data": paths["data"],
    "headers": headers,
}))
"""
#: The interpreter lines of a script rewritten to ``/bin/sh`` (a long or spaced interpreter
#: path): ``#!/bin/sh``, ``'''exec' <python> "$0" "$@"``, ``' '''``.
_SH_PREAMBLE = (b"#!/bin/sh\n", b"'''exec' ")


class InstalledEnvironment(BaseModel):
    """``wheelgate/environment/v1``: an environment's scheme and its installed
    distributions, as :func:`inventory` writes it."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["wheelgate/environment/v1"] = Field(alias="schema")
    python: str
    scheme: Scheme
    distributions: list[InstalledDistribution]


def ask_interpreter(python: str, script: str, *args: str, what: str) -> object:
    """Run ``script`` in the interpreter ``python`` (isolated: ``-I``) with ``args`` and return
    the JSON it prints. Raises ``ValueError`` naming ``what`` it was asked when it cannot be
    run, fails or answers something else."""
    try:
        result = subprocess.run(
            [python, "-I", "-c", script, *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=PROBE_TIMEOUT_SECONDS,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ValueError(f"{python} cannot be run: {exc}") from None
    if result.returncode != 0:
        raise ValueError(f"{python} did not say {what}: {result.stderr.strip()[-300:]}")
    try:
        answer: object = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise ValueError(f"{python} did not say {what}") from None
    return answer


def probe(python: str) -> dict[str, str]:
    """Where the interpreter ``python`` installs things (its ``sysconfig`` scheme, absolute).
    Raises ``ValueError`` when it cannot be run or answers something else."""
    answer = ask_interpreter(python, _PROBE, what="where it installs packages")
    if not isinstance(answer, dict):
        raise ValueError(f"{python} did not say where it installs packages")
    return {str(k): str(v) for k, v in answer.items()}


def installed_script_body(content: bytes) -> bytes | None:
    """What follows the interpreter line(s) an installer wrote at the top of a script; ``None``
    when it has none."""
    if content.startswith(_SH_PREAMBLE[0]) and content[len(_SH_PREAMBLE[0]) :].startswith(
        _SH_PREAMBLE[1]
    ):
        lines = content.split(b"\n", 3)
        return lines[3] if len(lines) == 4 else b""
    if content.startswith(b"#!"):
        _, _, rest = content.partition(b"\n")
        return rest
    return None


def entry_point_scripts(text: str) -> list[str]:
    """The script names of ``entry_points.txt``'s ``console_scripts`` and ``gui_scripts``."""
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    return sorted(
        name.strip()
        for section in ("console_scripts", "gui_scripts")
        if parser.has_section(section)
        for name in parser.options(section)
    )


def inventory(python: str) -> dict[str, Any]:
    """The ``wheelgate/environment/v1`` document of the environment of interpreter ``python``:
    its scheme, and each distribution in its purelib and platlib with the SHA-256 of the bytes
    on disk of every file its installed RECORD lists. Raises ``ValueError`` when ``python``
    cannot be asked, or a distribution's METADATA or RECORD cannot be read."""
    scheme = probe(python)
    prefix = os.path.realpath(scheme["prefix"])

    def key(path: str) -> str:
        real = os.path.realpath(path)
        relative = os.path.relpath(real, prefix)
        if relative == os.curdir:
            return ""
        if relative == os.pardir or relative.startswith(os.pardir + os.sep):
            return Path(real).as_posix()
        return Path(relative).as_posix()

    scripts = key(scheme["scripts"])
    distributions = []
    seen: set[str] = set()
    for lib in (scheme["purelib"], scheme["platlib"]):
        real_lib = os.path.realpath(lib)
        if real_lib in seen or not os.path.isdir(real_lib):
            continue
        seen.add(real_lib)
        for dist_info in sorted(Path(real_lib).glob("*.dist-info")):
            if (dist_info / "RECORD").is_file():
                distributions.append(_distribution(dist_info, key, scripts))
    document = InstalledEnvironment.model_validate(
        {
            "schema": SCHEMA_ENVIRONMENT_V1,
            "python": scheme["python"],
            "scheme": {k: key(scheme[k]) for k in ("purelib", "platlib", "scripts", "data")}
            | {"headers": key(scheme["headers"])},
            "distributions": distributions,
        }
    )
    return document.model_dump(mode="json", by_alias=True)


def _distribution(dist_info: Path, key: Any, scripts: str) -> dict[str, Any]:
    try:
        headers = BytesHeaderParser().parsebytes((dist_info / "METADATA").read_bytes())
        record = (dist_info / "RECORD").read_bytes()
    except OSError as exc:
        raise ValueError(f"{dist_info} cannot be read: {exc.strerror}") from None
    name, version = headers.get("Name"), headers.get("Version")
    if not name or not version:
        raise ValueError(f"{dist_info}/METADATA has no Name or Version")
    try:
        rows = parse_record(record, str(dist_info))
    except RecordError as exc:
        raise ValueError(str(exc)) from None
    files: dict[str, str | None] = {}
    bodies: dict[str, str] = {}
    for row in rows:
        path = os.path.normpath(os.path.join(dist_info.parent, row.path))
        where = key(path)
        try:
            files[where] = sha256_file(Path(path))
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            files[where] = None
        if files[where] is not None and where.rpartition("/")[0] == scripts:
            with open(path, "rb") as handle:
                body = installed_script_body(handle.read(MAX_SCRIPT_BYTES + 1))
            if body is not None:
                bodies[where] = hashlib.sha256(body).hexdigest()
    entry_points = dist_info / "entry_points.txt"
    return {
        "name": str(name).strip(),
        "version": str(version).strip(),
        "dist_info": key(str(dist_info)),
        "files": files,
        "script_bodies": bodies,
        "entry_points": (
            entry_point_scripts(entry_points.read_text(errors="replace"))
            if entry_points.is_file()
            else []
        ),
    }


def read_environment(document: object, source: str) -> InstalledEnvironment:
    """The environment document ``document`` (read from ``source``); ``ValueError`` naming the
    field it gets wrong."""
    try:
        return InstalledEnvironment.model_validate(document)
    except ValidationError as exc:
        raise ValueError(f"evidence {source}: {describe_errors(exc)}") from None


def is_environment(document: object) -> bool:
    """Whether ``document`` says it is a ``wheelgate/environment/...`` document."""
    return isinstance(document, dict) and str(document.get("schema", "")).startswith(
        "wheelgate/environment/"
    )
