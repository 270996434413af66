"""The status site: what was promoted where, and what was refused.

Its pages live in the staging bucket (so a rejected run writes no byte of nightly) and are
served at the nightly domain's ``/status/``.

Pure functions. The state is one small JSON document (``status/state.json``) that
:func:`apply_record` folds each decision record into; :func:`render_overview` and
:func:`render_directory` turn it into static HTML5 pages (inline CSS, no script, no external
asset) that read well on a phone. Every value that came from a manifest or a record is escaped,
and a test URL becomes a link only when it is ``http`` or ``https``. When the test URLs are
GitHub Actions run URLs, :func:`ci_links` derives links to the CI run and to the commit, and
the run id and the commit are shown as those links.

The state is bounded whatever happens: :data:`MAX_DECISIONS` decisions per directory,
:data:`MAX_REJECTIONS` rejections overall, :data:`MAX_DIRECTORIES` directories, and the first
:data:`MAX_FILES` files and :data:`MAX_TESTS` tests of a directory's latest promoted run, and
:data:`MAX_IMPORTS` imports of :data:`MAX_IMPORT_FILES` files each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC
from html import escape
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from wheelgate.core.layout import (
    HTML_PAGE,
    IMPORT_RUN_PREFIX,
    OVERRIDE_RUN_PREFIX,
    STATUS_PREFIX,
    YANK_RUN_PREFIX,
    href,
)
from wheelgate.core.manifest import is_commit
from wheelgate.core.records import PromotionRecord, SetOutcome, State
from wheelgate.index.pages import parse_upload_time

SCHEMA_STATUS_V1 = "wheelgate/status/v1"
STATE_KEY = f"{STATUS_PREFIX}state.json"
MAX_DECISIONS = 20
MAX_REJECTIONS = 50
#: Rejected manifests may name directories that are not configured; this caps what they add.
MAX_DIRECTORIES = 200
MAX_FILES = 500
MAX_TESTS = 100
#: Longer record messages are cut: they are shown in lists, and the state must stay small.
MAX_MESSAGE = 500

Kind = Literal["run", "yank", "override", "import"]
#: Imports a directory's page lists (newest first), and the files it shows of each: an import
#: may bring thousands, and the state is read and written on every decision.
MAX_IMPORTS = 5
MAX_IMPORT_FILES = 50

#: Hosts whose GitHub Actions run URLs the pages turn into run and commit links.
CI_HOSTS = frozenset({"github.com"})
# GitHub's own limits: owners of at most 39 letters, digits and '-', repositories of at most
# 100 letters, digits and '.', '_', '-'; a run id is a number.
_ACTIONS_RUN_PATH = re.compile(
    r"/(?P<owner>[A-Za-z0-9][A-Za-z0-9-]{0,38})/(?P<repo>[A-Za-z0-9._-]{1,100})"
    r"/actions/runs/(?P<run>[0-9]{1,20})(?:/.*)?"
)


class CiLinks(BaseModel):
    """Where a run came from: its CI run and its commit (see :func:`ci_links`)."""

    model_config = ConfigDict(frozen=True)

    run: str | None = None
    commit: str | None = None


class TestLink(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    result: str
    url: str | None = None


class FileLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    filename: str
    size: int
    sha256: str


class PromotedRun(BaseModel):
    """The run a directory was last promoted from (never a yank or an override)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    commit: str | None = None
    decided_at: str
    file_count: int
    files: list[FileLine] = []
    tests: list[TestLink] = []
    links: CiLinks = CiLinks()


class ImportedFiles(BaseModel):
    """An import into a directory: files released with no test, apart from tested runs."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    source: str
    decided_at: str
    imported: int
    already: int = 0
    refused: int = 0
    files: list[FileLine] = []


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    kind: Kind = "run"
    state: State
    reason: str | None = None
    message: str = ""
    at: str = ""
    commit: str | None = None
    links: CiLinks = CiLinks()


class Rejection(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    kind: Kind = "run"
    index: str | None = None
    reason: str | None = None
    message: str = ""
    at: str = ""
    links: CiLinks = CiLinks()
    #: Nightly keys an earlier attempt copied that stay there, listed on no index page.
    left_in_nightly: list[str] = []


class DirectoryStatus(BaseModel):
    model_config = ConfigDict(frozen=True)

    latest: PromotedRun | None = None
    #: Newest first.
    decisions: list[Decision] = []
    #: Imports into the directory, newest first: never its latest (tested) run.
    imports: list[ImportedFiles] = []


class StatusState(BaseModel):
    """``status/state.json``."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    schema_: Literal["wheelgate/status/v1"] = Field(default="wheelgate/status/v1", alias="schema")
    directories: dict[str, DirectoryStatus] = {}
    #: Newest first.
    rejections: list[Rejection] = []

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=1) + "\n"


def parse_state(raw: bytes | str) -> StatusState:
    """Read ``status/state.json``; raises ``pydantic.ValidationError`` if it is not one.
    Documents written before a field existed read with its default (no links)."""
    return StatusState.model_validate_json(raw)


def _actions_run(url: str | None, hosts: frozenset[str]) -> tuple[str, str, str, str] | None:
    """``(host, owner, repo, run id)`` of a GitHub Actions run URL, else None."""
    if safe_url(url) is None:
        return None
    parts = urlsplit(str(url))
    # The whole netloc must be a host: a user, a password or a port makes it something else.
    host = parts.netloc.lower()
    found = _ACTIONS_RUN_PATH.fullmatch(parts.path)
    if parts.scheme != "https" or host not in hosts or found is None:
        return None
    if not found["repo"].strip("."):
        return None  # "." and ".." are path steps, not repositories
    return host, found["owner"], found["repo"], found["run"]


def ci_links(
    test_urls: Iterable[str | None], commit: str | None, *, hosts: frozenset[str] = CI_HOSTS
) -> CiLinks:
    """Links to a run's CI run and commit, from its test URLs.

    A test URL counts when it is a GitHub Actions run URL: ``https``, a host of ``hosts`` with
    neither credentials nor a port, and the path ``/<owner>/<repo>/actions/runs/<id>[/...]``
    (``.../job/<n>``, ``.../attempts/<n>``). When every URL that counts names the same
    repository, a full commit SHA links to ``https://<host>/<owner>/<repo>/commit/<sha>``; when
    they also name the same run, the run links to ``https://<host>/<owner>/<repo>/actions/runs/
    <id>``. Links are built from the checked parts only (never a query, a fragment or a user);
    anything else gives no link.
    """
    runs = {found for url in test_urls if (found := _actions_run(url, hosts)) is not None}
    repositories = {(host, owner, repo) for host, owner, repo, _ in runs}
    if len(repositories) != 1:
        return CiLinks()
    [(host, owner, repo)] = repositories
    base = f"https://{host}/{owner}/{repo}"
    return CiLinks(
        run=f"{base}/actions/runs/{next(iter(runs))[3]}" if len(runs) == 1 else None,
        commit=f"{base}/commit/{commit}" if commit and is_commit(commit) else None,
    )


# -- folding records into the state --------------------------------------------------------


def run_kind(run_id: str) -> Kind:
    if run_id.startswith(YANK_RUN_PREFIX):
        return "yank"
    if run_id.startswith(OVERRIDE_RUN_PREFIX):
        return "override"
    if run_id.startswith(IMPORT_RUN_PREFIX):
        return "import"
    return "run"


def _cut(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"


def _page_directories(page_keys: Iterable[str]) -> list[str]:
    """Index directories of project page keys (``<index>/<project>/index.*``): where a yank,
    which records no set, took effect."""
    found: list[str] = []
    for key in page_keys:
        parts = key.split("/")
        if len(parts) >= 3:
            index = "/".join(parts[:-2])
            if index not in found:
                found.append(index)
    return found


def _promoted_run(
    record: PromotionRecord, outcome: SetOutcome, at: str, links: CiLinks
) -> PromotedRun:
    files = sorted(outcome.files, key=lambda f: f.filename)
    return PromotedRun(
        run_id=record.run_id,
        commit=record.commit,
        links=links,
        decided_at=at,
        file_count=len(files),
        files=[FileLine(filename=f.filename, size=f.size, sha256=f.sha256) for f in files][
            :MAX_FILES
        ],
        tests=[
            TestLink(name=t.get("name", ""), result=t.get("result", ""), url=t.get("url"))
            for t in outcome.tests[:MAX_TESTS]
        ],
    )


def _imported_files(record: PromotionRecord, outcome: SetOutcome, at: str) -> ImportedFiles:
    new = sorted((f for f in outcome.files if f.action == "imported"), key=lambda f: f.filename)
    return ImportedFiles(
        run_id=record.run_id,
        source=record.imported_from or "",
        decided_at=at,
        imported=len(new),
        already=len(outcome.files) - len(new),
        refused=len(outcome.refused),
        files=[FileLine(filename=f.filename, size=f.size, sha256=f.sha256) for f in new][
            :MAX_IMPORT_FILES
        ],
    )


def apply_record(state: StatusState, record: PromotionRecord) -> StatusState:
    """The state with the latest decision of ``record`` folded in.

    Idempotent: a decision already in the state (same run and time) replaces itself. The
    decision is the record's last history entry; when it is the record's own current decision
    its per-directory outcomes are used, otherwise (a refused replay of a promoted run) it is
    listed as one run-level decision. Only a fresh promotion of a plain run (not a yank, an
    override or an import) can become a directory's latest promoted run, and only if it is not
    older than the one shown; an import's files are listed apart, under the directory's
    imports.
    """
    kind = run_kind(record.run_id)
    if record.history:
        last = record.history[-1]
        at, state_, reason, message = last.at, last.state, last.reason, last.message
    else:
        at, state_ = record.decided_at or "", record.state
        reason, message = record.reason, record.message
    fresh = (record.decided_at or "") == at and record.state is state_
    links = (
        ci_links((t.get("url") for s in record.sets for t in s.tests), record.commit)
        if kind == "run"
        else CiLinks()
    )
    directories = dict(state.directories)
    rejections = list(state.rejections)

    def add_rejection(entry: Rejection) -> None:
        same = (entry.run_id, entry.at, entry.index)
        rejections[:] = [r for r in rejections if (r.run_id, r.at, r.index) != same]
        rejections.append(entry)

    outcomes: list[tuple[str, State, str | None, str, SetOutcome | None]] = []
    if fresh and record.sets:
        outcomes = [(s.index, s.state, s.reason, s.message or message, s) for s in record.sets]
    elif fresh and kind == "yank":
        outcomes = [(i, state_, reason, message, None) for i in _page_directories(record.pages)]
    for index, set_state, set_reason, set_message, outcome in outcomes:
        current = directories.get(index, DirectoryStatus())
        decision = Decision(
            run_id=record.run_id,
            kind=kind,
            state=set_state,
            reason=set_reason,
            message=_cut(set_message),
            at=at,
            commit=record.commit,
            links=links,
        )
        decisions = [d for d in current.decisions if (d.run_id, d.at) != (record.run_id, at)]
        latest = current.latest
        if (
            outcome is not None
            and kind == "run"
            and set_state is State.PROMOTED
            and (latest is None or latest.decided_at <= at)
        ):
            latest = _promoted_run(record, outcome, at, links)
        imports = [i for i in current.imports if (i.run_id, i.decided_at) != (record.run_id, at)]
        if outcome is not None and kind == "import" and set_state is State.PROMOTED:
            imports.append(_imported_files(record, outcome, at))
        directories[index] = DirectoryStatus(
            latest=latest,
            decisions=sorted([decision, *decisions], key=lambda d: d.at, reverse=True)[
                :MAX_DECISIONS
            ],
            imports=sorted(imports, key=lambda i: i.decided_at, reverse=True)[:MAX_IMPORTS],
        )
        if set_state is State.REJECTED:
            add_rejection(
                Rejection(
                    run_id=record.run_id,
                    kind=kind,
                    index=index,
                    reason=set_reason,
                    message=_cut(set_message),
                    at=at,
                    links=links,
                    left_in_nightly=outcome.left_in_nightly[:MAX_FILES] if outcome else [],
                )
            )
    if not outcomes and state_ is State.REJECTED:
        add_rejection(
            Rejection(
                run_id=record.run_id,
                kind=kind,
                reason=reason,
                message=_cut(message),
                at=at,
                links=links,
            )
        )
    return state.model_copy(
        update={
            "directories": _bounded_directories(directories),
            "rejections": sorted(rejections, key=lambda r: r.at, reverse=True)[:MAX_REJECTIONS],
        }
    )


def _bounded_directories(directories: dict[str, DirectoryStatus]) -> dict[str, DirectoryStatus]:
    """At most :data:`MAX_DIRECTORIES`, dropping first those never promoted, then the ones
    whose newest decision is oldest."""
    if len(directories) <= MAX_DIRECTORIES:
        return directories

    def weight(item: tuple[str, DirectoryStatus]) -> tuple[bool, str]:
        status = item[1]
        newest = status.decisions[0].at if status.decisions else ""
        return (status.latest is not None, newest)

    kept = sorted(directories.items(), key=weight, reverse=True)[:MAX_DIRECTORIES]
    return dict(sorted(kept))


# -- rendering -----------------------------------------------------------------------------


def page_key(index: str | None = None) -> str:
    """Key of the overview page (``index`` None) or of a directory's page."""
    return f"{STATUS_PREFIX}{index}/{HTML_PAGE}" if index else f"{STATUS_PREFIX}{HTML_PAGE}"


def _page_dir(index: str | None) -> str:
    return page_key(index).rsplit("/", 1)[0] + "/"


def _href(page_index: str | None, target: str) -> str:
    """Relative, percent-encoded link from a status page to a key of the nightly bucket."""
    link = href(_page_dir(page_index), target.rstrip("/"))
    return link + "/" if target.endswith("/") else link


def safe_url(url: str | None) -> str | None:
    """``url`` if it is an absolute http(s) URL fit for an ``href``, else None."""
    if not url or any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    return url


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def shown_time(at: str) -> tuple[str, str] | None:
    """A record's time ``at`` as people read it (``2026-11-30 04:00 UTC``) and as machines do
    (``2026-11-30T04:00:12Z``); ``None`` when it is not a time."""
    try:
        moment = parse_upload_time(at).astimezone(UTC)
    except ValueError:
        return None
    return moment.strftime("%Y-%m-%d %H:%M UTC"), moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _time(at: str) -> str:
    shown = shown_time(at)
    if shown is None:
        return _e(at or "unknown time")
    return f'<time datetime="{_e(shown[1])}">{shown[0]}</time>'


def _link(url: str | None, content: str) -> str:
    """``content`` (markup) as a link to ``url`` when it is fit for an ``href``, else as is."""
    safe = safe_url(url)
    return f'<a href="{_e(safe)}" rel="nofollow noopener">{content}</a>' if safe else content


def _run_id(run_id: str, links: CiLinks) -> str:
    return _link(links.run, f"<code>{_e(run_id)}</code>")


def _commit(commit: str | None, links: CiLinks) -> str:
    if not commit:
        return "—"
    return _link(links.commit, f'<code title="{_e(commit)}">{_e(commit[:12])}</code>')


def _badge(state: State | str, text: str | None = None) -> str:
    value = State(state).value if isinstance(state, State) else str(state)
    css = value if value in ("promoted", "rejected", "pending", "passed", "failed") else "other"
    return f'<span class="badge {css}">{_e(text or value)}</span>'


def _tests(tests: Sequence[TestLink]) -> str:
    if not tests:
        return "<p>No tests recorded.</p>"
    items = []
    for test in tests:
        unsafe = (
            f' <span class="muted">{_e(test.url)}</span>'
            if test.url and safe_url(test.url) is None
            else ""
        )
        items.append(f"<li>{_badge(test.result)} {_link(test.url, _e(test.name))}{unsafe}</li>")
    return '<ul class="plain">' + "".join(items) + "</ul>"


_CSS = """
:root{color-scheme:light dark;--fg:#1b1f24;--bg:#fff;--muted:#59636e;--line:#d1d9e0;
--card:#f6f8fa;--ok:#1a7f37;--bad:#cf222e;--wait:#9a6700}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#9198a1;
--line:#3d444d;--card:#151b23;--ok:#3fb950;--bad:#f85149;--wait:#d29922}}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:var(--fg);background:var(--bg)}
header,main,footer{max-width:60rem;margin:0 auto;padding:0 1rem}
header{border-bottom:1px solid var(--line);padding-top:.75rem;padding-bottom:.5rem}
h1{font-size:1.4rem;margin:.25rem 0}h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
h3{font-size:1rem;margin:0 0 .5rem;overflow-wrap:anywhere}
a{color:#0969da}@media (prefers-color-scheme:dark){a{color:#4493f8}}
code{font:.9em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;
padding:.75rem 1rem;margin:0 0 .75rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem .75rem;margin:0}
dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere;min-width:0}
ul.plain{list-style:none;padding:0;margin:0}
ul.plain li{padding:.35rem 0;border-top:1px solid var(--line);overflow-wrap:anywhere}
ul.plain li:first-child{border-top:0}
ul.plain.card{padding:.25rem 1rem}
time{white-space:nowrap}
.badge{display:inline-block;font-size:.8rem;font-weight:600;padding:0 .45rem;
border-radius:1rem;border:1px solid currentColor;white-space:nowrap}
.promoted,.passed{color:var(--ok)}.rejected,.failed{color:var(--bad)}
.pending,.other{color:var(--wait)}
.muted,.meta{color:var(--muted);font-size:.9rem}
.message{margin:.2rem 0 0}
footer{color:var(--muted);font-size:.85rem;padding-top:1rem;padding-bottom:2rem}
"""


def _document(title: str, heading: str, nav: str, body: Iterable[str]) -> str:
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="robots" content="noindex">',
            f"<title>{_e(title)}</title>",
            f"<style>{_CSS}</style>",
            "</head>",
            "<body>",
            f"<header><h1>{_e(heading)}</h1>{nav}</header>",
            "<main>",
            *body,
            "</main>",
            "<footer>Written by the WheelGate promoter after each decision; "
            "decision records are in the staging bucket under <code>records/</code>.</footer>",
            "</body>",
            "</html>",
            "",
        ]
    )


def _rejection_item(rejection: Rejection, page_index: str | None) -> str:
    where = (
        f'<a href="{_e(_href(page_index, _page_dir(rejection.index)))}">{_e(rejection.index)}</a>'
        if rejection.index and page_index is None
        else _e(rejection.index or "no directory")
    )
    kind = "" if rejection.kind == "run" else f" {_badge('other', rejection.kind)}"
    left = (
        f'<p class="meta">{len(rejection.left_in_nightly)} object(s) an earlier attempt '
        "copied stay in nightly, listed on no index page: "
        + ", ".join(f"<code>{_e(key)}</code>" for key in rejection.left_in_nightly)
        + "</p>"
        if rejection.left_in_nightly
        else ""
    )
    return (
        f"<li>{_badge(State.REJECTED, rejection.reason or 'rejected')}{kind} "
        f"run {_run_id(rejection.run_id, rejection.links)}"
        f'<div class="meta">{where} · {_time(rejection.at)}</div>'
        f'<p class="message">{_e(rejection.message)}</p>{left}</li>'
    )


def _run_summary(run: PromotedRun) -> str:
    return (
        "<dl>"
        f"<dt>Run</dt><dd>{_run_id(run.run_id, run.links)}</dd>"
        f"<dt>Commit</dt><dd>{_commit(run.commit, run.links)}</dd>"
        f"<dt>Promoted</dt><dd>{_time(run.decided_at)}</dd>"
        f"<dt>Files</dt><dd>{run.file_count}</dd>"
        "</dl>"
    )


def _import_line(imported: ImportedFiles) -> str:
    return (
        f"{_badge('other', 'import')} <code>{_e(imported.run_id)}</code>: "
        f"{imported.imported} file(s) imported from <code>{_e(imported.source)}</code> "
        f"({imported.already} already released, {imported.refused} refused), "
        f"{_time(imported.decided_at)}"
    )


def _dashboard(url: str | None) -> str:
    """The link to the metrics dashboard (``url``), or nothing when there is none."""
    return _link(url, "Dashboard") if safe_url(url) else ""


def render_overview(state: StatusState, *, dashboard_url: str | None = None) -> str:
    """``status/index.html``: per directory its latest promoted run, then recent rejections;
    a link to the metrics dashboard when ``dashboard_url`` is given."""
    body = ["<h2>Index directories</h2>"]
    if not state.directories:
        body.append("<p>Nothing has been decided yet.</p>")
    for index in sorted(state.directories):
        status = state.directories[index]
        link = _e(_href(None, _page_dir(index)))
        parts = [f'<section class="card"><h3><a href="{link}">{_e(index)}</a></h3>']
        run = status.latest
        if run is None:
            parts.append("<p>No run promoted yet.</p>")
        else:
            parts.append(_run_summary(run) + _tests(run.tests))
        if status.imports:
            parts.append(f'<p class="meta">{_import_line(status.imports[0])}</p>')
        parts.append("</section>")
        body.append("".join(parts))
    body.append("<h2>Recent rejections</h2>")
    if state.rejections:
        body.append(
            '<ul class="plain card">'
            + "".join(_rejection_item(r, None) for r in state.rejections)
            + "</ul>"
        )
    else:
        body.append("<p>No rejections.</p>")
    nav = '<p class="meta">Latest promoted run of each index directory, and what was refused.</p>'
    if dashboard := _dashboard(dashboard_url):
        nav += f'<p class="meta">{dashboard}</p>'
    return _document("WheelGate status", "WheelGate status", nav, body)


def render_directory(state: StatusState, index: str, *, dashboard_url: str | None = None) -> str:
    """``status/<index>/index.html``: the directory's latest promoted run with its files and
    tests, and its recent decisions; a link to the metrics dashboard when ``dashboard_url`` is
    given."""
    status = state.directories.get(index, DirectoryStatus())
    overview = _e(_href(index, _page_dir(None)))
    simple = _e(_href(index, f"{index}/"))
    nav = (
        f'<p class="meta"><a href="{overview}">All directories</a> · '
        f'<a href="{simple}">Package index</a>'
        + (f" · {dashboard}" if (dashboard := _dashboard(dashboard_url)) else "")
        + "</p>"
    )
    body = ["<h2>Latest promoted run</h2>"]
    run = status.latest
    if run is None:
        body.append("<p>No run promoted yet.</p>")
    else:
        files = "".join(
            f'<li><a href="{_e(_href(index, f"{index}/{f.filename}"))}">{_e(f.filename)}</a>'
            f'<br><span class="meta">{human_size(f.size)} · sha256 '
            f'<code title="{_e(f.sha256)}">{_e(f.sha256[:12])}</code></span></li>'
            for f in run.files
        )
        more = run.file_count - len(run.files)
        body.append(
            f'<section class="card">{_run_summary(run)}</section>'
            "<h2>Tests</h2>"
            f'<section class="card">{_tests(run.tests)}</section>'
            "<h2>Files</h2>"
            f'<ul class="plain card">{files}</ul>'
            + (f'<p class="meta">and {more} more in the package index.</p>' if more > 0 else "")
        )
    if status.imports:
        body.append("<h2>Imported, untested</h2>")
        body.append(
            '<p class="meta">Files brought in from an existing bucket by an import: no test '
            "installed them here.</p>"
        )
        for imported in status.imports:
            files = "".join(
                f'<li><a href="{_e(_href(index, f"{index}/{f.filename}"))}">'
                f"{_e(f.filename)}</a>"
                f'<br><span class="meta">{human_size(f.size)} · sha256 '
                f'<code title="{_e(f.sha256)}">{_e(f.sha256[:12])}</code></span></li>'
                for f in imported.files
            )
            more = imported.imported - len(imported.files)
            body.append(
                f'<section class="card"><p>{_import_line(imported)}</p>'
                + (f'<ul class="plain">{files}</ul>' if files else "")
                + (f'<p class="meta">and {more} more in the package index.</p>' if more > 0 else "")
                + "</section>"
            )
    body.append("<h2>Recent decisions</h2>")
    if status.decisions:
        items = []
        for d in status.decisions:
            kind = "" if d.kind == "run" else f" {_badge('other', d.kind)}"
            reason = f" <code>{_e(d.reason)}</code>" if d.reason else ""
            items.append(
                f"<li>{_badge(d.state)}{kind}{reason} run {_run_id(d.run_id, d.links)}"
                f'<div class="meta">{_time(d.at)}</div>'
                + (f'<p class="message">{_e(d.message)}</p>' if d.message else "")
                + "</li>"
            )
        body.append('<ul class="plain card">' + "".join(items) + "</ul>")
    else:
        body.append("<p>No decisions yet.</p>")
    return _document(f"{index} · WheelGate status", index, nav, body)
