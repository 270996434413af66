"""A ``deps.yml``'s YAML nodes with their line numbers, so that every problem names its line."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import yaml

from wheelgate.deps.problems import DepsProblem

#: Where a node is in the document: its keys and list positions from the top.
Path = tuple[str | int, ...]


def walk_nodes(
    node: yaml.Node, path: Path, lines: dict[Path, int], problems: list[DepsProblem]
) -> Iterator[tuple[Path, yaml.Node]]:
    """Every node under ``node`` (at ``path``) with its path, recording each path's line in
    ``lines`` and each key given twice in a mapping in ``problems``."""
    lines[path] = node.start_mark.line + 1
    yield path, node
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                problems.append(
                    DepsProblem(
                        line,
                        label_of(path) or "(top level)",
                        f"field {key!r} is given twice (first at line {seen[key]})",
                    )
                )
            seen.setdefault(key, line)
            yield from walk_nodes(value_node, (*path, key), lines, problems)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            yield from walk_nodes(item, (*path, i), lines, problems)


def label_of(path: Path) -> str:
    """``path`` as a problem names its entry: ``files[2].key``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def line_of(lines: Mapping[Path, int], path: Path) -> int:
    """The line of ``path``, or of its nearest ancestor ``lines`` knows (1 if none)."""
    while path not in lines and path:
        path = path[:-1]
    return lines.get(path, 1)
