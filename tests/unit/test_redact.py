"""Credentials that URLs and headers carry are masked wherever output goes."""

from __future__ import annotations

import io
import logging

import pytest

from wheelgate.core.redact import (
    MASK,
    RedactingFilter,
    RedactingStream,
    Redactor,
    mask_principals,
    redact_urls,
)

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://ci:hunter22pw@ci.example/run/1",
         f"https://ci:{MASK}@ci.example/run/1"),
        ("https://h/a.whl?sig=s3cr3tsig&name=a",
         f"https://h/a.whl?sig={MASK}&name=a"),
        ("https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIDX%2F1&X-Amz-Signature=abcdef",
         f"https://b.s3.amazonaws.com/k?X-Amz-Credential={MASK}&X-Amz-Signature={MASK}"),
        ("https://x/cb?code=oauthcode&state=1", f"https://x/cb?code={MASK}&state=1"),
        ("https://x/y?access_token=tok123#frag", f"https://x/y?access_token={MASK}#frag"),
        ("https://x/y?key=apikey123", f"https://x/y?key={MASK}"),
        ("Authorization: Bearer abc.def-ghi", f"Authorization: Bearer {MASK}"),
        (f"https://ci.example/runs/{JWT}/log", f"https://ci.example/runs/{MASK}/log"),
        # Ordinary URLs are left as they are.
        ("https://github.com/o/r/actions/runs/1?check_suite_focus=true",
         "https://github.com/o/r/actions/runs/1?check_suite_focus=true"),
    ],
)  # fmt: skip
def test_url_credentials_are_masked(text: str, expected: str) -> None:
    assert redact_urls(text) == expected
    assert Redactor()(text) == expected


def test_streams_and_logs_mask_url_credentials() -> None:
    redactor = Redactor()
    out = io.StringIO()
    RedactingStream(out, redactor).write("GET https://u:pw123456@h/x?token=t0k3n\n")
    assert "pw123456" not in out.getvalue()
    assert "t0k3n" not in out.getvalue()
    record = logging.makeLogRecord(
        {"msg": {"url": f"https://h/?sig=zzz&id={JWT}"}, "extra_url": "https://h/?sig=yyy"}
    )
    RedactingFilter(redactor).filter(record)
    assert "zzz" not in str(record.msg)
    assert JWT not in str(record.msg)
    assert "yyy" not in str(record.__dict__["extra_url"])


def test_a_principal_shows_its_role_and_masks_its_session_name() -> None:
    said = "tests overridden by AWS:AROABREAKGLASS000001:alice@example.com: runners down"
    assert mask_principals(said) == (
        "tests overridden by AWS:AROABREAKGLASS000001:****: runners down"
    )


def test_text_without_an_assumed_roles_principal_is_unchanged() -> None:
    said = "AWS:AIDAUSER0000000001 promoted run 1 at 05:00: ok"
    assert mask_principals(said) == said
