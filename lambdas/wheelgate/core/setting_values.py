"""The structured values a setting can take (a retention rule, where new local labels are
allowed, the nightly pages' lock), each read from JSON as ``cdk.json`` or the environment
spells it and written back, and the error a bad one raises."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from wheelgate.core.layout import LayoutError, check_index


@dataclass(frozen=True)
class SettingProblem:
    """What is wrong with one setting: its ``variable`` and a sentence (``problem``) that
    names it and says what to set."""

    variable: str
    problem: str


class SettingsError(ValueError):
    """The environment does not describe a usable promoter configuration.

    ``problems`` names each variable that is missing or bad, when the reader collected them
    (:meth:`wheelgate.core.settings.PromoterSettings.from_env` does); an error raised by one
    value's parser has none, and its message names the setting.
    """

    def __init__(self, message: str, *, problems: Sequence[SettingProblem] = ()) -> None:
        super().__init__(message)
        self.problems = tuple(problems)

    @classmethod
    def of(cls, problems: Sequence[SettingProblem]) -> SettingsError:
        """One error for all of ``problems`` (at least one): its message is the problem's
        sentence when there is one, else each sentence after their count."""
        if len(problems) == 1:
            return cls(problems[0].problem, problems=problems)
        sentences = "; ".join(p.problem for p in problems)
        return cls(f"{len(problems)} settings are missing or bad: {sentences}", problems=problems)


#: Object Lock retention modes, as S3 spells them.
RETENTION_MODES = ("GOVERNANCE", "COMPLIANCE")


@dataclass(frozen=True)
class PageRetention:
    """The Object Lock a nightly index page version is written with: ``mode`` (the bucket's)
    for ``days`` from the write."""

    mode: str
    days: int

    def until(self, now: datetime) -> datetime:
        """The retain-until date of a page version written at ``now``."""
        return now + timedelta(days=self.days)


#: The keys of one retention rule.
RETENTION_RULE_KEYS = ("keep_versions", "keep_days")


@dataclass(frozen=True)
class RetentionRule:
    """Which versions of a project an index directory's pages list.

    ``keep_versions`` (K): the newest K versions that are not wholly yanked. ``keep_days``
    (D): every version first released in the last D days. Both set: a version is listed when
    either keeps it (the last D days, and never fewer than K versions). Neither: every version.
    Whatever the rule, a project's newest version is always listed; see
    :mod:`wheelgate.index.retention` for the exact rules.
    """

    keep_versions: int | None = None
    keep_days: int | None = None

    @property
    def keeps_everything(self) -> bool:
        return self.keep_versions is None and self.keep_days is None

    def to_value(self) -> dict[str, int | None]:
        return {"keep_versions": self.keep_versions, "keep_days": self.keep_days}


@dataclass(frozen=True)
class ListingRetention:
    """The retention rule of every index directory: ``indexes`` overrides ``default`` per
    directory (an override is a whole rule: a key it leaves out is ``null``)."""

    default: RetentionRule = RetentionRule()
    indexes: Mapping[str, RetentionRule] = field(default_factory=dict)

    def rule_for(self, index: str) -> RetentionRule:
        """The rule of index directory ``index``."""
        return self.indexes.get(index, self.default)

    def to_json(self) -> str:
        """The value of ``WHEELGATE_LISTING_RETENTION``."""
        doc = {
            "default": self.default.to_value(),
            "indexes": {k: v.to_value() for k, v in sorted(self.indexes.items())},
        }
        return json.dumps(doc, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_value(cls, value: object, *, name: str) -> ListingRetention:
        """Read ``{"default": RULE, "indexes": {DIR: RULE}}`` (both keys optional; ``None``:
        keep everything). ``name`` names the setting in errors (the cdk.json key or the
        environment variable). Raises :class:`SettingsError` naming the bad key."""
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise SettingsError(f"{name} must be an object with 'default' and 'indexes'")
        unknown = sorted(set(value) - {"default", "indexes"})
        if unknown:
            raise SettingsError(
                f"{name} has unknown key(s) {', '.join(unknown)}: use 'default' and 'indexes'"
            )
        default = _retention_rule(value.get("default"), f"{name}.default")
        overrides = value.get("indexes") or {}
        if not isinstance(overrides, Mapping):
            raise SettingsError(f"{name}.indexes must map index directories to rules")
        indexes = {}
        for index, rule in overrides.items():
            try:
                check_index(str(index))
            except LayoutError as exc:
                raise SettingsError(f"{name}.indexes: {exc}") from exc
            indexes[str(index)] = _retention_rule(rule, f"{name}.indexes.{index}")
        return cls(default=default, indexes=indexes)


def _retention_rule(value: object, name: str) -> RetentionRule:
    if value is None:
        return RetentionRule()
    if not isinstance(value, Mapping):
        raise SettingsError(f"{name} must be an object with {' and '.join(RETENTION_RULE_KEYS)}")
    unknown = sorted(set(value) - set(RETENTION_RULE_KEYS))
    if unknown:
        raise SettingsError(
            f"{name} has unknown key(s) {', '.join(map(str, unknown))}: use "
            f"{' and '.join(RETENTION_RULE_KEYS)}"
        )
    numbers: dict[str, int | None] = {}
    for key in RETENTION_RULE_KEYS:
        number = value.get(key)
        if number is not None and (isinstance(number, bool) or not isinstance(number, int)):
            raise SettingsError(f"{name}.{key} must be a positive integer or null, not {number!r}")
        if number is not None and number <= 0:
            raise SettingsError(
                f"{name}.{key} is {number}; use a positive integer, or null to keep every version"
            )
        numbers[key] = number
    return RetentionRule(keep_versions=numbers["keep_versions"], keep_days=numbers["keep_days"])


@dataclass(frozen=True)
class NewLocalLabels:
    """Where a released public version may gain a local version label it was not released
    with: in every index directory (``everywhere``), or in ``indexes``.

    PEP 440 ``==2.7.0`` matches ``2.7.0+rocm6.4`` and installers prefer the highest local
    version, so a new label changes what that pin installs. Builds of one public version for
    several platform stacks (``+rocm6.3``, then ``+rocm6.4``) are the case for allowing it; a
    version released without a label never gains one, whatever this says
    (:func:`~wheelgate.core.planning.check_local_labels`).
    """

    everywhere: bool = False
    indexes: frozenset[str] = frozenset()

    def allowed_in(self, index: str) -> bool:
        return self.everywhere or index in self.indexes

    def to_json(self) -> str:
        """The value of ``WHEELGATE_ALLOW_NEW_LOCAL_LABELS``."""
        return json.dumps(sorted(self.indexes) if self.indexes else self.everywhere)

    @classmethod
    def from_value(cls, value: object, *, name: str) -> NewLocalLabels:
        """Read ``true``, ``false`` or a list of index directories (``None``: ``false``).
        ``name`` names the setting in errors. Raises :class:`SettingsError`."""
        if value is None or isinstance(value, bool):
            return cls(everywhere=bool(value))
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SettingsError(f"{name} must be true, false or a list of index directories")
        try:
            return cls(indexes=frozenset(check_index(v) for v in value))
        except LayoutError as exc:
            raise SettingsError(f"{name}: {exc}") from exc
