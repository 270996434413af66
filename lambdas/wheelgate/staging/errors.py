"""The error of staging: input or a staged run that cannot be staged (``wheelgate stage``)."""

from __future__ import annotations


class StageError(ValueError):
    """Input that cannot be staged; nothing was uploaded."""
