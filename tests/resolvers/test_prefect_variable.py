"""The prefect-variable resolver against the session's Prefect server."""

from __future__ import annotations

import uuid
from pathlib import Path

from prefect_waymark.resolvers import parse_ref_config, resolve_refs


def test_variable_value_hash_and_absent(prefect_server: str, tmp_path: Path) -> None:
    from prefect.variables import Variable

    name = f"waymark_test_{uuid.uuid4().hex[:8]}"
    cfg = parse_ref_config({"name": "flag", "kind": "prefect-variable", "variable": name})
    assert resolve_refs([cfg], tmp_path)["flag"].version == "absent"
    Variable.set(name, {"approved": True})
    first = resolve_refs([cfg], tmp_path)["flag"].version
    assert first is not None and first.startswith("sha256:")
    assert resolve_refs([cfg], tmp_path)["flag"].version == first
    Variable.set(name, {"approved": False}, overwrite=True)
    assert resolve_refs([cfg], tmp_path)["flag"].version != first
    Variable.unset(name)
    assert resolve_refs([cfg], tmp_path)["flag"].version == "absent"
