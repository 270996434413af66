"""A decoy package index that catches pip or uv installing from anywhere but the index a test
names.

This machine's pip configuration adds an extra index and find-links, and CI machines set
``PIP_*`` and ``UV_*`` variables: an install that honours them proves nothing about WheelGate's
index, and the test projects' unique names would hide it (nothing else offers them). So the
integration tests plant this decoy everywhere a client that is not run hermetically looks
(:meth:`Decoy.planted`): pip's configuration files (``PIP_CONFIG_FILE``, the user file under
``XDG_CONFIG_HOME``, the global one under ``XDG_CONFIG_DIRS``, the site file of each test venv),
uv's (``UV_CONFIG_FILE`` and the same two directories), and ``PIP_EXTRA_INDEX_URL``,
``PIP_FIND_LINKS``, ``UV_EXTRA_INDEX_URL``, ``UV_INDEX`` and ``UV_FIND_LINKS``.

The decoy serves over HTTP on 127.0.0.1:

- ``/simple/<project>/``: for any project, a PEP 503 page offering version ``999.0``, higher
  than anything the tests build, so a resolver that reads it prefers it;
- ``/links/``: a find-links page offering the same for every project the tests build
  (:func:`built_projects`) or have asked the decoy for;
- ``/files/<wheel>``: real wheels whose module raises ``ImportError`` when imported;
- ``/nowhere/``: an index with no projects at all (404), not counted, for the decoy's own
  tests.

Every other request is counted: one is a failure of the test that made it
(``tests/integration/conftest.py``).
"""

from __future__ import annotations

import ast
import hashlib
import html
import threading
from collections.abc import Iterable, Mapping, MutableMapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name, parse_wheel_filename

from wheelgate.local.sample_wheels import build_wheel

#: Higher than any version the tests build.
DECOY_VERSION = "999.0"
#: Paths the decoy answers without counting (an index with nothing, for its own tests).
NOWHERE = "/nowhere/"
#: The calls that build the test projects' wheels, and where their project name is.
_WHEEL_BUILDERS = {"build_wheel": 1, "wheel": 1}


def built_projects(tests: Path) -> set[str]:
    """The project names the tests under ``tests`` build wheels of (a literal name passed to
    ``build_wheel`` or a module's ``wheel`` helper)."""
    found: set[str] = set()
    for path in sorted(tests.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            position = _WHEEL_BUILDERS.get(node.func.id)
            if position is None or len(node.args) <= position:
                continue
            name = node.args[position]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                found.add(str(canonicalize_name(name.value)))
    return found


class _Handler(BaseHTTPRequestHandler):
    server: Decoy

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _answer(self, *, body: bool) -> None:
        path = self.path.split("?", 1)[0]
        if path.startswith(NOWHERE):
            self.send_error(404)
            return
        self.server.count(f"{self.command} {self.path}")
        content_type, content = "text/html", None
        section, _, rest = path.lstrip("/").partition("/")
        if section == "simple" and rest.strip("/"):
            content = self.server.project_page(rest.strip("/").split("/")[0])
        elif section == "simple":
            content = self.server.root_page()
        elif section == "links":
            content = self.server.links_page()
        elif section == "files":
            content_type, content = "application/octet-stream", self.server.wheel(rest)
        if content is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        if body:
            self.wfile.write(content)


class Decoy(ThreadingHTTPServer):
    """The decoy index; :attr:`requests` lists every counted request, in order."""

    daemon_threads = True

    def __init__(self, directory: Path, projects: Iterable[str] = ()) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.directory = directory
        self.requests: list[str] = []
        #: What planting replaced in the environment (None: it was unset).
        self.replaced: dict[str, str | None] = {}
        self._projects = set(projects)
        self._wheels: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    @property
    def index_url(self) -> str:
        return f"{self.url}/simple/"

    @property
    def links_url(self) -> str:
        return f"{self.url}/links/"

    @property
    def nowhere_url(self) -> str:
        return f"{self.url}{NOWHERE}"

    def start(self) -> Decoy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def count(self, request: str) -> None:
        with self._lock:
            self.requests.append(request)

    # -- what it serves ------------------------------------------------------------------------

    def _file_name(self, project: str) -> str:
        module = str(canonicalize_name(project)).replace("-", "_")
        return f"{module}-{DECOY_VERSION}-py3-none-any.whl"

    def wheel(self, filename: str) -> bytes | None:
        """A decoy wheel: a real one, whose module refuses to be imported."""
        try:
            project, version, _, _ = parse_wheel_filename(filename)
        except ValueError:
            return None
        if str(version) != DECOY_VERSION or filename != self._file_name(project):
            return None
        with self._lock:
            if filename not in self._wheels:
                built = build_wheel(
                    self.directory / "wheels",
                    str(project),
                    DECOY_VERSION,
                    module_source=(
                        "raise ImportError('decoy: installed from an index the test did not "
                        "name (pip or uv was not run hermetically)')\n"
                    ),
                )
                self._wheels[filename] = built.read_bytes()
            return self._wheels[filename]

    def _link(self, project: str, prefix: str) -> str:
        filename = self._file_name(project)
        data = self.wheel(filename)
        assert data is not None
        digest = hashlib.sha256(data).hexdigest()
        return f'<a href="{prefix}files/{filename}#sha256={digest}">{html.escape(filename)}</a>'

    def project_page(self, project: str) -> bytes:
        name = str(canonicalize_name(project))
        with self._lock:
            self._projects.add(name)
        return _page(self._link(name, "../../"))

    def root_page(self) -> bytes:
        with self._lock:
            names = sorted(self._projects)
        return _page(*(f'<a href="{n}/">{n}</a>' for n in names))

    def links_page(self) -> bytes:
        with self._lock:
            names = sorted(self._projects)
        return _page(*(self._link(n, "../") for n in names))

    # -- where it is planted -------------------------------------------------------------------

    def pip_config(self) -> str:
        return f"[global]\nextra-index-url = {self.index_url}\nfind-links = {self.links_url}\n"

    def uv_config(self) -> str:
        # Top level for uv's project commands, [pip] for `uv pip`.
        settings = f'extra-index-url = ["{self.index_url}"]\nfind-links = ["{self.links_url}"]\n'
        return settings + "\n[pip]\n" + settings

    def plant_site_config(self, prefix: Path) -> None:
        """pip's site configuration file of the environment at ``prefix`` (a venv)."""
        (prefix / "pip.conf").write_text(self.pip_config())

    def routes(self) -> dict[str, dict[str, str]]:
        """Each way a client that is not run hermetically finds the decoy, by name: the
        variables that open it (writing the configuration files they point at)."""
        config = self.directory / "config"
        home, system = config / "home", config / "system"
        files = {
            config / "env" / "pip.conf": self.pip_config(),
            home / "pip" / "pip.conf": self.pip_config(),
            system / "pip" / "pip.conf": self.pip_config(),
            config / "env" / "uv.toml": self.uv_config(),
            home / "uv" / "uv.toml": self.uv_config(),
            system / "uv" / "uv.toml": self.uv_config(),
        }
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return {
            "pip config file": {"PIP_CONFIG_FILE": str(config / "env" / "pip.conf")},
            "pip user config": {"XDG_CONFIG_HOME": str(home)},
            "pip global config": {"XDG_CONFIG_DIRS": str(system)},
            "PIP_EXTRA_INDEX_URL": {"PIP_EXTRA_INDEX_URL": self.index_url},
            "PIP_FIND_LINKS": {"PIP_FIND_LINKS": self.links_url},
            "uv config file": {"UV_CONFIG_FILE": str(config / "env" / "uv.toml")},
            "uv user config": {"XDG_CONFIG_HOME": str(home)},
            "uv system config": {"XDG_CONFIG_DIRS": str(system)},
            "UV_EXTRA_INDEX_URL": {"UV_EXTRA_INDEX_URL": self.index_url},
            "UV_INDEX": {"UV_INDEX": self.index_url},
            "UV_FIND_LINKS": {"UV_FIND_LINKS": self.links_url},
        }

    def plant(self, environ: MutableMapping[str, str]) -> None:
        """Open every route at once in ``environ`` (this process's environment: every client
        a test starts inherits it), remembering what each variable was."""
        for route in self.routes().values():
            for name, value in route.items():
                self.replaced.setdefault(name, environ.get(name))
                environ[name] = value

    def unplant(self, environ: MutableMapping[str, str]) -> None:
        """Put ``environ`` back as :meth:`plant` found it."""
        environ.update(self.unplanted(environ))
        for name, value in self.replaced.items():
            if value is None:
                environ.pop(name, None)

    def unplanted(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` with the planted variables as they were before (for the tests that install
        from the package registry with the machine's own configuration, as users do)."""
        restored = {k: v for k, v in env.items() if k not in self.replaced}
        restored.update({k: v for k, v in self.replaced.items() if v is not None})
        return restored


def _page(*links: str) -> bytes:
    body = "<br>\n".join(links)
    return f"<!DOCTYPE html>\n<html><body>\n{body}\n</body></html>\n".encode()
