"""Who may write which request: one check for every manifest key, failing closed.

The reporter role writes run manifests and yank requests; a dependency-mirror run (``deps-*``),
which the promoter accepts on its review instead of tests, only the mirror's own role; an
override or an import request, which releases files no test decided on, the break-glass role
alone. A role whose setting is missing accepts no writer (the reporter's refusal names its
setting; the others' wording is as it always was).
"""

from __future__ import annotations

from dataclasses import dataclass

from wheelgate.core.env_names import ENV_TRUSTED_REPORTER_ID
from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.layout import IMPORT_RUN_PREFIX, MIRROR_RUN_PREFIX, OVERRIDE_RUN_PREFIX
from wheelgate.core.settings import PromoterSettings


def written_by(principal_id: str | None, role_id: str) -> bool:
    """Whether an S3 event's ``principalId`` is the role with unique id ``role_id`` (any of
    its sessions: ``AWS:<role id>:<session>``)."""
    return principal_id is not None and (
        principal_id == f"AWS:{role_id}" or principal_id.startswith(f"AWS:{role_id}:")
    )


@dataclass(frozen=True)
class _Writer:
    """The role a kind of request must come from (its unique id; ``None``: not configured)
    and the refusals' wording: a wrong writer, and no role configured."""

    role_id: str | None
    wrong: str
    unset: str


def _writer_of(settings: PromoterSettings, run_id: str, who: str) -> _Writer:
    if run_id.startswith(OVERRIDE_RUN_PREFIX):
        wrong = f"override requested by {who}, which is not the break-glass role"
        unset = f"{wrong} (no break-glass role configured)"
        return _Writer(settings.break_glass_id, wrong, unset)
    if run_id.startswith(IMPORT_RUN_PREFIX):
        wrong = f"import requested by {who}, not by the break-glass role"
        return _Writer(settings.break_glass_id, wrong, f"{wrong} (none is configured)")
    if run_id.startswith(MIRROR_RUN_PREFIX):
        return _Writer(
            settings.trusted_deps_id,
            f"manifest was written by {who}, not by the deps role",
            "dependency-mirror runs are accepted only from the deps role, and none is configured",
        )
    return _Writer(
        settings.trusted_reporter_id,
        f"manifest was written by {who}, not by the reporter role",
        f"manifest was written by {who}, and no reporter role is configured "
        f"({ENV_TRUSTED_REPORTER_ID})",
    )


def check_writer(settings: PromoterSettings, run_id: str, principal_id: str | None) -> None:
    """Refuse a manifest or request under ``run_id`` that ``principal_id`` may not write.

    Raises :class:`~wheelgate.core.errors.PromotionRejected` (``untrusted-writer``) when the
    writer is not the role the request's kind needs, or when that role is not configured (the
    message names the setting).
    """
    writer = _writer_of(settings, run_id, principal_id or "an unknown principal")
    trusted = writer.role_id
    if trusted is None:
        raise PromotionRejected(Reason.UNTRUSTED_WRITER, writer.unset)
    if not written_by(principal_id, trusted):
        raise PromotionRejected(Reason.UNTRUSTED_WRITER, writer.wrong)
