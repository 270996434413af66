"""Local mode's two index servers: the staging and nightly indexes served over HTTP from the
embedded S3 the way the CloudFront distributions serve them (the CloudFront Function's page
choice, ``/status/`` routed to staging)."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

from botocore.exceptions import ClientError

from wheelgate.core.layout import HTML_PAGE, JSON_PAGE
from wheelgate.index.pages import JSON_CONTENT_TYPE

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

# The media types stacks/functions/index_router.js ranks (tests/infra/index_router_cases.json).
_JSON_TYPES = (JSON_CONTENT_TYPE, "application/vnd.pypi.simple.latest+json")
_HTML_TYPES = (
    "application/vnd.pypi.simple.v1+html",
    "application/vnd.pypi.simple.latest+html",
    "text/html",
    "text/*",
    "*/*",
)
# What JavaScript's parseFloat reads from the start of a q value.
_LEADING_NUMBER = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?")


@dataclass(frozen=True)
class Redirect:
    """A 301 to ``location``: a directory URL without its trailing slash."""

    location: str

    def send(self, handler: BaseHTTPRequestHandler) -> None:
        """Answer ``handler``'s request with this redirect (no body)."""
        handler.send_response(301)
        handler.send_header("Location", self.location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()


def choose_page(path: str, accept: str) -> str | Redirect:
    """The object key a CDN request path maps to, or the redirect the CDN answers (same rules
    as the CloudFront Function).

    Empty segments (doubled slashes) are dropped. A last segment without a ``.`` (before
    decoding) and without a trailing slash is a directory named without its slash: a
    :class:`Redirect` to the slash form, query kept. ``/dir/`` is a directory: its
    ``index.json`` when the client prefers the PEP 691 JSON type in ``Accept``, else
    ``index.html``. Anything else is a file. Each segment is percent-decoded as S3 decodes a
    request path: a raw ``+`` is a space, ``%2B`` a ``+``. The requests the function refuses
    with 400 (dot segments, malformed escapes) are not refused here: their keys simply do not
    exist.
    """
    raw, question, query = path.partition("?")
    segments = [s for s in raw.split("/") if s]
    slash = raw.endswith("/")
    if segments and not slash and "." not in segments[-1]:
        return Redirect("/" + "/".join(segments) + "/" + question + query)
    key = "/".join(unquote_plus(s) for s in segments)
    if not slash:
        return key
    page = JSON_PAGE if prefers_json(accept) else HTML_PAGE
    return (key + "/" if key else "") + page


def prefers_json(accept: str) -> bool:
    """True when ``Accept`` gives the PEP 691 JSON type a nonzero quality at least as high as
    every HTML type's (``text/*`` and ``*/*`` count as HTML). A q value outside 0..1 or not a
    number counts as 0, as in the CloudFront Function."""
    best_json, best_html = 0.0, 0.0
    for part in accept.split(","):
        fields = part.split(";")
        media = fields[0].strip().lower()
        quality = 1.0
        for field_ in fields[1:]:
            param = field_.strip().lower()
            if param.startswith("q="):
                number = _LEADING_NUMBER.match(param[2:])
                quality = float(number.group()) if number else 0.0
                if not 0.0 <= quality <= 1.0:
                    quality = 0.0
        if media in _JSON_TYPES:
            best_json = max(best_json, quality)
        elif media in _HTML_TYPES:
            best_html = max(best_html, quality)
    return best_json > 0 and best_json >= best_html


class _IndexHandler(BaseHTTPRequestHandler):
    server: IndexServer

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _serve(self, *, body: bool) -> None:
        key = choose_page(self.path, self.headers.get("Accept", ""))
        if isinstance(key, Redirect):
            key.send(self)
            return
        buckets = self.server.buckets
        for prefix, routed in self.server.routes.items():
            if key.startswith(prefix):
                buckets = routed
        for bucket in buckets:
            try:
                obj = self.server.s3.get_object(Bucket=bucket, Key=key)
            except ClientError:
                continue
            self.send_response(200)
            self.send_header("Content-Type", obj.get("ContentType", "application/octet-stream"))
            self.send_header("Content-Length", str(obj["ContentLength"]))
            self.send_header("ETag", obj["ETag"])
            self.send_header("Vary", "Accept")
            self.end_headers()
            stream = obj["Body"]
            while body and (chunk := stream.read(1024 * 1024)):
                self.wfile.write(chunk)
                self.server.count(key, len(chunk))
            stream.close()
            return
        self.send_error(404, f"no object {key}")


class IndexServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        port: int,
        s3: S3Client,
        buckets: list[str],
        verbose: bool,
        routes: dict[str, list[str]] | None = None,
    ) -> None:
        super().__init__(("127.0.0.1", port), _IndexHandler)
        self.s3 = s3
        self.buckets = buckets
        #: Key prefixes served from other buckets (a CloudFront behavior with another origin).
        self.routes = routes or {}
        self.verbose = verbose
        #: Body bytes served per key, for benchmarks of what clients download.
        self.bytes_sent: dict[str, int] = {}
        self._lock = threading.Lock()

    def count(self, key: str, size: int) -> None:
        with self._lock:
            self.bytes_sent[key] = self.bytes_sent.get(key, 0) + size
