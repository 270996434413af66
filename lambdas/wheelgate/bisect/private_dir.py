"""Directories bisect reads back what it wrote (the session, the file cache, the cached run
history): each must be one only this user can write, or a file someone else planted there
(a venv, a wheel, a history) would be run or installed as if bisect had written it.

A directory is private when this user owns it and neither its group nor others can write it;
every directory above it must be owned by this user or root and writable by no one else,
unless it is sticky (``/tmp``: no one can rename or remove what another owns in it).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: Write permission for the group or for others.
_SHARED_WRITE = stat.S_IWGRP | stat.S_IWOTH
_ROOT = 0


class UnsafeDirectory(Exception):
    """A directory someone else owns or can write: the message names it and the fix."""


def private_directory(path: Path, role: str) -> Path:
    """``path`` (absolute), made if missing (mode 0700), once it is private. ``role`` names
    it in the error (``the session directory``). Raises :class:`UnsafeDirectory` naming the
    path and the fix, or ``OSError`` when it cannot be made."""
    path = path.absolute()
    # Each missing directory 0700, parents too: mkdir(parents=True) would make those with the
    # umask's mode, group-writable under a umask of 002.
    for missing in [*reversed(path.parents), path]:
        if not missing.is_dir():
            missing.mkdir(mode=0o700, exist_ok=True)
    check_private(path, role)
    return path


def check_private(path: Path, role: str) -> None:
    """Raise :class:`UnsafeDirectory` unless ``path`` (an existing directory) and every
    directory above it are safe as the module says."""
    me = os.geteuid()
    real = path.resolve()
    shown = f"{role} {path}" + ("" if real == path.absolute() else f" (in fact {real})")
    info = real.stat()
    if info.st_uid != me:
        raise UnsafeDirectory(
            f"{shown} is owned by uid {info.st_uid}, not by you (uid {me}): what it holds is "
            f"not yours to trust; give a directory of your own"
        )
    if info.st_mode & _SHARED_WRITE:
        raise UnsafeDirectory(
            f"{shown} can be written by other users (mode {stat.S_IMODE(info.st_mode):04o}): "
            f"a file planted there would be used as bisect's own; run chmod go-w {real}, or "
            "give a directory only you can write"
        )
    for parent in real.parents:
        above = parent.stat()
        if above.st_uid not in (me, _ROOT):
            raise UnsafeDirectory(
                f"{shown} lies in {parent}, owned by uid {above.st_uid}: its owner can "
                "replace it; give a directory under one of your own"
            )
        if above.st_mode & _SHARED_WRITE and not above.st_mode & stat.S_ISVTX:
            raise UnsafeDirectory(
                f"{shown} lies in {parent}, which other users can write (mode "
                f"{stat.S_IMODE(above.st_mode):04o}, not sticky): they can replace it; run "
                f"chmod go-w {parent}, or give a directory under one only you can write"
            )


def check_private_file(path: Path, role: str) -> None:
    """Raise :class:`UnsafeDirectory` unless ``path``'s directory is private
    (:func:`check_private`) and the file itself is this user's and writable by no one else."""
    check_private(path.parent, role)
    info = path.stat()
    if info.st_uid != os.geteuid() or info.st_mode & _SHARED_WRITE:
        raise UnsafeDirectory(
            f"{path} in {role} {path.parent} is owned by uid {info.st_uid} with mode "
            f"{stat.S_IMODE(info.st_mode):04o}: only a file of yours that no one else can write "
            f"is trusted; remove it (it is read again once staging can be reached)"
        )
