"""Reading the CloudWatch embedded metric format (EMF) documents Powertools prints."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class EmittedMetric:
    """One value of one metric as CloudWatch would store it: name, namespace, unit, value and
    the dimensions (name -> value) of the document it came in."""

    name: str
    namespace: str
    unit: str
    value: float
    dimensions: dict[str, str]


def json_objects(output: str) -> list[dict[str, Any]]:
    """The lines of ``output`` that are JSON objects (EMF documents and log lines), read."""
    objects = []
    for line in output.splitlines():
        try:
            document = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(document, dict):
            objects.append(document)
    return objects


def emf_documents(output: str) -> list[dict[str, Any]]:
    """The EMF documents among the lines of ``output`` (log lines and other JSON skipped)."""
    return [document for document in json_objects(output) if "_aws" in document]


def emitted(output: str) -> list[EmittedMetric]:
    """Every metric value in the EMF documents of ``output``, one per value (Powertools writes
    a metric added twice in one invocation as a list of values)."""
    found = []
    for document in emf_documents(output):
        for directive in document["_aws"]["CloudWatchMetrics"]:
            (dimension_set,) = directive["Dimensions"]
            dimensions = {name: document[name] for name in dimension_set}
            for metric in directive["Metrics"]:
                raw = document[metric["Name"]]
                for value in raw if isinstance(raw, list) else [raw]:
                    found.append(
                        EmittedMetric(
                            name=metric["Name"],
                            namespace=directive["Namespace"],
                            unit=metric["Unit"],
                            value=float(value),
                            dimensions=dimensions,
                        )
                    )
    return found


def values(output: str, name: str) -> list[float]:
    """The values metric ``name`` got in ``output``."""
    return [m.value for m in emitted(output) if m.name == name]
