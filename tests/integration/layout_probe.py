"""Laying a served page out in headless Chromium at several widths, and reading what it
measured: a page of the same origin holds the page in a frame of each width and writes, once
loaded, what a script measured in each frame into its DOM (the pages themselves have no
script, and Chromium's --dump-dom prints the DOM after the load event, frames included)."""

from __future__ import annotations

import json
from html import unescape
from pathlib import Path
from typing import Any

from tests.integration.test_status_page import chromium

#: A phone's and a desktop's width, and a screen's height, in CSS pixels.
WIDTHS = (390, 1280)
SCREEN_HEIGHT = 844
_MEASURED = '<pre id="measured">'
_PROBE = """<!DOCTYPE html>
<html><body style="margin:0">
{frames}
<pre id="measured"></pre>
<script>
const measure = (page, width) => ({measure});
window.addEventListener("load", () => {{
  const measured = {{}};
  for (const frame of document.querySelectorAll("iframe")) {{
    const page = frame.contentDocument;
    const width = page.documentElement.clientWidth;
    measured[frame.width] = Object.assign(
      {{clientWidth: width, scrollWidth: page.documentElement.scrollWidth}},
      measure(page, width));
  }}
  document.getElementById("measured").textContent = JSON.stringify(measured);
}});
</script>
</body></html>
"""


def probe_page(
    page_url: str, measure: str, widths: tuple[int, ...] = WIDTHS, height: int = SCREEN_HEIGHT
) -> bytes:
    """The probe of ``page_url``: ``measure`` is a JavaScript object expression of ``page``
    (the frame's document) and ``width`` (its client width), added to each frame's
    ``clientWidth`` and ``scrollWidth``; each frame is ``height`` pixels high."""
    frames = "\n".join(
        f'<iframe width="{w}" height="{height}" src="{page_url}" style="border:0"></iframe>'
        for w in widths
    )
    return _PROBE.format(frames=frames, measure=measure).encode()


def measured(probe_url: str, profile: Path) -> dict[str, Any]:
    """What the probe at ``probe_url`` measured, per width (its key, a string)."""
    html = chromium(probe_url, profile, "--dump-dom", "--window-size=1800,1000")
    start = html.index(_MEASURED) + len(_MEASURED)
    found: dict[str, Any] = json.loads(unescape(html[start : html.index("</pre>", start)]))
    return found
