"""scripts/check_shape.py, run as CI runs it, on small made-up checkouts: it finds what it must, and only that."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_shape.py"


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"s3task/__init__.py": "", "ui/__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def check(root: Path) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True, text=True, timeout=60, check=False
    )
    return done.returncode, done.stdout.splitlines()


def function(name: str, lines: int) -> str:
    """A function of exactly ``lines`` lines, ``def`` line included."""
    return f"def {name}():\n" + "    x = 1\n" * (lines - 1)


def test_a_clean_tree_passes(tmp_path: Path) -> None:
    root = write(
        tmp_path, {"s3task/a.py": "import s3task.b\n", "s3task/b.py": "X = 1\n", "ui/page.py": "import s3task.a\n"}
    )
    assert check(root) == (0, [])


def test_a_circle_closed_by_a_lazy_import_inside_a_function_is_found(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "s3task/low.py": "def announce():\n    from s3task import high\n    return high\n",
            "s3task/high.py": "from __future__ import annotations\n\nfrom s3task.low import announce\n",
        },
    )
    rc, out = check(root)
    assert rc == 1
    assert out == [
        "s3task/high.py:3: runtime import circle s3task.high -> s3task.low (s3task/high.py:3)"
        " -> s3task.high (s3task/low.py:2) (no import circles)"
    ]


def test_a_circle_through_relative_imports_in_ui_is_found(tmp_path: Path) -> None:
    root = write(tmp_path, {"ui/context.py": "from . import nav\n", "ui/nav.py": "from .context import KEY\n"})
    rc, out = check(root)
    assert rc == 1 and len(out) == 1 and "ui.context -> ui.nav" in out[0] and out[0].startswith("ui/context.py:1: ")


def test_an_import_only_under_type_checking_makes_no_circle(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "s3task/a.py": "import s3task.b\n",
            "s3task/b.py": """\
                from typing import TYPE_CHECKING
                import typing

                if TYPE_CHECKING:
                    from s3task.a import A
                if typing.TYPE_CHECKING:
                    import s3task.a
            """,
        },
    )
    assert check(root) == (0, [])


def test_the_else_branch_of_type_checking_runs_so_it_counts(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "s3task/a.py": "import s3task.b\n",
            "s3task/b.py": """\
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    pass
                else:
                    import s3task.a
            """,
        },
    )
    rc, out = check(root)
    assert rc == 1 and "s3task.a -> s3task.b" in out[0]


def test_import_module_with_a_constant_name_counts(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "s3task/a.py": "import s3task.b\n",
            "s3task/b.py": "import importlib\n\ndef f():\n    return importlib.import_module('s3task.a')\n",
        },
    )
    rc, out = check(root)
    assert rc == 1 and "(s3task/b.py:4)" in out[0]


def test_a_module_importing_its_own_package_is_no_circle_but_a_third_module_closing_one_is(tmp_path: Path) -> None:
    files = {
        "s3task/store/__init__.py": "from .base import Store\n\ndef open_local():\n    from .local import Local\n",
        "s3task/store/base.py": "class Store: ...\n",
        "s3task/store/local.py": "from s3task.store import Store\nfrom . import base\n",
    }
    assert check(write(tmp_path / "own", files)) == (0, [])
    # importing s3task.store.local runs s3task.store first: an edge to the package, which here closes a circle
    files["s3task/store/base.py"] = "import s3task.layout\n"
    files["s3task/layout.py"] = "def f():\n    import s3task.store.local\n"
    rc, out = check(write(tmp_path / "third", files))
    assert rc == 1 and "s3task.layout -> s3task.store (s3task/layout.py:2)" in out[0]


def test_a_module_over_400_lines_is_found_and_one_of_400_is_not(tmp_path: Path) -> None:
    root = write(tmp_path, {"s3task/big.py": "x = 1\n" * 401, "s3task/full.py": "x = 1\n" * 400})
    assert check(root) == (1, ["s3task/big.py:1: module is 401 lines (limit 400)"])


def test_sizes_are_checked_in_ui_and_pages_too_and_a_page_holds_200_lines(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "ui/big.py": "x = 1\n" * 401,
            "ui/long.py": function("long", 61),
            "ui/fits.py": "x = 1\n" * 340 + function("fits", 60),
            "pages/page.py": "x = 1\n" * 201,
            "pages/layout.py": "x = 1\n" * 200,
            "tests/huge.py": "x = 1\n" * 900,  # tests are not held to it
        },
    )
    assert check(root) == (
        1,
        [
            "ui/big.py:1: module is 401 lines (limit 400)",
            "ui/long.py:1: function long is 61 lines (limit 60)",
            "pages/page.py:1: page is 201 lines (limit 200)",
        ],
    )


def test_a_function_over_60_lines_is_found_and_one_of_60_is_not(tmp_path: Path) -> None:
    text = (
        "class Service:\n    pass\n\n\n"
        + function("fits", 60)
        + textwrap.indent("class Inner:\n" + textwrap.indent(function("long", 61), "    "), "")
    )
    root = write(tmp_path, {"s3task/funcs.py": text})
    assert check(root) == (1, ["s3task/funcs.py:66: function Inner.long is 61 lines (limit 60)"])


def test_a_nested_function_counts_in_the_outer_one_and_is_checked_alone(tmp_path: Path) -> None:
    text = "def outer():\n" + textwrap.indent(function("inner", 61), "    ") + "    return inner\n"
    rc, out = check(write(tmp_path, {"s3task/nest.py": text}))
    assert rc == 1
    assert out == [
        "s3task/nest.py:1: function outer is 63 lines (limit 60)",
        "s3task/nest.py:2: function outer.inner is 61 lines (limit 60)",
    ]


def test_a_function_that_is_mostly_a_data_literal_is_exempt_but_not_when_the_literal_holds_code(
    tmp_path: Path,
) -> None:
    table = "".join(f"        'key{i}': ('{i}', -{i}, None, [KIND.A, {{1, 2}}]),\n" for i in range(80))
    data = "def table():\n    return {\n" + table + "    }\n"
    code = data.replace("'key1':", "'key1': len('x'), 'k':")  # one call makes the display code
    root = write(tmp_path, {"s3task/data.py": data, "s3task/code.py": code})
    assert check(root) == (1, ["s3task/code.py:1: function table is 83 lines (limit 60)"])


def test_a_data_literal_does_not_hide_long_code_around_it(tmp_path: Path) -> None:
    text = function("long", 61) + "    return [\n" + "        1,\n" * 20 + "    ]\n"
    assert check(write(tmp_path, {"s3task/mixed.py": text})) == (
        1,
        ["s3task/mixed.py:1: function long is 62 lines (limit 60)"],
    )


LAYERS = """
[tool.check_shape]
layers = [["s3task", "s3task.low"], ["s3task.mid", "s3task.pkg"], ["s3task.top"]]
"""


def test_an_import_of_a_higher_layer_is_found_and_imports_downward_pass(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "pyproject.toml": LAYERS,
            "s3task/low.py": "X = 1\n",
            "s3task/mid.py": "from s3task import low\n",
            "s3task/pkg/__init__.py": "",
            "s3task/pkg/part.py": "def later():\n    from s3task import top\n    return top\n",
            "s3task/top.py": "from s3task import low, mid\n",
        },
    )
    rc, out = check(root)
    assert rc == 1
    assert out == [
        "s3task/pkg/part.py:2: s3task.pkg.part (layer 2) imports s3task.top (layer 3), a layer above it"
        " (dependencies point down)"
    ]


def test_a_module_in_no_layer_is_found_once_layers_are_declared(tmp_path: Path) -> None:
    files = {"s3task/low.py": "X = 1\n", "s3task/mid.py": "", "s3task/top.py": "", "s3task/stray.py": ""}
    assert check(write(tmp_path / "undeclared", files)) == (0, [])  # no layers: only circles and sizes
    rc, out = check(write(tmp_path / "declared", {"pyproject.toml": LAYERS, **files}))
    assert rc == 1
    assert out == ["s3task/stray.py:1: s3task.stray is in no layer (pyproject.toml [tool.check_shape])"]


APP_LAYERS = """
[tool.check_shape]
layers = [["s3task"], ["ui"], ["pages"]]
forbidden = {s3task = ["streamlit"]}
"""


def test_the_core_imports_neither_the_app_nor_streamlit_and_ui_does_not_import_pages(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "pyproject.toml": APP_LAYERS,
            "s3task/core.py": "def later():\n    from ui import helper\n    return helper\n",
            "s3task/drawn.py": "import streamlit as st\n",
            "s3task/typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import streamlit\n",
            "ui/helper.py": "import streamlit\n",
            "ui/back.py": "from pages import home\n",
            "pages/home.py": "from ui import helper\nimport s3task.core\n",
        },
    )
    rc, out = check(root)
    assert rc == 1
    assert sorted(out) == [
        "s3task/core.py:2: s3task.core (layer 1) imports ui (layer 2), a layer above it (dependencies point down)",
        "s3task/core.py:2: s3task.core (layer 1) imports ui.helper (layer 2), a layer above it"
        " (dependencies point down)",
        "s3task/drawn.py:1: s3task.drawn imports streamlit (not below its layer)",
        "ui/back.py:1: ui.back (layer 2) imports pages.home (layer 3), a layer above it (dependencies point down)",
    ]


def test_nobody_outside_the_tasks_package_reaches_past_the_service_to_its_parts(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "ui/result.py": "def size(service, key):\n    return service.store.head(key).size\n",
            "pages/new.py": "def drop(ctx, record):\n    ctx.service.transitions.discard(record)\n",
            "s3task/cli.py": "def parts(self):\n    return self.service._inputs\n",
            "s3task/web.py": "def mount(service, key):\n    return make(service.store, service.layout.prefix, key)\n",
            "s3task/tasks/__init__.py": "",
            "s3task/tasks/service.py": "def inside(service):\n    return service.transitions.get\n",
        },
    )
    rc, out = check(root)
    assert rc == 1
    assert sorted(out) == [
        "pages/new.py:2: reaches past the service to its part 'transitions' (one method an action on TaskService)",
        "s3task/cli.py:2: reaches past the service to its part '_inputs' (one method an action on TaskService)",
        "ui/result.py:2: reaches past the service to its part 'store' (one method an action on TaskService)",
    ]
