"""The part of the build that pyproject.toml cannot say: the packages found under core/ plus one data package.

knowledge/ stays at the repository root, where people edit it; the wheel ships it as the package data of
`core._knowledge` (core/_knowledge/ once installed), where core/resources.py finds it. Everything else about
the project is in pyproject.toml."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["core", "core.*"]), "core._knowledge"],
    package_dir={"core._knowledge": "knowledge"},
    package_data={"core._knowledge": ["**/*"]},
)
