"""What local mode needs beyond the base install, and the one message that says how to get it.

``pip install wheelgate`` is what CI jobs need (stage, report, pins, status, deps); the embedded
S3/SQS (moto server) and the promoter's handler (Powertools) come with the ``local`` extra.
"""

from __future__ import annotations

import importlib

from wheelgate.local.moto_version import require_patched_moto

LOCAL_EXTRA_INSTALL = "pip install 'wheelgate[local]'"
#: Imported up front so that a missing extra is reported before anything starts: the embedded
#: S3/SQS, and the handler the promoter loop runs (which imports Powertools and X-Ray).
LOCAL_MODULES = ("moto.server", "wheelgate.lambda_function.handler")


class LocalExtraMissing(Exception):
    """A module of the ``local`` extra cannot be imported; the message says how to install it."""


def require_local_extra() -> None:
    """Import what local mode runs; raise LocalExtraMissing naming the first missing module,
    and :class:`~wheelgate.local.moto_version.UnpatchedMoto` for a moto other than the one its
    patches were written for.

    A module of this package that cannot be found is a broken install, not a missing extra:
    that error propagates unchanged.
    """
    for module in LOCAL_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").partition(".")[0]
            if not missing or missing == "wheelgate":
                raise
            raise LocalExtraMissing(
                f"local mode needs {missing}, which is not installed: {LOCAL_EXTRA_INSTALL}"
            ) from None
    require_patched_moto()
