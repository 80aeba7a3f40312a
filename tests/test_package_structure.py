"""The package's shape: no import cycle between its modules, and only the error tree, the domain
records, the rooms' lazy-export helper (``_lazy``) and ``__init__`` at the top level; rooms
(subpackages) import only rooms below them. (No rule on a module's length: ruff's complexity rules
catch a function that does too much, see ``[tool.ruff.lint]`` in pyproject.toml.)

The import graph is read from the source with :mod:`ast` (nothing is imported): every import,
including those inside functions and under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from pathlib import Path

NAME = "prefect_waymark"
PACKAGE = Path(__file__).resolve().parents[1] / NAME  # read, never imported
TOP_LEVEL_MODULES = {"__init__.py", "_lazy.py", "errors.py", "models.py"}


def _module_files() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    modules: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        if "__pycache__" in rel.parts:
            continue
        parts = [NAME, *rel.parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import under ``node``: in functions and under ``if TYPE_CHECKING:`` too (a circle
    that only type checkers follow is still a circle in the design)."""
    for child in ast.walk(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name ``from <...> import`` refers to, relative imports resolved."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (``from X import n``: X, and X.n if a module)."""
    modules = _module_files()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            source = _resolve(name, is_package, node)
            targets.add(source)
            targets.update(f"{source}.{alias.name}" for alias in node.names)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively; components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _shortest_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest cycle through the component's first module, as a -> b -> ... -> a."""
    members = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph[node] & members):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if child not in came_from:
                came_from[child] = node
                queue.append(child)
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover


def import_cycles() -> list[list[str]]:
    graph = import_graph()
    return [_shortest_cycle(graph, c) for c in _strongly_connected(graph)]


def _short(module: str) -> str:
    return module.removeprefix(NAME + ".")


def test_the_graph_sees_every_kind_of_import() -> None:
    """Relative, function-level, ``if TYPE_CHECKING:`` and ``from pkg import submodule``
    imports are all edges."""
    graph = import_graph()
    top = graph[NAME]
    assert f"{NAME}.errors" in top  # from .errors import (...)
    assert f"{NAME}.flows.run_plan" in top  # inside __getattr__
    assert f"{NAME}.blocks" in top  # from . import blocks as _blocks
    assert f"{NAME}.run.summary" not in graph[f"{NAME}.errors"]  # errors imports no module
    assert set().union(*graph.values()) <= set(graph)
    tree = ast.parse(
        "if TYPE_CHECKING:\n    import a\nelse:\n    import b\ndef f():\n    import c\n"
    )
    assert [alias.name for node in _imports(tree) for alias in node.names] == ["a", "b", "c"]


def test_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    components = _strongly_connected(graph)
    assert components == [["a", "b", "c"]]
    assert _shortest_cycle(graph, components[0]) == ["a", "b", "c", "a"]


def test_no_import_cycles() -> None:
    cycles = import_cycles()
    text = "\n".join("  " + " -> ".join(_short(m) for m in c) for c in cycles)
    assert not cycles, f"{len(cycles)} import cycle(s) in {NAME}/:\n{text}"


#: The rooms (the package's first level: subpackages, and the top-level modules), lowest first:
#: a room imports only rooms before it here (at module level, in functions, for type checks).
ROOMS = [
    "errors",  # the one error tree
    "_files",  # one atomic file write (imports only the error tree)
    "_masking",  # secrets masked before anything is stored or sent (detect-secrets' rules)
    "models",  # the domain records
    "_lazy",  # the rooms' lazy exports (their ``__init__`` doors use it)
    "prefect_server",  # the local Prefect server waymark starts and finds, the API's address
    "resolvers",  # state refs: read a file, a URL, a git ref, a query
    "blocks",  # Prefect blocks: the goal contract, state refs
    "ledger",  # the append-only progress ledger, run ids
    "plan",  # the plan file: read, validated, built
    "text",  # text for people: Markdown cells, times in words
    "metrics",  # figures over the ledger's events
    "results",  # where step results and declared outputs persist
    "guards",  # verdicts at a run's hook points; the observers beside them
    "review",  # stops for a person: the gate, decisions, receipts, suspension, schedules
    "markers",  # views of progress: marker files, pages, artifacts
    "closing",  # skip and close a plan
    "run",  # a run's runtime, resume, results, summary
    "runners",  # task runners: steps in other processes
    "tasks",  # each step one Prefect task: the step bodies
    "subplans",  # a ``plan:`` step: another plan run as a subflow
    "boundary",  # what a run may touch in the workdir
    "audit",  # export, replay, restore a ledger
    "importers",  # plans from other tools' files
    "agents",  # coding agents that check in to a plan
    "flows",  # the ``run_plan`` flow and its deployment
    "hooks",  # an agent harness's hook events
    "cli",  # the ``waymark`` commands
]


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None  # the package's __init__ is the door


def up_imports() -> set[tuple[str, str]]:
    """Every import of a room above the importer's, as (importer, imported) without the prefix."""
    rank = {room: i for i, room in enumerate(ROOMS)}
    found: set[tuple[str, str]] = set()
    for module, targets in import_graph().items():
        here = _room(module)
        if here is None:
            continue
        assert here in rank, f"room {here!r} is not in ROOMS: give it its place"
        for target in targets:
            there = _room(target)
            if there is not None and there != here and rank[there] > rank[here]:
                found.add((_short(module), _short(target)))
    return found


def test_rooms_import_only_rooms_below() -> None:
    found = "\n".join(f"  {a} -> {b}" for a, b in sorted(up_imports()))
    assert not found, f"imports of a room above (ROOMS lists them lowest first):\n{found}"


def test_no_import_by_string() -> None:
    """``importlib.import_module("prefect_waymark...")`` is an import no reader or check sees."""
    found = []
    for name, path in _module_files().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and str(node.args[0].value).startswith(NAME)
            ):
                found.append(f"{_short(name)}:{node.lineno}")
    assert found == [], found


def test_top_level_holds_only_errors_records_and_init() -> None:
    # py.typed and data files are not modules; capability packages are folders.
    modules = {p.name for p in PACKAGE.iterdir() if p.is_file() and p.suffix == ".py"}
    assert modules - TOP_LEVEL_MODULES == set(), sorted(modules)
