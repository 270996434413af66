"""The status site: what was promoted where, and what was refused.

Its pages live in the staging bucket (so a rejected run writes no byte of nightly) and are
served at the nightly domain's ``/status/``.

Pure functions. The state is one small JSON document (``status/state.json``) that
:func:`apply_record` folds each decision record into; :func:`render_overview` and
:func:`render_directory` turn it into static HTML5 pages (inline CSS, no script, no external
asset) that read well on a phone. Every value that came from a manifest or a record is escaped,
and a test URL becomes a link only when it is ``http`` or ``https``.

The state is bounded whatever happens: :data:`MAX_DECISIONS` decisions per directory,
:data:`MAX_REJECTIONS` rejections overall, :data:`MAX_DIRECTORIES` directories, and the first
:data:`MAX_FILES` files and :data:`MAX_TESTS` tests of a directory's latest promoted run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Literal
from urllib.parse import quote, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from wheelgate.core.layout import (
    HTML_PAGE,
    OVERRIDE_RUN_PREFIX,
    STATUS_PREFIX,
    YANK_RUN_PREFIX,
    relative_href,
)
from wheelgate.core.records import PromotionRecord, SetOutcome, State

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

Kind = Literal["run", "yank", "override"]


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


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    kind: Kind = "run"
    state: State
    reason: str | None = None
    message: str = ""
    at: str = ""
    commit: str | None = None


class Rejection(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    kind: Kind = "run"
    index: str | None = None
    reason: str | None = None
    message: str = ""
    at: str = ""


class DirectoryStatus(BaseModel):
    model_config = ConfigDict(frozen=True)

    latest: PromotedRun | None = None
    #: Newest first.
    decisions: list[Decision] = []


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
    """Read ``status/state.json``; raises ``pydantic.ValidationError`` if it is not one."""
    return StatusState.model_validate_json(raw)


# -- folding records into the state --------------------------------------------------------


def run_kind(run_id: str) -> Kind:
    if run_id.startswith(YANK_RUN_PREFIX):
        return "yank"
    if run_id.startswith(OVERRIDE_RUN_PREFIX):
        return "override"
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


def _promoted_run(record: PromotionRecord, outcome: SetOutcome, at: str) -> PromotedRun:
    files = sorted(outcome.files, key=lambda f: f.filename)
    return PromotedRun(
        run_id=record.run_id,
        commit=record.commit,
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


def apply_record(state: StatusState, record: PromotionRecord) -> StatusState:
    """The state with the latest decision of ``record`` folded in.

    Idempotent: a decision already in the state (same run and time) replaces itself. The
    decision is the record's last history entry; when it is the record's own current decision
    its per-directory outcomes are used, otherwise (a refused replay of a promoted run) it is
    listed as one run-level decision. Only a fresh promotion of a plain run (not a yank or an
    override) can become a directory's latest promoted run, and only if it is not older than
    the one shown.
    """
    kind = run_kind(record.run_id)
    if record.history:
        last = record.history[-1]
        at, state_, reason, message = last.at, last.state, last.reason, last.message
    else:
        at, state_ = record.decided_at or "", record.state
        reason, message = record.reason, record.message
    fresh = (record.decided_at or "") == at and record.state is state_
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
        )
        decisions = [d for d in current.decisions if (d.run_id, d.at) != (record.run_id, at)]
        latest = current.latest
        if (
            outcome is not None
            and kind == "run"
            and set_state is State.PROMOTED
            and (latest is None or latest.decided_at <= at)
        ):
            latest = _promoted_run(record, outcome, at)
        directories[index] = DirectoryStatus(
            latest=latest,
            decisions=sorted([decision, *decisions], key=lambda d: d.at, reverse=True)[
                :MAX_DECISIONS
            ],
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
                )
            )
    if not outcomes and state_ is State.REJECTED:
        add_rejection(
            Rejection(run_id=record.run_id, kind=kind, reason=reason, message=_cut(message), at=at)
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
    href = quote(relative_href(_page_dir(page_index), target.rstrip("/")), safe="/")
    return href + "/" if target.endswith("/") else href


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


def _time(at: str) -> str:
    try:
        moment = datetime.fromisoformat(at.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return _e(at or "unknown time")
    shown = moment.strftime("%Y-%m-%d %H:%M UTC")
    return f'<time datetime="{_e(moment.strftime("%Y-%m-%dT%H:%M:%SZ"))}">{shown}</time>'


def _commit(commit: str | None) -> str:
    if not commit:
        return "—"
    return f'<code title="{_e(commit)}">{_e(commit[:12])}</code>'


def _badge(state: State | str, text: str | None = None) -> str:
    value = State(state).value if isinstance(state, State) else str(state)
    css = value if value in ("promoted", "rejected", "pending", "passed", "failed") else "other"
    return f'<span class="badge {css}">{_e(text or value)}</span>'


def _tests(tests: Sequence[TestLink]) -> str:
    if not tests:
        return "<p>No tests recorded.</p>"
    items = []
    for test in tests:
        url = safe_url(test.url)
        name = (
            f'<a href="{_e(url)}" rel="nofollow noopener">{_e(test.name)}</a>'
            if url
            else _e(test.name)
        )
        unsafe = "" if url or not test.url else f' <span class="muted">{_e(test.url)}</span>'
        items.append(f"<li>{_badge(test.result)} {name}{unsafe}</li>")
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
    return (
        f"<li>{_badge(State.REJECTED, rejection.reason or 'rejected')}{kind} "
        f"run <code>{_e(rejection.run_id)}</code>"
        f'<div class="meta">{where} · {_time(rejection.at)}</div>'
        f'<p class="message">{_e(rejection.message)}</p></li>'
    )


def render_overview(state: StatusState) -> str:
    """``status/index.html``: per directory its latest promoted run, then recent rejections."""
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
            parts.append(
                "<dl>"
                f"<dt>Run</dt><dd><code>{_e(run.run_id)}</code></dd>"
                f"<dt>Commit</dt><dd>{_commit(run.commit)}</dd>"
                f"<dt>Promoted</dt><dd>{_time(run.decided_at)}</dd>"
                f"<dt>Files</dt><dd>{run.file_count}</dd>"
                "</dl>" + _tests(run.tests)
            )
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
    return _document("WheelGate status", "WheelGate status", nav, body)


def render_directory(state: StatusState, index: str) -> str:
    """``status/<index>/index.html``: the directory's latest promoted run with its files and
    tests, and its recent decisions."""
    status = state.directories.get(index, DirectoryStatus())
    overview = _e(_href(index, _page_dir(None)))
    simple = _e(_href(index, f"{index}/"))
    nav = (
        f'<p class="meta"><a href="{overview}">All directories</a> · '
        f'<a href="{simple}">Package index</a></p>'
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
            '<section class="card"><dl>'
            f"<dt>Run</dt><dd><code>{_e(run.run_id)}</code></dd>"
            f"<dt>Commit</dt><dd>{_commit(run.commit)}</dd>"
            f"<dt>Promoted</dt><dd>{_time(run.decided_at)}</dd>"
            f"<dt>Files</dt><dd>{run.file_count}</dd>"
            "</dl></section>"
            "<h2>Tests</h2>"
            f'<section class="card">{_tests(run.tests)}</section>'
            "<h2>Files</h2>"
            f'<ul class="plain card">{files}</ul>'
            + (f'<p class="meta">and {more} more in the package index.</p>' if more > 0 else "")
        )
    body.append("<h2>Recent decisions</h2>")
    if status.decisions:
        items = []
        for d in status.decisions:
            kind = "" if d.kind == "run" else f" {_badge('other', d.kind)}"
            reason = f" <code>{_e(d.reason)}</code>" if d.reason else ""
            items.append(
                f"<li>{_badge(d.state)}{kind}{reason} run <code>{_e(d.run_id)}</code>"
                f'<div class="meta">{_time(d.at)}</div>'
                + (f'<p class="message">{_e(d.message)}</p>' if d.message else "")
                + "</li>"
            )
        body.append('<ul class="plain card">' + "".join(items) + "</ul>")
    else:
        body.append("<p>No decisions yet.</p>")
    return _document(f"{index} · WheelGate status", index, nav, body)
