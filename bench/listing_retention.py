"""What listing retention saves a client: a two-year nightly directory with and without it.

Generates one index directory holding 730 nightly versions of ``torch`` x 40 wheels each (one
a night for two years) plus its dependencies (a few releases each, over the same two years),
renders it twice with WheelGate's own code (:func:`wheelgate.index.retention.retain` and the
page renderers): every file listed, and ``--keep-versions`` K. Each wheel's PEP 658 ``.metadata``
file exists, so clients download metadata only; the wheels themselves do not (a client that
asked for one would show up in the bytes column as a 404).

A local HTTP server serves both directories, choosing pages by ``Accept`` as the CDN does
(:func:`wheelgate.local.cdn.choose_page`), and counts the body bytes it sends. Then, side by
side, ``--repeat`` times each: ``pip install --dry-run torch`` (the dev environment's pip,
upgraded, installing into a fresh venv as bench/client_bytes.py does) and ``uv pip compile``
of ``torch``, both hermetic (no configuration files, no cache). The table shows median times.

    .venv/bin/python bench/listing_retention.py [--keep-versions 30] [--repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from wheelgate.core.layout import PAGES, href
from wheelgate.core.setting_values import RetentionRule
from wheelgate.index.pages import (
    HTML_CONTENT_TYPE,
    JSON_CONTENT_TYPE,
    IndexEntry,
    ProjectPage,
    render_project_html,
    render_project_json,
    render_root_html,
    render_root_json,
    upload_time,
)
from wheelgate.index.retention import retain
from wheelgate.local.cdn import Redirect, choose_page
from wheelgate.staging.hermetic import hermetic_env

NOW = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)
NIGHTS = 730
#: 5 CPython ABIs x 8 platforms: 40 wheels a night, as a ROCm torch nightly has.
PYTHONS = ["cp39", "cp310", "cp311", "cp312", "cp313"]
PLATFORMS = [
    "manylinux_2_28_x86_64",
    "manylinux_2_28_aarch64",
    "manylinux_2_17_x86_64.manylinux2014_x86_64",
    "manylinux_2_17_aarch64.manylinux2014_aarch64",
    "musllinux_1_2_x86_64",
    "musllinux_1_2_aarch64",
    "win_amd64",
    "macosx_11_0_arm64",
]
#: torch's dependencies (name, releases over the two years, their version pattern, what each
#: requires): every release satisfies what torch and the others ask for.
DEPENDENCIES: list[tuple[str, int, str, list[str]]] = [
    ("filelock", 12, "3.{}.0", []),
    ("typing-extensions", 8, "4.{}.0", []),
    ("sympy", 6, "1.{}.0", ["mpmath<1.4,>=1.1.0"]),
    ("mpmath", 3, "1.3.{}", []),
    ("networkx", 6, "3.{}.0", []),
    ("jinja2", 5, "3.{}.0", ["markupsafe>=2.0"]),
    ("markupsafe", 5, "3.{}.0", []),
    ("fsspec", 20, "2026.{}.0", []),
]
TORCH_REQUIRES = [
    "filelock",
    "typing-extensions>=4.10.0",
    "sympy>=1.13.3",
    "networkx>=2.5.1",
    "jinja2",
    "fsspec>=0.8.5",
]


def metadata_text(name: str, version: str, requires: list[str]) -> bytes:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += ["Requires-Python: >=3.9", *(f"Requires-Dist: {r}" for r in requires)]
    return ("\n".join(lines) + "\n\n").encode()


class Directory:
    """The generated files: per project, its entries; per file name, its metadata bytes."""

    def __init__(self, index: str) -> None:
        self.index = index
        self.entries: dict[str, list[IndexEntry]] = {}
        self.metadata: dict[str, bytes] = {}

    def add(
        self, project: str, filename: str, version: str, requires: list[str], at: datetime
    ) -> None:
        meta = metadata_text(project, version, requires)
        self.metadata[filename] = meta
        digest = hashlib.sha256(filename.encode()).hexdigest()
        self.entries.setdefault(project, []).append(
            IndexEntry(
                filename=filename,
                url=href(PAGES.project_dir(self.index, project), f"{self.index}/{filename}"),
                sha256=digest,
                size=2_000_000_000 if project == "torch" else 500_000,
                upload_time=upload_time(at),
                requires_python=">=3.9",
                metadata_sha256=hashlib.sha256(meta).hexdigest(),
            )
        )


def generate(index: str) -> Directory:
    directory = Directory(index)
    for night in range(NIGHTS):
        at = NOW - timedelta(days=NIGHTS - 1 - night)
        version = f"2.10.0.dev{at:%Y%m%d}+rocm7.0"
        for python in PYTHONS:
            for platform in PLATFORMS:
                filename = f"torch-{version}-{python}-{python}-{platform}.whl"
                directory.add("torch", filename, version, TORCH_REQUIRES, at)
    for name, releases, pattern, requires in DEPENDENCIES:
        module = name.replace("-", "_")
        for release in range(releases):
            at = NOW - timedelta(days=NIGHTS * (releases - release) // releases)
            # sympy 1.14+ and typing-extensions 4.11+ satisfy torch's lower bounds.
            version = pattern.format(release + 14)
            directory.add(name, f"{module}-{version}-py3-none-any.whl", version, requires, at)
    return directory


def render(directory: Directory, rule: RetentionRule) -> dict[str, bytes]:
    """Every page of ``directory`` under ``rule``, by key."""
    pages: dict[str, bytes] = {}
    for project, entries in directory.entries.items():
        page = ProjectPage(project, retain(entries, rule, now=NOW).listed)
        pages[PAGES.project_page(directory.index, project)] = render_project_html(page).encode()
        pages[PAGES.project_page(directory.index, project, json=True)] = render_project_json(
            page
        ).encode()
    names = sorted(directory.entries)
    pages[PAGES.root_page(directory.index)] = render_root_html(names).encode()
    pages[PAGES.root_page(directory.index, json=True)] = render_root_json(names).encode()
    return pages


class CountingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, pages: dict[str, bytes], metadata: dict[str, bytes]) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.pages = pages
        self.metadata = metadata
        self.sent = 0
        self.missing: list[str] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


class Handler(BaseHTTPRequestHandler):
    server: CountingServer

    def do_GET(self) -> None:
        key = choose_page(self.path, self.headers.get("Accept", ""))
        if isinstance(key, Redirect):
            key.send(self)
            return
        body = self.server.pages.get(key)
        content_type = JSON_CONTENT_TYPE if key.endswith(".json") else HTML_CONTENT_TYPE
        if body is None and key.endswith(".metadata"):
            body = self.server.metadata.get(key.rsplit("/", 1)[-1][: -len(".metadata")])
            content_type = "text/plain"
        if body is None:
            with self.server.lock:
                self.server.missing.append(key)
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        with self.server.lock:
            self.server.sent += len(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def timed(server: CountingServer, command: list[str]) -> tuple[float, int, str]:
    """Run ``command`` hermetically: seconds, bytes the server sent, stdout."""
    server.sent = 0
    start = time.perf_counter()
    result = subprocess.run(
        command, env=hermetic_env(), capture_output=True, text=True, check=False, timeout=900
    )
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{command[0]} failed:\n{result.stdout[-3000:]}\n{result.stderr}")
    return seconds, server.sent, result.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep-versions", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    uv = shutil.which("uv", path=str(Path(sys.executable).parent))
    if uv is None:
        raise SystemExit("uv is not installed next to this Python (requirements-dev.txt)")
    directories = {"every version": "v2/full", f"K={args.keep_versions}": "v2/kept"}
    rules = {"v2/full": RetentionRule(), "v2/kept": RetentionRule(keep_versions=args.keep_versions)}
    pages: dict[str, bytes] = {}
    metadata: dict[str, bytes] = {}
    for index, rule in rules.items():
        directory = generate(index)
        metadata.update(directory.metadata)
        pages.update(render(directory, rule))
    files = len(metadata)
    server = CountingServer(pages, metadata)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        report = Path(tmp) / "report.json"
        requirements = Path(tmp) / "requirements.in"
        requirements.write_text("torch\n")
        clients: dict[str, Callable[[str], list[str]]] = {
            "pip": lambda url: [
                *(sys.executable, "-m", "pip", "--python", python, "install", "--dry-run"),
                *("--no-cache-dir", "--report", str(report), "--index-url", url, "torch"),
            ],
            "uv": lambda url: [
                *(uv, "pip", "compile", "--no-cache", "--python", python, "--index-url", url),
                str(requirements),
            ],
        }
        # Side by side: each repetition runs every client against both directories.
        for _ in range(args.repeat):
            for label, index in directories.items():
                for client, command in clients.items():
                    seconds, sent, out = timed(server, command(f"{server.url}{index}/"))
                    row = results.setdefault(label, {})
                    row.setdefault(f"{client}_s", []).append(seconds)
                    row.setdefault(f"{client}_bytes", []).append(sent)
                    if client == "uv" and "torch==2.10.0.dev20261130+rocm7.0" not in out:
                        raise SystemExit(f"uv resolved something else:\n{out}")
            installs = json.loads(report.read_text())["install"]
            if not any(i["metadata"]["version"] == "2.10.0.dev20261130+rocm7.0" for i in installs):
                raise SystemExit(f"pip resolved something else: {installs}")
    server.shutdown()
    pip_version = subprocess.run(
        [sys.executable, "-m", "pip", "--version"], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    uv_version = subprocess.run([uv, "--version"], capture_output=True, text=True, check=True)
    print(
        f"torch: {NIGHTS} nightly versions x {len(PYTHONS) * len(PLATFORMS)} wheels "
        f"({files:,} files with dependencies); pip {pip_version}, "
        f"{uv_version.stdout.strip()}; medians of {args.repeat}"
    )
    head = (
        "| listing | torch page HTML | torch page JSON | pip --dry-run | pip bytes "
        "| uv pip compile | uv bytes |"
    )
    print(head)
    print("|" + "|".join("-" * (len(c) + 2) for c in head.strip("|").split("|")) + "|")
    for label, index in directories.items():
        med = {k: statistics.median(v) for k, v in results[label].items()}
        html = len(pages[PAGES.project_page(index, "torch")])
        json_bytes = len(pages[PAGES.project_page(index, "torch", json=True)])
        print(
            f"| {label} | {html:,} | {json_bytes:,} "
            f"| {med['pip_s']:.2f} s | {int(med['pip_bytes']):,} "
            f"| {med['uv_s']:.2f} s | {int(med['uv_bytes']):,} |"
        )
    if server.missing:
        print(f"requested but not served: {sorted(set(server.missing))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
