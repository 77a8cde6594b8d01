"""docs/ARCHITECTURE.md's module map is the code's: each module of s3task/, ui/ and pages/ in one line, from
its own docstring (scripts/module_map.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "module_map.py"


def _script():
    spec = importlib.util.spec_from_file_location("module_map", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_map_names_every_module_as_its_docstring_does() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    for module in ("s3task.tasks.service", "s3task.input_format", "ui.step_builder", "pages.new_task"):
        assert f"| `{module}` |" in doc


def test_a_new_module_without_a_docstring_and_a_stale_map_each_fail_the_check(tmp_path: Path) -> None:
    mapper = _script()
    for package in mapper.PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(f'"""The {package} package. More words."""\n')
    (tmp_path / "ui" / "bare.py").write_text("x = 1\n")
    rows = mapper.modules(tmp_path)
    assert ("ui.bare", mapper.NONE) in rows and ("ui", "The ui package") in rows
    doc = f"# Map\n\n{mapper.BEGIN}\n{mapper.END}\n"
    assert mapper.with_map(doc, rows) != doc  # the map of these modules is not the empty one
    assert "| `ui.bare` | (no docstring) |" in mapper.with_map(doc, rows)


def test_the_first_sentence_is_one_line_and_a_long_one_is_cut_at_a_space() -> None:
    mapper = _script()
    assert mapper.first_sentence("Reads the file, e.g. a CSV.\n\nMore.") == "Reads the file, e.g. a CSV"
    assert mapper.first_sentence("The :class:`~s3task.x.Y` part\nof it. Then more.") == "The `s3task.x.Y` part of it"
    long = mapper.first_sentence("word " * 100)
    assert long.endswith(" …") and len(long) <= mapper.LONGEST + 2
