"""The package's public API: ``__all__`` is complete and importable, and importing the package is
cheap (Prefect imports it when it looks up block types): no Prefect, no ledger tables."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
import types
from typing import Any

import prefect_waymark


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
    "tables": "prefect_waymark.ledger._tables" in sys.modules,
    "sqlalchemy": "sqlalchemy" in sys.modules,
    "flows": "prefect_waymark.flows" in sys.modules,
}
from sqlmodel import SQLModel
loaded["user_metadata"] = sorted(SQLModel.metadata.tables)
print(json.dumps(loaded))
"""


def test_import_is_cheap_and_keeps_out_of_the_users_metadata() -> None:
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
        "tables": False,
        "sqlalchemy": False,
        "user_metadata": [],
        "flows": False,
    }


def test_opening_a_ledger_keeps_its_tables_out_of_the_users_metadata(tmp_path: Any) -> None:
    code = (
        "import json\n"
        "from sqlmodel import SQLModel\n"
        "from prefect_waymark.ledger import open_ledger\n"
        f"open_ledger('sqlite:///{tmp_path / 'l.db'}').close()\n"
        "print(json.dumps(sorted(SQLModel.metadata.tables)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(proc.stdout) == []


def test_lazy_members_resolve() -> None:
    """run_plan and StepContext load Prefect on first use, and are the real objects."""
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
