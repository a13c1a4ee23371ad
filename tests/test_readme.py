"""The Python examples of the README and of docs/training.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TRAINING = ROOT / "docs" / "training.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
TRAINING_BLOCKS = re.findall(r"```python\n(.*?)```", TRAINING.read_text(), flags=re.S)


def test_readme_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, capsys):
    exec(
        compile(BLOCKS[index], f"README.md example {index + 1}", "exec"), {"__name__": "__readme__"}
    )


def test_training_doc_has_examples():
    assert TRAINING_BLOCKS


@pytest.mark.parametrize("index", range(len(TRAINING_BLOCKS)))
def test_training_doc_example_runs(index, monkeypatch):
    monkeypatch.chdir(ROOT)  # the example names the shipped policy by its repository path
    exec(
        compile(TRAINING_BLOCKS[index], f"docs/training.md example {index + 1}", "exec"),
        {"__name__": "__doc_example__"},
    )
