"""WheelGate deployment settings: the ``wheelgate`` object of the ``cdk.json`` context.

Every key is required, so a deployment states all of its choices in one place; only the
nullable keys (``oidc_provider_arn``, ``break_glass_role_arn``, ``alarm_email``,
``custom_domain``) may be ``null`` or left out (CDK drops ``null`` context values anyway).

Any key can be overridden on the command line with
``-c wheelgate.<key>=<value>`` (the value is parsed as JSON when it is valid JSON).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from wheelgate.layout import LayoutError, check_index

CONTEXT_KEY = "wheelgate"

RETENTION_MODES = ("GOVERNANCE", "COMPLIANCE")


class ConfigError(ValueError):
    """The ``cdk.json`` context does not describe a deployable WheelGate."""


@dataclass(frozen=True)
class CustomDomain:
    """A domain name served by a distribution and its ACM certificate (in us-east-1)."""

    domain_name: str
    certificate_arn: str


@dataclass(frozen=True)
class WheelGateConfig:
    """Typed view of the ``wheelgate`` context object; see ``docs/deploy.md`` for each key."""

    github_repo: str
    build_refs: tuple[str, ...]
    dev_sub_patterns: tuple[str, ...]
    staging_run_expiry_days: int
    nightly_retention_mode: str
    nightly_retention_days: int
    nightly_noncurrent_version_days: int
    access_log_expiry_days: int
    log_retention_days: int
    index_dirs: tuple[str, ...]
    required_tests: Mapping[str, tuple[str, ...]]
    oidc_provider_arn: str | None
    dev_bucket_name: str
    break_glass_role_arn: str | None
    alarm_email: str | None
    nightly_domain: CustomDomain | None
    staging_domain: CustomDomain | None

    @property
    def build_subs(self) -> tuple[str, ...]:
        """GitHub OIDC ``sub`` patterns of workflows allowed to build and report."""
        return tuple(f"repo:{self.github_repo}:ref:{ref}" for ref in self.build_refs)

    @classmethod
    def from_context(cls, get: Callable[[str], Any]) -> WheelGateConfig:
        """Read the settings through ``get`` (``app.node.try_get_context``).

        Raises :class:`ConfigError` naming the first missing or malformed key.
        """
        raw = get(CONTEXT_KEY)
        if raw is not None and not isinstance(raw, Mapping):
            raise ConfigError(f"cdk.json context {CONTEXT_KEY!r} must be an object")
        values: Mapping[str, Any] = raw or {}
        reader = _Reader(values, get)
        mode = reader.string("nightly_retention", "mode")
        if mode not in RETENTION_MODES:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.nightly_retention.mode is {mode!r}; "
                f"use one of {', '.join(RETENTION_MODES)}"
            )
        index_dirs = reader.strings("index_dirs")
        try:
            for index in index_dirs:
                check_index(index)
        except LayoutError as exc:
            raise ConfigError(f"context key {CONTEXT_KEY}.index_dirs: {exc}") from exc
        required_tests = reader.tests("required_tests")
        unknown = sorted(set(required_tests) - set(index_dirs))
        if unknown:
            raise ConfigError(
                f"context key {CONTEXT_KEY}.required_tests names index directories that are "
                f"not in {CONTEXT_KEY}.index_dirs: {', '.join(unknown)}"
            )
        domains = reader.optional_mapping("custom_domain") or {}
        return cls(
            github_repo=reader.string("github_repo"),
            build_refs=reader.strings("build_refs"),
            dev_sub_patterns=reader.strings("dev_sub_patterns"),
            staging_run_expiry_days=reader.positive_int("staging_run_expiry_days"),
            nightly_retention_mode=mode,
            nightly_retention_days=reader.positive_int("nightly_retention", "days"),
            nightly_noncurrent_version_days=reader.positive_int("nightly_noncurrent_version_days"),
            access_log_expiry_days=reader.positive_int("access_log_expiry_days"),
            log_retention_days=reader.positive_int("log_retention_days"),
            index_dirs=index_dirs,
            required_tests=required_tests,
            oidc_provider_arn=reader.optional_string("oidc_provider_arn"),
            dev_bucket_name=reader.string("dev_bucket_name"),
            break_glass_role_arn=reader.optional_string("break_glass_role_arn"),
            alarm_email=reader.optional_string("alarm_email"),
            nightly_domain=_domain(domains, "nightly"),
            staging_domain=_domain(domains, "staging"),
        )


def _domain(domains: Mapping[str, Any], name: str) -> CustomDomain | None:
    entry = domains.get(name)
    if entry is None:
        return None
    where = f"{CONTEXT_KEY}.custom_domain.{name}"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"context key {where} must be an object or null")
    for key in ("domain_name", "certificate_arn"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise ConfigError(f"context key {where}.{key} is missing; set it in cdk.json")
    return CustomDomain(domain_name=entry["domain_name"], certificate_arn=entry["certificate_arn"])


class _Reader:
    """Looks keys up with ``-c wheelgate.<key>=...`` overrides first, then ``cdk.json``."""

    def __init__(self, values: Mapping[str, Any], get: Callable[[str], Any]) -> None:
        self._values = values
        self._get = get

    def _lookup(self, *path: str, nullable: bool = False) -> Any:
        name = ".".join(path)
        override = self._get(f"{CONTEXT_KEY}.{name}")
        if override is not None:
            return _parse_override(override)
        node: Any = self._values
        for part in path:
            if not isinstance(node, Mapping) or part not in node:
                if nullable:
                    return None
                raise ConfigError(
                    f"cdk.json context key {CONTEXT_KEY}.{name} is missing: add it under "
                    f'"context" -> "{CONTEXT_KEY}" in cdk.json or pass '
                    f"-c {CONTEXT_KEY}.{name}=<value> (see docs/deploy.md)"
                )
            node = node[part]
        return node

    def _fail(self, path: tuple[str, ...], expected: str) -> ConfigError:
        return ConfigError(f"context key {CONTEXT_KEY}.{'.'.join(path)} must be {expected}")

    def string(self, *path: str) -> str:
        value = self._lookup(*path)
        if not isinstance(value, str) or not value:
            raise self._fail(path, "a non-empty string")
        return value

    def optional_string(self, *path: str) -> str | None:
        value = self._lookup(*path, nullable=True)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise self._fail(path, "a string or null")
        return value

    def positive_int(self, *path: str) -> int:
        value = self._lookup(*path)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self._fail(path, "a positive integer")
        return value

    def strings(self, *path: str) -> tuple[str, ...]:
        value = self._lookup(*path)
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, str) and v for v in value)
        ):
            raise self._fail(path, "a non-empty list of strings")
        return tuple(value)

    def optional_mapping(self, *path: str) -> Mapping[str, Any] | None:
        value = self._lookup(*path, nullable=True)
        if value is not None and not isinstance(value, Mapping):
            raise self._fail(path, "an object or null")
        return value

    def tests(self, *path: str) -> Mapping[str, tuple[str, ...]]:
        value = self._lookup(*path)
        if not isinstance(value, Mapping) or not all(
            isinstance(v, list) and all(isinstance(t, str) for t in v) for v in value.values()
        ):
            raise self._fail(path, "an object mapping index directories to lists of test names")
        return {str(k): tuple(v) for k, v in value.items()}


def _parse_override(value: Any) -> Any:
    # `-c key=value` always arrives as a string; JSON lets lists, numbers and null through too.
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value
