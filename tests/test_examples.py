"""The runnable examples run and say they worked."""

import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def run_example(name, export_dir):
    """Run `examples/<name>` with `export_dir`; it must exit with 0. Returns what it printed."""
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), str(export_dir)], capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.full
def test_serve_wordpiece_example(tmp_path):
    assert "served predictions match" in run_example("serve_wordpiece.py", tmp_path / "model")
    assert (tmp_path / "model" / "saved_model.pb").is_file()


@pytest.mark.full
def test_demo_is_the_main_job(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "tfsubword.cli", "demo", "--export-dir", str(tmp_path / "model")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "served token ids match the ids computed in this process" in result.stdout
    assert "keras layers can tokenize text inside the tensorflow graph ." in result.stdout
    assert (tmp_path / "model" / "saved_model.pb").is_file()


@pytest.mark.full
def test_bert_classifier_example_exports_a_string_signature(tmp_path):
    export = tmp_path / "classifier"
    assert "served predictions match" in run_example("bert_classifier.py", export)
    saved_model_cli = pathlib.Path(sys.executable).with_name("saved_model_cli")
    shown = subprocess.run(
        [str(saved_model_cli), "show", "--all", "--dir", str(export)], capture_output=True, text=True, timeout=600
    )
    assert shown.returncode == 0, shown.stderr[-3000:]
    serving = shown.stdout[shown.stdout.index("signature_def['serving_default']") :]
    inputs = serving[serving.index("inputs") : serving.index("outputs")]
    assert "dtype: DT_STRING" in inputs and "shape: (-1)" in inputs


@pytest.mark.full
def test_subword_regularization_example_samples_in_fit_only(tmp_path):
    printed = run_example("subword_regularization.py", tmp_path / "model")
    assert "training=True draws a new segmentation at each call: True" in printed
    assert "training=False gives one segmentation: True" in printed
    assert "served predictions match" in printed
