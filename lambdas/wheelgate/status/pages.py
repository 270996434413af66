"""The status site's pages: ``status/index.html`` and ``status/<dir>/index.html``, rendered
from the state (:mod:`wheelgate.status.state`) by the Jinja2 templates of ``templates/``.

Pure functions: static HTML5 pages (inline CSS, no script, no external asset) that read well on
a phone. Every value is escaped by the environment's autoescape, on for every template whatever
its name; a test URL becomes a link only when it is ``http`` or ``https``
(:func:`~wheelgate.core.display.safe_url`). The run id and the commit link the CI run and the
commit when the state has those links. Given the staging index's base URL, the pages link
each directory's run history, which staging serves at ``history/<dir>/`` (the status site is
on the nightly domain, so the link is absolute).

Jinja2 comes with the promoter (the ``promoter`` extra and its layer): only the promoter
renders pages, and ``wheelgate runs`` reads the state without it.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache, partial
from typing import Any

from jinja2 import Environment

from wheelgate.core.display import safe_url
from wheelgate.core.layout import STAGING, href, key_url
from wheelgate.core.page_templates import template_environment
from wheelgate.status.state import DirectoryStatus, StatusState, index_directory, page_key


def status_dir(index: str | None) -> str:
    """The folder of a status page (``status/`` or ``status/<index>/``)."""
    return page_key(index).rsplit("/", 1)[0] + "/"


def relative_link(page_index: str | None, target: str) -> str:
    """Relative, percent-encoded link from the status page of ``page_index`` to a key of the
    nightly bucket (a folder when ``target`` ends with ``/``)."""
    link = href(status_dir(page_index), target.rstrip("/"))
    return link + "/" if target.endswith("/") else link


def history_link(history_base_url: str | None, index: str) -> str | None:
    """The run history page of ``index`` under ``history_base_url`` (the staging index's base
    URL), or ``None`` without one."""
    if history_base_url is None:
        return None
    return key_url(history_base_url, STAGING.history_dir(index))


@cache
def environment() -> Environment:
    """The templates' environment (:func:`~wheelgate.core.page_templates.template_environment`
    over this package's ``templates/``), built once, with ``status_dir``."""
    env = template_environment("wheelgate.status")
    env.globals.update(status_dir=status_dir)
    return env


def _render(
    template: str, page_index: str | None, history_base_url: str | None, **context: Any
) -> str:
    """``template`` rendered with ``context``, ``to`` (the page's link to a key) and
    ``history`` (a directory's run history link, or none)."""
    page = environment().get_template(template)
    return page.render(
        to=partial(relative_link, page_index),
        history=partial(history_link, history_base_url),
        **context,
    )


def shown_directories(
    state: StatusState, indexes: Iterable[str] = ()
) -> list[tuple[str, DirectoryStatus | None]]:
    """The index directories the overview shows, by name: each of ``indexes`` (the configured
    ones) and each the state knows of, with its status (``None``: nothing decided there yet,
    so it has no page). An archive is part of its directory, never shown as one."""
    known = {d: s for d, s in state.directories.items() if index_directory(d) == d}
    return [(index, known.get(index)) for index in sorted(set(indexes) | set(known))]


def render_overview(
    state: StatusState,
    *,
    indexes: Iterable[str] = (),
    dashboard_url: str | None = None,
    history_base_url: str | None = None,
) -> str:
    """``status/index.html``: per directory (each of ``indexes``, the configured ones, and each
    the state knows of) its latest promoted run, then recent rejections; a link to the metrics
    dashboard when ``dashboard_url`` is given (and http(s)), and to each directory's run
    history under ``history_base_url`` when given."""
    return _render(
        "overview.html",
        None,
        history_base_url,
        state=state,
        directories=shown_directories(state, indexes),
        dashboard_url=safe_url(dashboard_url),
    )


def render_directory(
    state: StatusState,
    index: str,
    *,
    dashboard_url: str | None = None,
    history_base_url: str | None = None,
) -> str:
    """``status/<index>/index.html``: the directory's latest promoted run with its files and
    tests, its imports, and its recent decisions; a link to the metrics dashboard when
    ``dashboard_url`` is given (and http(s)), and to its run history under
    ``history_base_url`` when given."""
    return _render(
        "directory.html",
        index,
        history_base_url,
        index=index,
        status=state.directories.get(index, DirectoryStatus()),
        dashboard_url=safe_url(dashboard_url),
    )
