"""Keep credentials out of logs and console output.

botocore's debug log prints request headers, including ``Authorization`` (which names the
access key id) and ``X-Amz-Security-Token`` (the session token), and request bodies (a
manifest or record may carry a test URL with a token in it). :func:`install` masks, in every
log record and in everything written to stdout and stderr: the values of the credential
variables in the environment, AWS access key ids, GitHub tokens, and the credentials URLs and
headers carry (a URL's password, signed-query and token parameters, bearer tokens, JWTs).
"""

from __future__ import annotations

import io
import logging
import os
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any, TextIO
from urllib.parse import parse_qsl, urlsplit

MASK = "****"
#: Environment variables whose values are secrets wherever they appear.
SECRET_ENV_NAMES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
)
#: Shapes of credentials that are masked even when they are not in the environment:
#: AWS access key ids (long-term AKIA, temporary ASIA) and GitHub tokens (classic, OAuth,
#: app, refresh, fine-grained).
SECRET_PATTERNS = re.compile(
    r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,255}\b"
    r"|\bgithub_pat_[A-Za-z0-9_]{20,255}\b"
)
#: Query parameters whose values are credentials (signed URLs, OAuth, API keys): matched on
#: the parameter's lower-case name. ``x-amz-*`` covers SigV4 presigned S3 URLs.
CREDENTIAL_QUERY_NAMES = frozenset(
    {
        "token",
        "access_token",
        "id_token",
        "refresh_token",
        "auth",
        "authorization",
        "code",
        "key",
        "api_key",
        "apikey",
        "secret",
        "client_secret",
        "password",
        "passwd",
        "sig",
        "signature",
    }
)
CREDENTIAL_QUERY_PREFIXES = ("x-amz-", "x-goog-")
#: A JSON Web Token: three base64url segments, the first two JSON objects (``eyJ``).
JWT_PATTERN = r"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"
_JWT = re.compile(JWT_PATTERN)
#: Credential shapes inside URLs and headers: a URL's password (``scheme://user:password@``),
#: a credential-named query parameter's value, a bearer token, a JWT anywhere.
_URL_SECRETS = re.compile(
    r"(?P<userinfo>(?<=://)[^/?#@\s:]*:)[^/?#@\s]+(?=@)"
    r"|(?P<param>(?<=[?&;])[A-Za-z0-9_.-]+=)[^&#\s'\"]+"
    r"|(?P<bearer>\b[Bb]earer\s+)[A-Za-z0-9._~+/=-]+"
    rf"|{JWT_PATTERN}"
)


def is_credential_param(name: str) -> bool:
    """Whether a query parameter named ``name`` carries a credential."""
    lowered = name.lower()
    return lowered in CREDENTIAL_QUERY_NAMES or lowered.startswith(CREDENTIAL_QUERY_PREFIXES)


def url_credentials(url: str) -> str | None:
    """What credential ``url`` carries (a password or user name, a credential-named query
    parameter, a JWT-shaped segment), or ``None``."""
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        return "user information (user name or password)"
    for name, _ in parse_qsl(parts.query, keep_blank_values=True):
        if is_credential_param(name):
            return f"the query parameter {name!r}"
    if _JWT.search(parts.path) or _JWT.search(parts.query) or _JWT.search(parts.fragment):
        return "a JSON Web Token"
    return None


def _mask_url_secret(match: re.Match[str]) -> str:
    if match["userinfo"] is not None:
        return match["userinfo"] + MASK
    if match["param"] is not None:
        name, value = match["param"][:-1], match[0][len(match["param"]) :]
        return match["param"] + (MASK if is_credential_param(name) else _JWT.sub(MASK, value))
    if match["bearer"] is not None:
        return match["bearer"] + MASK
    return MASK


def redact_urls(text: str) -> str:
    """``text`` with URL passwords, credential-named query values, bearer tokens and JWTs
    masked (the rest of each URL is kept, so a message still says which URL it is about)."""
    return _URL_SECRETS.sub(_mask_url_secret, text)


#: An assumed role's principal (``AWS:<role unique id>:<session name>``, as S3 events and
#: records name a writer): the session name is often a person's e-mail or login.
_ROLE_SESSION = re.compile(r"\b(?P<role>AWS:AROA[A-Z0-9]{4,128}:)[\w+=,.@-]{1,64}")


def mask_principals(text: str) -> str:
    """``text`` with the session name of each assumed role's principal masked
    (``AWS:AROA...:alice`` becomes ``AWS:AROA...:****``): the one rule by which every output
    that shows who did something (``status``, ``runs``, ``runs --json``, the status pages)
    names a principal. The role's unique id stays, so the output still says which role it was;
    who assumed it is in CloudTrail, and in the record itself."""
    return _ROLE_SESSION.sub(lambda m: m["role"] + MASK, text)


#: Shorter values are not masked: they would mask ordinary words (local mode's dummy keys).
MIN_SECRET_LENGTH = 8


class Redactor:
    """Replaces known secret values and credential-shaped strings with :data:`MASK`."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = sorted({s for s in secrets if len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True)
        self._values = re.compile("|".join(re.escape(v) for v in values)) if values else None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Redactor:
        return cls(environ.get(name, "") for name in SECRET_ENV_NAMES)

    def __call__(self, text: str) -> str:
        if self._values is not None:
            text = self._values.sub(MASK, text)
        return redact_urls(SECRET_PATTERNS.sub(MASK, text))

    def value(self, value: Any) -> Any:
        """``value`` with every string inside it (lists, dicts, bytes) redacted."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, bytes):
            return self(value.decode("utf-8", "replace"))
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(v) for v in value)
        return value


_STANDARD_ATTRS = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


class RedactingFilter(logging.Filter):
    """A handler filter that redacts the message, its arguments, the traceback and extras."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        redact = self.redactor
        if isinstance(record.msg, str):
            record.msg = redact(record.getMessage())
            record.args = None
        else:
            # Structured loggers (Powertools) pass a dict as the message.
            record.msg = redact.value(record.msg)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        for name, value in list(record.__dict__.items()):
            if name not in _STANDARD_ATTRS:
                setattr(record, name, redact.value(value))
        return True


class RedactingStream(io.TextIOBase):
    """A text stream that redacts each write before passing it on (``print`` writes a whole
    argument at once, so a secret is never split between two writes)."""

    def __init__(self, stream: TextIO, redactor: Redactor) -> None:
        self.stream = stream
        self.redactor = redactor

    def write(self, text: str) -> int:
        self.stream.write(self.redactor(text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.stream.encoding


def _filter_handlers(redactor: Redactor) -> None:
    loggers = [logging.getLogger()] + [
        logger
        for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    for logger in loggers:
        for handler in logger.handlers:
            for existing in [f for f in handler.filters if isinstance(f, RedactingFilter)]:
                handler.removeFilter(existing)
            handler.addFilter(RedactingFilter(redactor))


def install(environ: Mapping[str, str] | None = None, *, streams: bool = True) -> Redactor:
    """Mask secrets in every log handler configured so far and, with ``streams``, in all
    later writes to ``sys.stdout``/``sys.stderr`` (which also covers handlers added later).
    Safe to call again: the secrets are re-read and nothing is wrapped twice."""
    redactor = Redactor.from_environ(os.environ if environ is None else environ)
    _filter_handlers(redactor)
    if streams:
        for name in ("stdout", "stderr"):
            current = getattr(sys, name)
            if isinstance(current, RedactingStream):
                current.redactor = redactor
            else:
                setattr(sys, name, RedactingStream(current, redactor))
    return redactor
