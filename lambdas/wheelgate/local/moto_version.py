"""The one moto local mode runs on: the version its patches of moto's private internals were
written for.

``atomic_writes`` and ``large_objects`` replace private parts of moto's S3
(``S3Response._key_response_*``, ``FakeKey.value``, ``FakeMultipart.complete``,
``convert_to_flask_response.__call__``). Another version may rename or reshape any of them,
and a patch that no longer fits would fail quietly (a lost conditional write, a multi-GB object
held in memory), so local mode refuses to start on any other version; the ``local`` extra pins
this one (pyproject.toml), as requirements.txt does.
"""

from __future__ import annotations

from importlib import metadata

#: The moto version the patches were written for and tested with.
PATCHED_MOTO_VERSION = "5.2.5"


class UnpatchedMoto(Exception):
    """The installed moto is not the version local mode's patches were written for."""


def installed_moto_version() -> str:
    """The version of the installed moto distribution."""
    return metadata.version("moto")


def require_patched_moto(installed: str | None = None) -> None:
    """Raise :class:`UnpatchedMoto` naming both versions unless ``installed`` (default: the
    installed moto's) is :data:`PATCHED_MOTO_VERSION`."""
    version = installed_moto_version() if installed is None else installed
    if version != PATCHED_MOTO_VERSION:
        raise UnpatchedMoto(
            f"local mode patches moto {PATCHED_MOTO_VERSION}'s internals and moto {version} is "
            f"installed: pip install 'moto[server]=={PATCHED_MOTO_VERSION}' (the local extra "
            "pins it)"
        )
