"""The distribution ships every package: a non-editable install must hold all of tfsubword."""

import pathlib

import tomllib

REPOSITORY = pathlib.Path(__file__).resolve().parents[1]


def test_every_package_directory_is_listed_in_pyproject():
    listed = set(tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(path.parent.relative_to(REPOSITORY).parts) for path in (REPOSITORY / "tfsubword").rglob("__init__.py")
    }
    assert found == listed
