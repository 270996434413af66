"""An installed distribution is a wheel's content when every file of the wheel's RECORD is in
the environment with those bytes, and the installer added only what installers add."""

from __future__ import annotations

import base64
import hashlib

import pytest

from wheelgate.core.wheelrecord import (
    InstalledDistribution,
    RecordError,
    Scheme,
    differences,
    parse_record,
    script_body,
    wheel_content,
)
from wheelgate.staging.environment import entry_point_scripts, installed_script_body

SITE = "lib/python3.11/site-packages"
SCHEME = Scheme(
    purelib=SITE, platlib=SITE, scripts="bin", headers="include/site/python3.11", data=""
)
TOOL = b"#!python\nprint('tool')\n"
FILES = {
    "app/__init__.py": b"X = 1\n",
    "app/_core.so": b"\x7fELF cp312",
    "app-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: app\nVersion: 1.0\n\n",
    "app-1.0.dist-info/WHEEL": (
        b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp312-cp312-linux_x86_64\n"
    ),
    "app-1.0.dist-info/entry_points.txt": b"[console_scripts]\napp-cli = app:main\n",
    "app-1.0.data/scripts/app-tool": TOOL,
    "app-1.0.data/data/share/app/readme.txt": b"hello\n",
    "app-1.0.data/headers/app.h": b"int app;\n",
    "app-1.0.data/purelib/app_extra.py": b"Y = 2\n",
}
#: Where pip and uv put each file in a virtual environment.
INSTALLED_AT = {
    "app/__init__.py": f"{SITE}/app/__init__.py",
    "app/_core.so": f"{SITE}/app/_core.so",
    "app-1.0.dist-info/METADATA": f"{SITE}/app-1.0.dist-info/METADATA",
    "app-1.0.dist-info/WHEEL": f"{SITE}/app-1.0.dist-info/WHEEL",
    "app-1.0.dist-info/entry_points.txt": f"{SITE}/app-1.0.dist-info/entry_points.txt",
    "app-1.0.data/scripts/app-tool": "bin/app-tool",
    "app-1.0.data/data/share/app/readme.txt": "share/app/readme.txt",
    "app-1.0.data/headers/app.h": "include/site/python3.11/app/app.h",
    "app-1.0.data/purelib/app_extra.py": f"{SITE}/app_extra.py",
}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def record_of(files: dict[str, bytes]) -> bytes:
    lines = [
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
        for path, data in files.items()
    ]
    return ("\n".join([*lines, "app-1.0.dist-info/RECORD,,"]) + "\n").encode()


WHEEL = wheel_content(
    "app-1.0-cp312-cp312-linux_x86_64.whl",
    "app-1.0.dist-info",
    record_of(FILES),
    FILES["app-1.0.dist-info/WHEEL"],
)
REWRITTEN_TOOL = b"#!/venv/bin/python\nprint('tool')\n"


def installed(**changes: str | None) -> InstalledDistribution:
    """The distribution as an installer leaves it: the wheel's files (the script's first line
    rewritten), what the installer adds, and ``changes`` (path -> sha256, None: absent)."""
    files: dict[str, str | None] = {
        INSTALLED_AT[path]: sha(data) for path, data in FILES.items() if path in INSTALLED_AT
    }
    files["bin/app-tool"] = sha(REWRITTEN_TOOL)
    files.update(
        {
            f"{SITE}/app-1.0.dist-info/INSTALLER": sha(b"uv"),
            f"{SITE}/app-1.0.dist-info/REQUESTED": sha(b""),
            f"{SITE}/app-1.0.dist-info/RECORD": sha(b"rewritten"),
            f"{SITE}/app-1.0.dist-info/direct_url.json": sha(b"{}"),
            "bin/app-cli": sha(b"#!/venv/bin/python\nfrom app import main\n"),
            f"{SITE}/app/__pycache__/__init__.cpython-311.pyc": sha(b"pyc"),
        }
    )
    for path, value in changes.items():
        key = path.replace("__SITE__", SITE)
        if value == "drop":
            files.pop(key)
        else:
            files[key] = value
    body = installed_script_body(REWRITTEN_TOOL)
    assert body is not None
    return InstalledDistribution(
        name="app",
        version="1.0",
        dist_info=f"{SITE}/app-1.0.dist-info",
        files=files,
        script_bodies={"bin/app-tool": sha(body)},
        entry_points=["app-cli"],
    )


def tool_body(path: str) -> str | None:
    assert path == "app-1.0.data/scripts/app-tool"
    body = script_body(TOOL)
    return None if body is None else sha(body)


def test_an_installed_wheel_is_its_content_with_what_installers_add() -> None:
    assert differences(installed(), WHEEL, SCHEME, tool_body) == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        # Another platform's wheel of the same release: other WHEEL tags, other extension
        (
            {
                "__SITE__/app/_core.so": sha(b"\x7fELF cp311"),
                "__SITE__/app-1.0.dist-info/WHEEL": sha(b"Tag: cp311-cp311-linux_x86_64\n"),
            },
            [
                "app-1.0.dist-info/WHEEL has other bytes",
                "app/_core.so has other bytes",
            ],
        ),
        ({"__SITE__/app/__init__.py": "drop"}, ["app/__init__.py is not installed"]),
        ({"__SITE__/app/__init__.py": None}, ["app/__init__.py is not installed"]),
        (
            {"__SITE__/app/backdoor.py": sha(b"import os")},
            [f"{SITE}/app/backdoor.py is installed but not in the wheel"],
        ),
        (
            {"share/app/readme.txt": sha(b"other\n")},
            ["app-1.0.data/data/share/app/readme.txt has other bytes"],
        ),
        (
            {"bin/app-other-cli": sha(b"#!/venv/bin/python\n")},
            ["bin/app-other-cli is installed but not in the wheel"],
        ),
        (
            {"__SITE__/other/__pycache__/x.cpython-311.pyc": sha(b"pyc")},
            [f"{SITE}/other/__pycache__/x.cpython-311.pyc is installed but not in the wheel"],
        ),
    ],
)
def test_anything_else_is_a_difference(changes: dict[str, str | None], expected: list[str]) -> None:
    assert differences(installed(**changes), WHEEL, SCHEME, tool_body) == expected


def test_a_script_is_compared_past_the_interpreter_line_installers_rewrite() -> None:
    evil = b"#!/venv/bin/python\nprint('evil')\n"
    body = installed_script_body(evil)
    assert body is not None
    distribution = installed(**{"bin/app-tool": sha(evil)}).model_copy(
        update={"script_bodies": {"bin/app-tool": sha(body)}}
    )
    assert differences(distribution, WHEEL, SCHEME, tool_body) == [
        "app-1.0.data/scripts/app-tool has other bytes"
    ]


def test_a_wheel_record_that_lies_does_not_match_the_bytes_installed() -> None:
    # Given a wheel whose RECORD claims the bytes of a benign build for app/__init__.py, and
    # the environment holding the wheel's real bytes (hashed on disk, never read from the
    # installed RECORD, which installers copy from the wheel)
    lying = wheel_content(
        WHEEL.filename,
        WHEEL.dist_info,
        record_of({**FILES, "app/__init__.py": b"BENIGN = True\n"}),
        FILES["app-1.0.dist-info/WHEEL"],
    )
    assert differences(installed(), lying, SCHEME, tool_body) == ["app/__init__.py has other bytes"]


def test_the_wheel_root_goes_to_platlib_or_purelib_as_its_wheel_file_says() -> None:
    # Given an environment whose platlib is not its purelib, where the files are in purelib
    scheme = SCHEME.model_copy(update={"platlib": "lib64/python3.11/site-packages"})
    # Then a Root-Is-Purelib: false wheel is not what it holds, and a true one is
    assert "app/__init__.py is not installed" in differences(installed(), WHEEL, scheme, tool_body)
    purelib = wheel_content(
        WHEEL.filename,
        WHEEL.dist_info,
        record_of(FILES),
        b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: cp312-cp312-linux_x86_64\n",
    )
    assert purelib.root_is_purelib
    assert differences(installed(), purelib, scheme, tool_body) == []


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (b"a.py,md5=abc,1\n", "hash 'md5' is not sha256"),
        (b"a.py,sha256=abc,1\n", "is not a SHA-256"),
        (b"a.py,1\n", "RECORD line 1 is not path,hash,size"),
        (b"\xff\n", "RECORD is not UTF-8"),
    ],
)
def test_a_record_that_cannot_be_compared_is_refused(record: bytes, expected: str) -> None:
    with pytest.raises(RecordError, match=expected):
        parse_record(record, "x.whl")


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "app-1.0.data/bin/x"])
def test_a_wheel_path_no_installer_could_place_is_refused(path: str) -> None:
    wheel = wheel_content(WHEEL.filename, WHEEL.dist_info, record_of({path: b"x"}), b"")
    with pytest.raises(RecordError):
        differences(installed(), wheel, SCHEME, tool_body)


def test_interpreter_lines_installers_write_are_told_from_the_script() -> None:
    assert installed_script_body(b"#!/venv/bin/python\nbody\n") == b"body\n"
    assert (
        installed_script_body(b"#!/bin/sh\n'''exec' '/a b/python' \"$0\" \"$@\"\n' '''\nbody\n")
        == b"body\n"
    )
    assert installed_script_body(b"no interpreter line\n") is None
    assert script_body(b"#!python\nbody\n") == b"body\n"
    assert script_body(b"#!/bin/sh\necho\n") is None


def test_entry_point_scripts_are_the_console_and_gui_scripts() -> None:
    text = "[console_scripts]\nApp-CLI = app:main\n[gui_scripts]\napp-gui=app:gui\n[other]\nx=y\n"
    assert entry_point_scripts(text) == ["App-CLI", "app-gui"]
    assert entry_point_scripts("not ini") == []
