"""The distribution ships every package: a non-editable install must hold all of tfsubword."""

import pathlib
import subprocess
import sys

import tomllib

REPOSITORY = pathlib.Path(__file__).resolve().parents[1]


def test_every_package_directory_is_listed_in_pyproject():
    listed = set(tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(path.parent.relative_to(REPOSITORY).parts) for path in (REPOSITORY / "tfsubword").rglob("__init__.py")
    }
    assert found == listed


def test_the_package_imports_no_comparator_and_no_beam():
    """Every module but `tfsubword.beam` (the optional extra) imports only TensorFlow, Keras, NumPy and
    the standard library: none of the comparators the tests use, nor Apache Beam."""
    code = (
        "import importlib, pkgutil, sys, tfsubword\n"
        "for module in pkgutil.walk_packages(tfsubword.__path__, 'tfsubword.'):\n"
        "    if module.name != 'tfsubword.beam':\n"
        "        importlib.import_module(module.name)\n"
        "print(' '.join(sorted({name.split('.')[0] for name in sys.modules})))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPOSITORY)
    loaded = set(result.stdout.split())
    comparators = {"apache_beam", "tensorflow_text", "keras_hub", "tokenizers", "transformers", "sentencepiece", "bert"}
    assert "tfsubword" in loaded and not loaded & comparators
