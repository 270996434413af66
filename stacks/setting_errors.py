"""How the settings say what is wrong: a setting's name as ``cdk.json`` spells it
(:func:`key`), one :class:`Problem` per thing wrong, all of them in a :class:`ConfigError`, and
pydantic's errors turned into problems (:func:`problem`) worded by each field's :class:`Expect`.

Needs pydantic alone, not the CDK.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

#: The name of the settings object: the ``cdk.json`` context key, and the first part of every
#: key an error names.
CONTEXT_KEY = "wheelgate"


def key(*path: str) -> str:
    """A setting's name as errors and ``cdk.json`` spell it: ``wheelgate.fanout.min_files``."""
    return ".".join((CONTEXT_KEY, *path))


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the settings.

    ``message`` is a whole sentence naming the key(s); ``key`` is the one setting it is about
    (``wheelgate.index_dirs``), ``None`` for a rule between several; ``missing`` says a
    required setting was left out.
    """

    message: str
    key: str | None = None
    missing: bool = False


class ConfigError(Exception):
    """The settings do not describe a deployable WheelGate; :attr:`problems` says what.

    Not a ``ValueError``: pydantic would fold one raised inside validation into its own error.
    """

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(problem.message for problem in self.problems))


@dataclass(frozen=True)
class Expect:
    """What a setting must be, in the words of its error: ``wheelgate.<key> must be <phrase>``
    (annotated on the field's type; pydantic keeps it in the field's metadata)."""

    phrase: str


def problem(error: ErrorDetails, root: type[BaseModel]) -> Problem:
    """One pydantic error of the settings model ``root`` as a :class:`Problem`: our own
    sentence for a rule of ours, else the key and what it must be."""
    path = _setting_path(error["loc"], root)
    name = key(*path) if path else None
    if error["type"] == "value_error":
        return Problem(str(error.get("ctx", {}).get("error", error["msg"])), key=name)
    name = name or CONTEXT_KEY
    if error["type"] == "missing":
        return Problem(f"{name} is missing", key=name, missing=True)
    if error["type"] == "extra_forbidden":
        return Problem(f"{name} is not a WheelGate setting (docs/deploy.md)", key=name)
    return Problem(f"{name} must be {_expected(path, root)}", key=name)


def _setting_path(loc: tuple[int | str, ...], root: type[BaseModel]) -> tuple[str, ...]:
    """The settings named by ``loc``, down to the deepest one (not into a list's items or a
    mapping's keys)."""
    model: type[BaseModel] | None = root
    path: list[str] = []
    for part in loc:
        if model is None or not isinstance(part, str):
            break
        path.append(part)
        field = model.model_fields.get(part)
        model = settings_model(field.annotation) if field else None
    return tuple(path)


def _expected(path: tuple[str, ...], root: type[BaseModel]) -> str:
    model: type[BaseModel] | None = root
    phrase = "valid"
    for part in path:
        field = model.model_fields.get(part) if model else None
        if field is None:
            break
        phrase = next((m.phrase for m in field.metadata if isinstance(m, Expect)), phrase)
        model = settings_model(field.annotation)
    return phrase


def settings_model(annotation: Any) -> type[BaseModel] | None:
    """The settings object of a field typed ``Model`` or ``Model | None`` (``fanout``,
    ``nightly_retention``...); ``None`` for a plain value."""
    candidates = getattr(annotation, "__args__", None) or (annotation,)
    return next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
