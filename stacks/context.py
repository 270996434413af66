"""A CDK app's context as one WheelGate deployment: its stack name, environment and settings.

This repository's ``app.py`` reads ``cdk.json`` through it; another app may too. Context keys:

- ``wheelgate``: the settings (:class:`~stacks.props.WheelGateProps`, key for key) of the
  default deployment, and the base of every stage's.
- ``wheelgate_file`` (``-c wheelgate_file=wheelgate.json``): a JSON file holding that object,
  any number of lines, whose object takes the place of ``cdk.json``'s, so this repository's app
  deploys settings of its own without an edit of ``cdk.json``. A relative path is from the
  current directory (where ``cdk`` runs, beside ``cdk.json``). ``wheelgate_stages_file`` does
  the same for ``wheelgate_stages``. ``-c wheelgate='{...}'`` (one line of JSON) works too:
  the ``cdk`` command cuts a ``-c`` value at its first newline, so ``"$(cat file)"`` of a
  multi-line file does not, and says so.
- ``stage`` (``-c stage=test``): unset, the stack is ``WheelGate`` with the ``wheelgate``
  settings, as before stages existed. Set, the stack is ``WheelGate-<stage>`` and its settings
  are ``wheelgate`` with the keys of ``wheelgate_stages.<stage>`` in place of the same keys (a
  key's whole value is replaced); a stage must be listed there, so a mistyped stage never
  deploys a second copy of the default settings.
- ``account``, ``region`` (``-c account=111122223333 -c region=eu-west-1``): the stack's
  environment, which ``cdk deploy`` then checks its credentials against. Unset: an
  environment-agnostic stack, deployed into the account and region of the credentials and
  profile ``cdk deploy`` runs with, as before. ``CDK_DEFAULT_ACCOUNT``/``_REGION`` are not read:
  the ``cdk`` command sets a region even when none is configured (us-east-1), which would turn
  every template region-specific and rewrite an existing deployment's template.
- ``wheelgate.<key>`` (``-c wheelgate.fanout.min_bytes=4096``): one setting for one command,
  parsed as JSON when it is valid JSON; it wins over both ``wheelgate`` and the stage.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .props import WheelGateProps
from .setting_errors import CONTEXT_KEY, ConfigError, Problem, key, settings_model

#: The stack of the default deployment (no ``stage``); a stage's is ``WheelGate-<stage>``.
DEFAULT_STACK_NAME = "WheelGate"
STAGE_KEY = "stage"
STAGES_KEY = "wheelgate_stages"
#: Ends a context key naming a JSON file that holds the object of the key without it
#: (``wheelgate_file``, ``wheelgate_stages_file``).
FILE_SUFFIX = "_file"
WHEELGATE_FILE_KEY = CONTEXT_KEY + FILE_SUFFIX
ACCOUNT_KEY = "account"
REGION_KEY = "region"
#: A stage's name: it ends the stack's name, which CloudFormation spells ``[A-Za-z][-A-Za-z0-9]*``
#: and which names the fan-out state machine (``<stack>-fanout``, at most 80 characters).
_STAGE = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,31}")
_ACCOUNT = re.compile(r"[0-9]{12}")
_REGION = re.compile(r"[a-z]{2}(?:-[a-z]+)+-[0-9]+")


@dataclass(frozen=True)
class Deployment:
    """One WheelGate stack: ``stack_name`` in ``account``/``region`` (``None``: decided at
    deploy time), with ``props``; ``stage`` is ``None`` for the default deployment."""

    stack_name: str
    stage: str | None
    account: str | None
    region: str | None
    props: WheelGateProps


def deployment_from_context(context: Mapping[str, Any], *, stage: str | None = None) -> Deployment:
    """The deployment the app's ``context`` (``app.node.get_all_context()``) describes.

    ``stage`` overrides the context's ``stage``.
    Raises :class:`~stacks.setting_errors.ConfigError` naming what is missing or wrong and how
    to set it.
    """
    stage = stage if stage is not None else _optional_text(context, STAGE_KEY)
    if stage is not None and not _STAGE.fullmatch(stage):
        raise _context_error(
            f"context key {STAGE_KEY} is {stage!r}: a stage is a letter, then up to 31 letters, "
            "digits or '-' (it ends the stack's name)",
            STAGE_KEY,
        )
    account = _optional_text(context, ACCOUNT_KEY)
    region = _optional_text(context, REGION_KEY)
    if account is not None and not _ACCOUNT.fullmatch(account):
        raise _context_error(
            f"context key {ACCOUNT_KEY} is {account!r}: an AWS account id is 12 digits",
            ACCOUNT_KEY,
        )
    if region is not None and not _REGION.fullmatch(region):
        raise _context_error(
            f"context key {REGION_KEY} is {region!r}, not an AWS region name such as eu-west-1",
            REGION_KEY,
        )
    return Deployment(
        stack_name=DEFAULT_STACK_NAME if stage is None else f"{DEFAULT_STACK_NAME}-{stage}",
        stage=stage,
        account=account,
        region=region,
        props=props_from_context(context, stage=stage),
    )


def props_from_context(context: Mapping[str, Any], *, stage: str | None = None) -> WheelGateProps:
    """The settings of ``stage`` (``None``: the default deployment) from ``context``.

    Raises :class:`~stacks.setting_errors.ConfigError`, each problem saying where its key is set.
    """
    source = _settings_file(context, CONTEXT_KEY)
    values = dict(_context_object(context, CONTEXT_KEY, f"context key {CONTEXT_KEY}"))
    if stage is not None:
        stages = _context_object(context, STAGES_KEY, f"context key {STAGES_KEY}")
        if stage not in stages:
            raise _context_error(
                f"stage {stage!r} is not in context key {STAGES_KEY} "
                f"(stages: {', '.join(sorted(stages)) or 'none'}): add "
                f'"{STAGES_KEY}": {{"{stage}": {{...}}}} to cdk.json with the settings that '
                f"differ from {CONTEXT_KEY} (docs/deploy.md)",
                STAGES_KEY,
            )
        values.update(_mapping(stages, stage, f"context key {STAGES_KEY}.{stage}"))
    overrides = sorted(
        (name, value) for name, value in context.items() if name.startswith(f"{CONTEXT_KEY}.")
    )
    for name, value in overrides:
        _override(values, name.split(".")[1:], _parse_override(value))
    try:
        return WheelGateProps.model_validate(values)
    except ConfigError as exc:
        raise ConfigError(
            [_where_to_set(problem, stage, source) for problem in exc.problems]
        ) from None


def _override(values: dict[str, Any], path: list[str], value: Any) -> None:
    """Set ``values`` at ``path``, through the settings objects (``fanout``,
    ``nightly_retention``, ``custom_domain``) only: any other value is given whole."""
    node = values
    model: type[BaseModel] | None = WheelGateProps
    for depth, part in enumerate(path[:-1]):
        field = model.model_fields.get(part) if model else None
        model = settings_model(field.annotation) if field else None
        if model is None:
            name = key(*path[: depth + 1])
            raise _context_error(
                f"-c {key(*path)}: {name} is not an object of settings; give all of it, as "
                f"JSON, with -c {name}=<value>",
                name,
            )
        child = node.get(part)
        node[part] = node = dict(child) if isinstance(child, Mapping) else {}
    node[path[-1]] = value


def _where_to_set(problem: Problem, stage: str | None, source: str | None) -> Problem:
    """``problem`` with how to set its key in ``cdk.json`` (or the ``source`` file the
    settings came from) or on the command line."""
    if problem.key is None:
        return problem
    also = "" if stage is None else f' (or "{STAGES_KEY}" -> "{stage}")'
    if source is None:
        place = f'"context" -> "{CONTEXT_KEY}"{also}'
        missing = f"cdk.json context key {problem.key} is missing: add it under {place} in cdk.json"
        where = f"cdk.json: under {place}"
    else:
        missing = f"{problem.key} is missing: add it to {source}{also}"
        where = f"{source}{also}"
    if problem.missing:
        message = f"{missing} or pass -c {problem.key}=<value> (see docs/deploy.md)"
    else:
        message = f"{problem.message} ({where}; one command: -c {problem.key}=<value>)"
    return Problem(message, key=problem.key, missing=problem.missing)


def _context_object(context: Mapping[str, Any], name: str, what: str) -> Mapping[str, Any]:
    """The object of context key ``name``: read from the JSON file ``<name>_file`` names, if
    it is given, else as :func:`_mapping` reads it."""
    path = _settings_file(context, name)
    if path is None:
        return _mapping(context, name, what, file_key=name + FILE_SUFFIX)
    if isinstance(context.get(name), str):
        raise _context_error(
            f"context keys {name} and {name}{FILE_SUFFIX} are both given (-c {name}=... and "
            f"-c {name}{FILE_SUFFIX}=...): give the settings once, in the file",
            name,
        )
    return settings_file_object(path, name + FILE_SUFFIX)


def _settings_file(context: Mapping[str, Any], name: str) -> str | None:
    """The file context key ``<name>_file`` names, if any."""
    path = context.get(name + FILE_SUFFIX)
    return None if path is None or path == "" else str(path)


def _mapping(
    values: Mapping[str, Any], name: str, what: str, *, file_key: str | None = None
) -> Mapping[str, Any]:
    value = values.get(name)
    if value is None:
        return {}
    if isinstance(value, str):
        # `-c wheelgate='{...}'` arrives as a string: the whole object, as JSON.
        return _command_line_object(value, name, what, file_key)
    if not isinstance(value, Mapping):
        raise _context_error(f"{what} must be an object (in cdk.json)", name)
    return value


def _command_line_object(
    text: str, name: str, what: str, file_key: str | None
) -> Mapping[str, Any]:
    """The JSON object ``-c name=text`` gives (``what``: the key, as errors name it). Raises
    :class:`ConfigError` saying what the text is, and, for one that a cut at its first newline
    explains, how to name a file instead."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        problem = f"which is not JSON ({exc.msg} at column {exc.colno})"
    else:
        if isinstance(parsed, Mapping):
            return parsed
        problem = f"a JSON {type(parsed).__name__}"
    shown = text if len(text) <= 60 else text[:57] + "..."
    message = f"{what} is {shown!r}, {problem}, not an object of settings"
    if text.lstrip().startswith("{") and file_key is not None:
        message += (
            f'. If it came from a file (-c {name}="$(cat {name}.json)"), the cdk command cut '
            f"it at the file's first newline: it passes only the first line of a -c value. "
            f"Name the file instead: -c {file_key}={name}.json (docs/deploy.md, 3b)"
        )
    raise _context_error(message, name)


def settings_file_object(path: str, file_key: str) -> Mapping[str, Any]:
    """The JSON object in the file at ``path`` (relative: to the current directory) that
    context key ``file_key`` names. Raises :class:`ConfigError` naming the file and what is
    wrong with it: missing or unreadable, not JSON (line and column), not an object."""
    where = f"context key {file_key} names {path!r}"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _context_error(
            f"{where}, which does not exist (a relative path is from the directory cdk runs "
            f"in, {Path.cwd()})",
            file_key,
        ) from None
    except OSError as exc:
        raise _context_error(f"{where}, which cannot be read: {exc.strerror}", file_key) from None
    except UnicodeDecodeError:
        raise _context_error(f"{where}, which is not UTF-8 text", file_key) from None
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _context_error(
            f"{where}, which is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
            file_key,
        ) from None
    if not isinstance(parsed, Mapping):
        raise _context_error(
            f"{where}, which holds a JSON {type(parsed).__name__}, not an object of settings",
            file_key,
        )
    return parsed


def _optional_text(context: Mapping[str, Any], name: str) -> str | None:
    value = context.get(name)
    if value is None or value == "":
        return None
    # `-c account=111122223333` arrives as a string; cdk.json could hold a number.
    return str(value)


def _context_error(message: str, name: str) -> ConfigError:
    return ConfigError([Problem(message, key=name)])


def _parse_override(value: Any) -> Any:
    # `-c key=value` always arrives as a string; JSON lets lists, numbers and null through too.
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value
