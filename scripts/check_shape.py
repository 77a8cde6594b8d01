"""The code's shape, checked in CI: no import circle, no long module, no long function.

    python scripts/check_shape.py [--root DIR]

Prints each violation on one line (``file:line: what (limit)``) and exits 1 if
there is any. The rules, read from the source with ``ast`` (nothing is imported):

- **No runtime import circle** among the modules of ``s3task/``, ``ui/`` and
  ``pages/`` (one graph over all three, so a circle through them is found too). Every import
  statement counts wherever it is, a lazy one inside a function included, and so
  does ``importlib.import_module("a.constant.name")``. Imports in the body of
  ``if TYPE_CHECKING:`` do not count: they never run. Importing ``a.b.c`` runs
  ``a``, ``a.b`` and ``a.b.c``, so it is an edge to each of them — except to the
  importer's own packages, which Python has run before the importer anyway (a
  module reaching into its own package's ``__init__`` is no new dependency; a
  package's ``__init__`` importing one of its modules is one, as any import).
- **No module in s3task/ or ui/ over 400 lines, no page in pages/ over 200**
  (physical lines, as ``wc -l``): a page is layout; what it does lives below it.
- **No function in s3task/, ui/ or pages/ over 60 lines**, counted from its ``def`` line to its
  last line (decorators aside; docstring, comments and blank lines included;
  nested functions count in the outer one and are checked on their own too).
  Data literals aside: a multi-line dict, list, tuple or set display whose
  elements are only constants, names, attributes and further such displays
  counts as its first line alone, so a function that is mostly a table is
  judged by the code around the table. A display holding a call, a
  comprehension or any other expression is code and counts in full.
- **Dependencies point down**, where the checkout declares its layers in
  ``pyproject.toml`` (``[tool.check_shape] layers``: a list of layers, bottom
  first, each a list of module or package names such as ``"s3task.store"``): a
  module never imports, at run time, one of a higher layer. Each module is in
  the layer of the longest name that covers it (a top-level name such as
  ``"s3task"`` covers only its ``__init__`` where names inside it are declared
  too; ``"ui"``, declared alone, covers the package); a module of a layered package that
  no layer names is a violation of its own, so a new module is placed before it
  can point anywhere. ``ui`` and ``pages`` are layers too, above the core: the
  core imports neither, and ``ui`` does not import ``pages``.
- **No framework below its layer**: ``[tool.check_shape] forbidden`` maps a
  package to the outside packages its modules never import at run time (the core
  never imports ``streamlit``: the app is one door of several).
- **Nobody reaches past the service's door**: outside ``s3task/tasks/``, no code
  goes through a ``service`` to one of its parts (``service.store.head(…)``,
  ``ctx.service.transitions.discard(…)``, ``service._inputs``): each action is a
  method of :class:`~s3task.tasks.TaskService`. The parts are the names in
  :data:`DOOR_PARTS`, and any name starting with ``_``.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MODULE_LINES = 400
PAGE_LINES = 200
FUNCTION_LINES = 60
CIRCLE_PACKAGES = ("s3task", "ui", "pages")
SIZE_PACKAGES = ("s3task", "ui", "pages")
#: The service's parts, which only s3task/tasks/ may reach.
#: (``steps``, ``inboxes`` and ``recipes`` are public parts of the door, each with its own typed methods.)
DOOR_PARTS = frozenset({"store", "transitions", "inputs", "outputs", "corrections", "resumable", "records", "urls",
                        "browser"})  # fmt: skip

_DISPLAYS = (ast.Dict, ast.List, ast.Tuple, ast.Set)


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    what: str
    limit: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what} ({self.limit})"


@dataclass(frozen=True)
class Module:
    name: str
    path: Path  # relative to the root
    is_package: bool


def find_modules(root: Path, packages: tuple[str, ...]) -> dict[str, Module]:
    mods: dict[str, Module] = {}
    for package in packages:
        if not (root / package).is_dir():
            continue
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root)
            parts = list(rel.with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            mods[".".join(parts)] = Module(".".join(parts), rel, is_package)
    return mods


# --- import circles ----------------------------------------------------------------------------------------


def _typing_only_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside the body of an ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
            if name == "TYPE_CHECKING":
                out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def _absolute(mod: Module, level: int, name: str) -> str:
    """The absolute name of a relative import ``from <level dots><name> import …`` in ``mod``."""
    if not level:
        return name
    package = mod.name.split(".") if mod.is_package else mod.name.split(".")[:-1]
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _imported_names(mod: Module, node: ast.AST) -> list[str]:
    """The dotted names an import node may load (a ``from x import y`` may load the module ``x.y``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = _absolute(mod, node.level, node.module or "")
        return [base, *(f"{base}.{alias.name}" for alias in node.names)]
    if isinstance(node, ast.Call) and _is_import_module(node.func) and node.args:
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            dots = len(first.value) - len(first.value.lstrip("."))
            return [_absolute(mod, dots, first.value[dots:])]
    return []


def _is_import_module(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id == "import_module"


def _loaded_modules(name: str, mods: dict[str, Module]) -> set[str]:
    """Every known module importing ``name`` runs: the longest known prefix and its packages."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in mods}


def import_graph(root: Path, mods: dict[str, Module]) -> dict[str, dict[str, int]]:
    """module → {module it imports at run time → line of the first such import}."""
    graph: dict[str, dict[str, int]] = {}
    for mod in mods.values():
        tree = ast.parse((root / mod.path).read_text(encoding="utf-8"), str(mod.path))
        typing_only = _typing_only_nodes(tree)
        own_packages = _loaded_modules(mod.name, mods)  # itself and the packages above it
        edges: dict[str, int] = {}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            for name in _imported_names(mod, node):
                for target in _loaded_modules(name, mods) - own_packages:
                    line = getattr(node, "lineno", 1)
                    edges[target] = min(line, edges.get(target, line))
        graph[mod.name] = edges
    return graph


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Groups of two or more modules that reach each other (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, successors = work[-1]
            w = next(successors, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, {})))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def _shortest_cycle(graph: dict[str, dict[str, int]], group: list[str]) -> list[str]:
    """A shortest cycle inside the group, as ``[a, b, …, a]`` (the first in name order among the shortest)."""
    members = set(group)
    best: list[str] = []
    for start in group:
        came_from: dict[str, str] = {start: start}
        frontier = [start]
        found: list[str] = []
        while frontier and not found:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w == start and not found:
                        found = [v]
                        while found[-1] != start:
                            found.append(came_from[found[-1]])
                        found = [*reversed(found), start]
                    elif w in members and w not in came_from:
                        came_from[w] = v
                        nxt.append(w)
            frontier = nxt
        if found and (not best or len(found) < len(best)):
            best = found
    return best  # a strongly connected group of two or more always holds a cycle


def circle_violations(root: Path, packages: tuple[str, ...] = CIRCLE_PACKAGES) -> list[Violation]:
    mods = find_modules(root, packages)
    graph = import_graph(root, mods)
    out = []
    for group in strongly_connected(graph):
        cycle = _shortest_cycle(graph, group)
        hops = [cycle[0]] + [f"{b} ({mods[a].path}:{graph[a][b]})" for a, b in itertools.pairwise(cycle)]
        what = "runtime import circle " + " -> ".join(hops)
        rest = sorted(set(group) - set(cycle))
        if rest:
            what += f"; the same circle also takes in {', '.join(rest)}"
        first = mods[cycle[0]]
        out.append(Violation(str(first.path), graph[cycle[0]][cycle[1]], what, "no import circles"))
    return out


# --- layers ------------------------------------------------------------------------------------------------


def declared_layers(root: Path) -> list[list[str]]:
    """``[tool.check_shape] layers`` of the checkout's pyproject.toml, bottom first (none: no layer check)."""
    path = root / "pyproject.toml"
    if not path.is_file():
        return []
    config = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("check_shape", {})
    return [list(layer) for layer in config.get("layers", [])]


def _layer_of(name: str, rank: dict[str, int]) -> int | None:
    """The layer of the longest declared name covering ``name``. A top-level name covers its ``__init__`` only
    where names inside its package are declared too (``s3task``); alone, it covers the package (``ui``)."""
    parts = name.split(".")
    whole = not any(declared.startswith(parts[0] + ".") for declared in rank)
    for i in range(len(parts), 0 if whole or len(parts) == 1 else 1, -1):
        if ".".join(parts[:i]) in rank:
            return rank[".".join(parts[:i])]
    return None


def layer_violations(root: Path, packages: tuple[str, ...] = CIRCLE_PACKAGES) -> list[Violation]:
    layers = declared_layers(root)
    if not layers:
        return []
    rank = {name: i for i, layer in enumerate(layers) for name in layer}
    layered = {name.split(".")[0] for name in rank}
    mods = find_modules(root, packages)
    graph = import_graph(root, mods)
    out = []
    for name, mod in sorted(mods.items()):
        if name.split(".")[0] not in layered:
            continue
        mine = _layer_of(name, rank)
        if mine is None:
            out.append(Violation(str(mod.path), 1, f"{name} is in no layer", "pyproject.toml [tool.check_shape]"))
            continue
        for target, line in sorted(graph[name].items()):
            theirs = _layer_of(target, rank)
            if theirs is not None and theirs > mine:
                what = f"{name} (layer {mine + 1}) imports {target} (layer {theirs + 1}), a layer above it"
                out.append(Violation(str(mod.path), line, what, "dependencies point down"))
    return out


def declared_forbidden(root: Path) -> dict[str, list[str]]:
    """``[tool.check_shape] forbidden``: package → outside packages its modules never import at run time."""
    path = root / "pyproject.toml"
    if not path.is_file():
        return {}
    config = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("check_shape", {})
    return {str(k): [str(x) for x in v] for k, v in config.get("forbidden", {}).items()}


def forbidden_violations(root: Path, packages: tuple[str, ...] = CIRCLE_PACKAGES) -> list[Violation]:
    rules = declared_forbidden(root)
    out = []
    for mod in find_modules(root, packages).values():
        banned = {name for package, names in rules.items() if mod.name.split(".")[0] == package for name in names}
        if not banned:
            continue
        tree = ast.parse((root / mod.path).read_text(encoding="utf-8"), str(mod.path))
        typing_only = _typing_only_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            for name in _imported_names(mod, node):
                if name.split(".")[0] in banned:
                    what = f"{mod.name} imports {name.split('.')[0]}"
                    out.append(Violation(str(mod.path), getattr(node, "lineno", 1), what, "not below its layer"))
                    break
    return out


# --- the service's door ------------------------------------------------------------------------------------


def _names_service(node: ast.expr) -> bool:
    """``service``, ``self.service``, ``ctx.service``, ``_service`` …: an expression naming a service."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name.lstrip("_") == "service"


def door_violations(root: Path, packages: tuple[str, ...] = CIRCLE_PACKAGES) -> list[Violation]:
    out = []
    for mod in find_modules(root, packages).values():
        if mod.name == "s3task.tasks" or mod.name.startswith("s3task.tasks."):
            continue
        tree = ast.parse((root / mod.path).read_text(encoding="utf-8"), str(mod.path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _names_service(node.value)):
                continue
            if (node.attr in DOOR_PARTS and _reached_through(tree, node)) or node.attr.startswith("_"):
                what = f"reaches past the service to its part {node.attr!r}"
                out.append(Violation(str(mod.path), node.lineno, what, "one method an action on TaskService"))
    return out


def _reached_through(tree: ast.AST, part: ast.Attribute) -> bool:
    """Whether ``service.<part>`` is gone through (``service.store.head``) rather than handed on as a value."""
    return any(isinstance(n, ast.Attribute) and n.value is part for n in ast.walk(tree))


# --- sizes -------------------------------------------------------------------------------------------------


def _is_data(node: ast.expr) -> bool:
    """A constant, a name, an attribute, or a display of nothing else (``-1`` included)."""
    if isinstance(node, ast.Constant | ast.Name | ast.Attribute):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _is_data(node.operand)
    if isinstance(node, ast.Dict):
        return all(k is None or _is_data(k) for k in node.keys) and all(_is_data(v) for v in node.values)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return all(_is_data(e) for e in node.elts)
    return False


def counted_lines(func: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The function's lines from ``def`` to its end, less the lines after the first of each data literal."""
    end = func.end_lineno or func.lineno
    lines = set(range(func.lineno, end + 1))
    for node in ast.walk(func):
        if isinstance(node, _DISPLAYS) and _is_data(node) and node.end_lineno:
            lines.difference_update(range(node.lineno + 1, node.end_lineno + 1))
    return len(lines)


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield f"{prefix}{node.name}", node
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def size_violations(root: Path, packages: tuple[str, ...] = SIZE_PACKAGES) -> list[Violation]:
    out = []
    for mod in find_modules(root, packages).values():
        text = (root / mod.path).read_text(encoding="utf-8")
        n = len(text.splitlines())
        limit = PAGE_LINES if mod.name.split(".")[0] == "pages" else MODULE_LINES
        if n > limit:
            kind = "page" if limit == PAGE_LINES else "module"
            out.append(Violation(str(mod.path), 1, f"{kind} is {n} lines", f"limit {limit}"))
        for qualname, func in _functions(ast.parse(text, str(mod.path))):
            n = counted_lines(func)
            if n > FUNCTION_LINES:
                what = f"function {qualname} is {n} lines"
                out.append(Violation(str(mod.path), func.lineno, what, f"limit {FUNCTION_LINES}"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent, help="the checkout")
    args = parser.parse_args(argv)
    violations = circle_violations(args.root) + layer_violations(args.root) + forbidden_violations(args.root)
    violations += door_violations(args.root) + size_violations(args.root)
    for v in violations:
        print(v)
    print(f"check_shape: {len(violations)} violation(s)", file=sys.stderr)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
