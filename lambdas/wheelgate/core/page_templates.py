"""The one Jinja2 environment the pages (status site, run history) are rendered in.

Each package that renders pages keeps its templates in its own ``templates/`` folder (package
data, also in the promoter function's asset) and asks :func:`template_environment` for an
environment over them: autoescape on for every template whatever its name (a value is never
markup), an undefined name an error rather than a blank, block tags leaving no blank lines, and
the display filters of :mod:`wheelgate.core.display`.

Jinja2 comes with the promoter (the ``promoter`` extra and its layer): only what renders a page
imports this module.
"""

from __future__ import annotations

from typing import Final

from jinja2 import Environment, PackageLoader, StrictUndefined

from wheelgate.core.display import human_size, safe_url, shown_time

#: The templates' folder in a package that renders pages.
TEMPLATES: Final = "templates"


def template_environment(package: str) -> Environment:
    """A new environment over the templates of ``package`` (``wheelgate.status``), with the
    display filters ``human_size``, ``shown_time`` and ``safe_url``. Raises ``ValueError``
    (Jinja2's) when ``package`` has no ``templates`` folder."""
    env = Environment(
        loader=PackageLoader(package, TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(human_size=human_size, shown_time=shown_time, safe_url=safe_url)
    return env
