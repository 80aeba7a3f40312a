"""The package's public API: ``__all__`` is complete and importable, and importing the package is
cheap (Prefect imports it when it looks up block types): no Prefect, no ledger tables.

Every module of the package is walked: each ``__all__`` resolves, and every error class lives in
``errors.py`` (drawn in its docstring's tree) and is exported from ``prefect_waymark``."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import prefect_waymark
from prefect_waymark import errors

PACKAGE = Path(prefect_waymark.__file__).resolve().parent


def _module_names() -> list[str]:
    """Every module of the package, from its files (a package by its ``__init__``)."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = [prefect_waymark.__name__, *path.relative_to(PACKAGE).with_suffix("").parts]
        if "__pycache__" in parts:
            continue
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


def _all_modules() -> list[types.ModuleType]:
    return [importlib.import_module(name) for name in _module_names()]


def _error_classes() -> dict[str, type[BaseException]]:
    """The exception classes errors.py defines."""
    return {
        name: member
        for name, member in vars(errors).items()
        if inspect.isclass(member)
        and issubclass(member, BaseException)
        and member.__module__ == errors.__name__
    }


def test_all_is_sorted_unique_and_importable() -> None:
    names = prefect_waymark.__all__
    assert len(names) == len(set(names))
    assert list(names) == sorted(names)
    for name in names:
        assert getattr(prefect_waymark, name) is not None, name
    namespace: dict[str, Any] = {}
    exec("from prefect_waymark import *", namespace)  # noqa: S102 - the star import itself
    assert set(names) <= set(namespace)


def test_every_public_member_is_exported() -> None:
    """What a user can reach at the top level and that prefect-waymark defines is in __all__."""
    missing = []
    for name, member in vars(prefect_waymark).items():
        if name.startswith("_") or isinstance(member, types.ModuleType):
            continue
        module = getattr(member, "__module__", "") or ""
        if module.startswith("prefect_waymark") and name not in prefect_waymark.__all__:
            missing.append(name)
    assert missing == []


def test_every_error_and_record_is_exported() -> None:
    from prefect_waymark import errors, models

    for name in errors.__all__:
        assert name in prefect_waymark.__all__, f"errors.{name} is not exported"
        member = getattr(errors, name)
        assert getattr(prefect_waymark, name) is member
        if inspect.isclass(member) and issubclass(member, Exception):
            assert issubclass(member, prefect_waymark.WaymarkError), name
    records = [
        name
        for name in models.__all__
        if inspect.isclass(getattr(models, name))  # not the ContractStatus alias nor utcnow
    ]
    assert records and all(name in prefect_waymark.__all__ for name in records), records


def test_exported_members_say_where_they_come_from() -> None:
    for name in prefect_waymark.__all__:
        member = getattr(prefect_waymark, name)
        module = getattr(member, "__module__", "")
        assert module.startswith("prefect_waymark."), (name, module)
        # Importable from its own module too, under the same name.
        assert getattr(importlib.import_module(module), name) is member, name


def test_subpackages_declare_their_api() -> None:
    for sub in ("errors", "models", "plan.builder", "plan.loader", "plan.spec", "ledger"):
        module = importlib.import_module(f"prefect_waymark.{sub}")
        assert module.__all__, sub
        for name in module.__all__:
            assert hasattr(module, name), f"prefect_waymark.{sub}.{name}"


_PROBE = """
import json, sys
import prefect_waymark
prefect_waymark.Plan("p").add_step(id="a", run="x").build()
loaded = {
    "prefect": sorted(m for m in sys.modules if m == "prefect" or m.startswith("prefect.")),
    "ledger": "prefect_waymark.ledger.connection" in sys.modules,
    "sqlalchemy": "sqlalchemy" in sys.modules,
    "flows": "prefect_waymark.flows" in sys.modules,
}
print(json.dumps(loaded))
"""


def test_import_is_cheap() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        env={**os.environ},
        timeout=120,
        check=True,
    )
    result = json.loads(proc.stdout)
    assert result == {
        "prefect": [],
        "ledger": False,
        "sqlalchemy": False,
        "flows": False,
    }


def test_a_bare_import_loads_the_errors_only() -> None:
    """``import prefect_waymark`` (every ``waymark`` command's first import) builds no pydantic
    model: the models, the loader and the ledger's events load on first use of their names."""
    code = (
        "import json, sys\n"
        "import prefect_waymark\n"
        "print(json.dumps(sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('pydantic', 'yaml') or m.startswith('prefect_waymark.'))))\n"
        "print(prefect_waymark.plan.__name__, prefect_waymark.models.__name__,"
        " hasattr(prefect_waymark, 'no_such_module'))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded, subpackages = proc.stdout.splitlines()
    assert json.loads(loaded) == ["prefect_waymark.errors"]
    # A subpackage is still an attribute of the package, as with the eager imports before.
    assert subpackages == "prefect_waymark.plan prefect_waymark.models False"


def test_lazy_members_resolve() -> None:
    """Every name of ``__all__`` that is not an error loads on first use, and is the real
    object of the module that defines it; run_plan and StepContext load Prefect then."""
    lazy = prefect_waymark._LAZY
    assert set(lazy) <= set(prefect_waymark.__all__)
    for name, module in lazy.items():
        assert getattr(prefect_waymark, name) is getattr(
            importlib.import_module(module, "prefect_waymark"), name
        ), name
    from prefect_waymark.flows.run_plan import run_plan
    from prefect_waymark.tasks.step_context import StepContext

    assert prefect_waymark.run_plan is run_plan
    assert prefect_waymark.StepContext is StepContext
    try:
        prefect_waymark.no_such_member  # noqa: B018
    except AttributeError as exc:
        assert "no_such_member" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("unknown attribute did not raise")


def test_every_module_imports_and_its_all_resolves() -> None:
    unresolved = []
    for module in _all_modules():
        for name in getattr(module, "__all__", ()):
            try:
                getattr(module, name)
            except AttributeError:
                unresolved.append(f"{module.__name__}.{name}")
    assert unresolved == []


def test_every_exception_class_is_defined_in_errors() -> None:
    """No module but errors.py defines an exception class (checked on the live modules and, for
    classes defined inside functions, on their source)."""
    outside = []
    for module in _all_modules():
        for name, member in vars(module).items():
            if (
                inspect.isclass(member)
                and issubclass(member, BaseException)
                and member.__module__ == module.__name__
                and module is not errors
            ):
                outside.append(f"{module.__name__}.{name}")
    exception_names = set(_error_classes()) | {
        name
        for name, member in vars(builtins).items()
        if inspect.isclass(member) and issubclass(member, BaseException)
    }
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {
                b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
            }
            if bases & exception_names:
                outside.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert sorted(set(outside)) == []


def test_every_error_class_is_exported_under_waymark_error() -> None:
    classes = _error_classes()
    assert classes, "errors.py defines no error"
    for name, cls in classes.items():
        assert name in errors.__all__, f"errors.{name} is not in errors.__all__"
        assert name in prefect_waymark.__all__, f"errors.{name} is not in prefect_waymark.__all__"
        assert getattr(prefect_waymark, name) is cls, name
        assert issubclass(cls, errors.WaymarkError), name
        assert (cls.__doc__ or "").strip(), f"errors.{name} has no docstring"


_TREE_LINE = re.compile(r"^(?P<indent>(?:│   |    )*)(?P<branch>├── |└── )?(?P<name>[A-Z]\w+)\b")


def test_the_docstring_draws_the_error_tree() -> None:
    """errors.py's docstring draws each error class once, under its parent class."""
    drawn: dict[str, str | None] = {}
    stack: list[str] = []
    for line in (errors.__doc__ or "").splitlines():
        match = _TREE_LINE.match(line)
        if match is None or (not match["branch"] and match["name"] != "WaymarkError"):
            continue
        depth = len(match["indent"]) // 4 + (1 if match["branch"] else 0)
        del stack[depth:]
        assert match["name"] not in drawn, f"{match['name']} is drawn twice"
        drawn[match["name"]] = stack[-1] if stack else None
        stack.append(match["name"])
    expected: dict[str, str | None] = {}
    for name, cls in _error_classes().items():
        parents = [b.__name__ for b in cls.__bases__ if issubclass(b, errors.WaymarkError)]
        expected[name] = parents[0] if parents else None
    assert drawn == expected
