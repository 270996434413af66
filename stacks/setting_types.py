"""The types of the settings' values, each annotated with what it must be in the words of its
error (:class:`~stacks.setting_errors.Expect`), and the settings objects nested in
:class:`~stacks.props.WheelGateProps` (``nightly_retention``, ``fanout``, ``custom_domain``).

Needs pydantic and ``wheelgate.core`` alone, not the CDK.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated

from annotated_types import Gt, Le, MinLen
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    PlainValidator,
    Strict,
    ValidationInfo,
    field_validator,
)

from wheelgate.core.quotas import MAX_MAP_CONCURRENCY
from wheelgate.core.setting_values import (
    RETENTION_MODES,
    ListingRetention,
    NewLocalLabels,
    SettingsError,
)
from wheelgate.core.settings import (
    DEFAULT_FANOUT_COPY_CONCURRENCY,
    DEFAULT_FANOUT_HASH_CONCURRENCY,
    DEFAULT_FANOUT_MIN_BYTES,
    DEFAULT_FANOUT_MIN_FILES,
)

from .setting_errors import Expect, key

#: A workflow file directly under .github/workflows (GitHub reads no subdirectories).
_WORKFLOW_FILE = re.compile(r"\.github/workflows/[A-Za-z0-9._-]+\.ya?ml")


def _empty_is_none(value: object) -> object:
    return None if value == "" else value


def _workflow_file(value: str, info: ValidationInfo) -> str:
    if not _WORKFLOW_FILE.fullmatch(value):
        raise ValueError(
            f"{key(str(info.field_name))}: {value} is not a workflow file path such as "
            ".github/workflows/release-nightly.yml"
        )
    return value


def _listing_retention(value: object) -> ListingRetention:
    if isinstance(value, ListingRetention):
        return value
    try:
        return ListingRetention.from_value(value, name=key("listing_retention"))
    except SettingsError as exc:
        raise ValueError(str(exc)) from exc


def _new_local_labels(value: object) -> NewLocalLabels:
    if isinstance(value, NewLocalLabels):
        return value
    try:
        return NewLocalLabels.from_value(value, name=key("allow_new_local_labels"))
    except SettingsError as exc:
        raise ValueError(str(exc)) from exc


#: A non-empty string, for an item of a list (the list's :class:`Expect` words the error).
StrictString = Annotated[str, Strict(), MinLen(1)]
NonEmptyString = Annotated[str, Strict(), MinLen(1), Expect("a non-empty string")]
NullableString = Annotated[
    str | None, Strict(), BeforeValidator(_empty_is_none), Expect("a string or null")
]
PositiveInt = Annotated[int, Strict(), Gt(0), Expect("a positive integer")]
MapConcurrency = Annotated[
    int,
    Strict(),
    Gt(0),
    Le(MAX_MAP_CONCURRENCY),
    Expect(f"an integer from 1 to {MAX_MAP_CONCURRENCY:,} (a Distributed Map's most)"),
]
NullableInt = Annotated[int | None, Strict(), Expect("an integer or null")]
Flag = Annotated[bool, Strict(), Expect("true or false")]
Strings = Annotated[tuple[StrictString, ...], MinLen(1), Expect("a non-empty list of strings")]
WorkflowFile = Annotated[
    str, Strict(), MinLen(1), AfterValidator(_workflow_file), Expect("a workflow file path")
]
WorkflowFiles = Annotated[
    tuple[Annotated[str, Strict(), AfterValidator(_workflow_file)], ...],
    MinLen(1),
    Expect("a non-empty list of strings"),
]
TestsByIndex = Annotated[
    Mapping[str, tuple[Annotated[str, Strict()], ...]],
    Expect("an object mapping index directories to lists of test names"),
]
Retention = Annotated[
    ListingRetention,
    PlainValidator(_listing_retention),
    PlainSerializer(lambda value: json.loads(value.to_json())),
    Expect("an object with 'default' and 'indexes'"),
]

NewLabels = Annotated[
    NewLocalLabels,
    PlainValidator(_new_local_labels),
    PlainSerializer(lambda value: json.loads(value.to_json())),
    Expect("true, false or a list of index directories"),
]

_FROZEN = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)


class Settings(BaseModel):
    """A settings object: ``None`` for a setting that has a default means that default."""

    model_config = _FROZEN

    @field_validator("*", mode="before")
    @classmethod
    def _null_is_the_default(cls, value: object, info: ValidationInfo) -> object:
        field = cls.model_fields[str(info.field_name)]
        if value is None and not field.is_required():
            return field.get_default(call_default_factory=True)
        return value


class NightlyRetention(Settings):
    """Object Lock default retention of nightly (``nightly_retention``)."""

    mode: NonEmptyString
    days: PositiveInt

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, mode: str) -> str:
        if mode not in RETENTION_MODES:
            raise ValueError(
                f"{key('nightly_retention', 'mode')} is {mode!r}; use one of "
                f"{', '.join(RETENTION_MODES)}"
            )
        return mode


class FanOutSettings(Settings):
    """Fan-out promotion (``fanout``): a promotion copying at least ``min_files`` files, or
    ``min_bytes`` bytes, goes through the fan-out state machine (``WHEELGATE_FANOUT_MIN_FILES``
    / ``_MIN_BYTES``), whose Distributed Maps hash at most ``hash_concurrency`` files at once
    and copy at most ``copy_concurrency`` (their ``MaxConcurrency``; one promoter invocation
    each, so each is also that many of the account's Lambda concurrency)."""

    min_files: PositiveInt = DEFAULT_FANOUT_MIN_FILES
    min_bytes: PositiveInt = DEFAULT_FANOUT_MIN_BYTES
    hash_concurrency: MapConcurrency = DEFAULT_FANOUT_HASH_CONCURRENCY
    copy_concurrency: MapConcurrency = DEFAULT_FANOUT_COPY_CONCURRENCY


class CustomDomain(Settings):
    """A domain name served by a distribution and its ACM certificate (in us-east-1)."""

    domain_name: NonEmptyString
    certificate_arn: NonEmptyString


class CustomDomains(Settings):
    """The custom domain of each distribution, if any (``custom_domain``)."""

    nightly: Annotated[CustomDomain | None, Expect("an object or null")] = None
    staging: Annotated[CustomDomain | None, Expect("an object or null")] = None
