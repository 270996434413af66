"""The example workflows as a team copies them: the placeholders of ``uses:`` and ``ref:``
filled (examples/github/README.md, "The wheelgate actions"), nothing else changed.

One helper for every test that holds a copy of the examples to ``check-workflows``, which
names each placeholder left in.
"""

from __future__ import annotations

#: The owner of the repository that holds WheelGate, as a copying team writes it.
OWNER = "example-org"
#: The commit of the WheelGate release the stack was deployed from (any 40-hex commit).
COMMIT = "0123456789abcdef0123456789abcdef01234567"
#: Each placeholder the examples hold, and what a copying team puts in its place.
FILLED = {"<owner>": OWNER, "<commit>": COMMIT}


def fill_placeholders(text: str) -> str:
    """``text`` (a workflow of examples/github) with every placeholder filled."""
    for placeholder, value in FILLED.items():
        text = text.replace(placeholder, value)
    return text
