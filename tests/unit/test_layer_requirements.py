"""The promoter layer's boto3 and botocore: pinned together, to the versions the CLI uses.

The layer's packages come first on the function's path: an unpinned botocore pulled in by a
dependency would shadow the runtime's, under the runtime's boto3, and conditional CopyObject
needs a recent botocore. So the layer brings both, pinned to requirements.txt's versions.
"""

from __future__ import annotations

from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PINNED_TOGETHER = ("boto3", "botocore")


def pins(path: Path) -> dict[str, str]:
    """Each requirement of ``path`` with its exact ``==`` version ("" when not pinned so)."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        specs = list(requirement.specifier)
        exact = specs[0].version if len(specs) == 1 and specs[0].operator == "==" else ""
        found[requirement.name.lower()] = exact
    return found


def test_layer_pins_boto3_and_botocore_as_the_cli_does() -> None:
    layer = pins(ROOT / "stacks" / "layer" / "requirements.txt")
    cli = pins(ROOT / "requirements.txt")
    for name in PINNED_TOGETHER:
        assert layer.get(name), f"stacks/layer/requirements.txt must pin {name} with =="
        assert layer[name] == cli.get(name), (
            f"{name}: layer {layer[name]}, requirements.txt {cli.get(name) or 'not pinned'}"
        )


def test_layer_pins_what_the_tests_ran_with() -> None:
    # The function renders its status pages with the layer's Jinja2 and MarkupSafe: the
    # versions the dev venv's tests rendered them with. So for every package both pin.
    layer = pins(ROOT / "stacks" / "layer" / "requirements.txt")
    cli = pins(ROOT / "requirements.txt")
    assert {"jinja2", "markupsafe"} <= layer.keys()
    differ = {name: (v, cli[name]) for name, v in layer.items() if name in cli and v != cli[name]}
    assert differ == {}
