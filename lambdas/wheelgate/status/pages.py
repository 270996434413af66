"""The status site's pages: ``status/index.html`` and ``status/<dir>/index.html``, rendered
from the state (:mod:`wheelgate.status.state`).

Pure functions: static HTML5 pages (inline CSS, no script, no external asset) that read well on
a phone. Every value that came from a manifest or a record is escaped, and a test URL becomes a
link only when it is ``http`` or ``https`` (:func:`~wheelgate.status.links.safe_url`). The run
id and the commit link the CI run and the commit when the state has those links.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from wheelgate.core.layout import HTML_PAGE, STATUS_PREFIX, href
from wheelgate.core.records import State
from wheelgate.status.display import human_size, shown_time
from wheelgate.status.links import CiLinks, safe_url
from wheelgate.status.state import (
    DirectoryStatus,
    ImportedFiles,
    PromotedRun,
    Rejection,
    StatusState,
    TestLink,
)


def page_key(index: str | None = None) -> str:
    """Key of the overview page (``index`` None) or of a directory's page."""
    return f"{STATUS_PREFIX}{index}/{HTML_PAGE}" if index else f"{STATUS_PREFIX}{HTML_PAGE}"


def _page_dir(index: str | None) -> str:
    return page_key(index).rsplit("/", 1)[0] + "/"


def _href(page_index: str | None, target: str) -> str:
    """Relative, percent-encoded link from a status page to a key of the nightly bucket."""
    link = href(_page_dir(page_index), target.rstrip("/"))
    return link + "/" if target.endswith("/") else link


def _e(value: object) -> str:
    return escape(str(value), quote=True)


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
