"""WheelGate's CDK construct: ``WheelGate(scope, id, props)`` with typed ``WheelGateProps``.

In this repository the package is ``stacks``; installed (``pip install 'wheelgate[cdk]'``) it is
``wheelgate.cdk``. The names below are imported on first use, so reading the settings
(:mod:`.props`, :mod:`.setting_types`, :mod:`.setting_errors`) or building the layer
(:mod:`.promoter_layer`) does not load the whole construct.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .context import Deployment, deployment_from_context, props_from_context
    from .props import WheelGateProps
    from .setting_errors import ConfigError
    from .setting_types import CustomDomain, CustomDomains, FanOutSettings, NightlyRetention
    from .wheelgate import WheelGate

#: Public name -> the module of this package that defines it.
_EXPORTS = {
    "WheelGate": "wheelgate",
    "WheelGateProps": "props",
    "ConfigError": "setting_errors",
    "CustomDomain": "setting_types",
    "CustomDomains": "setting_types",
    "FanOutSettings": "setting_types",
    "NightlyRetention": "setting_types",
    "Deployment": "context",
    "deployment_from_context": "context",
    "props_from_context": "context",
}
__all__ = [
    "ConfigError",
    "CustomDomain",
    "CustomDomains",
    "Deployment",
    "FanOutSettings",
    "NightlyRetention",
    "WheelGate",
    "WheelGateProps",
    "deployment_from_context",
    "props_from_context",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
