"""The wheelgate distribution's packages; everything else is in pyproject.toml.

The ``wheelgate`` package lives under ``lambdas/``; the CDK construct in ``stacks/`` (a fixed
top-level folder of this repository) ships inside it as ``wheelgate.cdk``, for CDK apps that
``pip install 'wheelgate[cdk]'`` and compose ``WheelGate`` (docs/deploy.md). ``stacks/``
imports its own modules relatively, so it works under either name. Folders of data files
(``schemas``, ``functions``, ``layer``) are packages too, so their files ship as package data.
"""

from setuptools import find_namespace_packages, setup

CONSTRUCT_PACKAGE = "wheelgate.cdk"
CONSTRUCT_DATA = ("functions", "layer")

setup(
    packages=[
        *find_namespace_packages(
            "lambdas", include=["wheelgate", "wheelgate.*"], exclude=["*.__pycache__"]
        ),
        CONSTRUCT_PACKAGE,
        *(f"{CONSTRUCT_PACKAGE}.{folder}" for folder in CONSTRUCT_DATA),
    ],
    package_dir={"": "lambdas", CONSTRUCT_PACKAGE: "stacks"},
)
