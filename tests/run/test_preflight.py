"""Every folder a run writes is checked before it records anything, on real
files. The tests run as root, which ignores permission bits, so an unwritable folder is made the
way that stops root too: a path under a regular file (``somefile/markers``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark import LedgerUrlError, UnwritablePathError
from prefect_waymark.run.preflight import (
    check_folder,
    preflight_paths,
    results_folder,
    sqlite_ledger_file,
)
from tests._support.helpers import write_plan
from tests._support.plans import counting_chain


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_missing_folder_that_can_be_created_passes_and_is_not_created(tmp_path: Path) -> None:
    check_folder(tmp_path / "a" / "b" / "c", "markers folder")
    check_folder(tmp_path, "markers folder")
    assert _tree(tmp_path) == []  # nothing created, the probe removed


def test_a_folder_under_a_file_is_refused_with_path_and_reason(tmp_path: Path) -> None:
    (tmp_path / "somefile").write_text("x")
    with pytest.raises(UnwritablePathError) as info:
        check_folder(tmp_path / "somefile" / "markers", "markers folder")
    err = info.value
    assert err.path == str(tmp_path / "somefile" / "markers")
    assert err.reason == f"{tmp_path / 'somefile'} is a file, not a folder"
    assert str(err).startswith(f"cannot write the markers folder at {err.path}: ")
    with pytest.raises(UnwritablePathError, match="it is a file, not a folder"):
        check_folder(tmp_path / "somefile", "results folder")
    assert _tree(tmp_path) == ["somefile"]


def test_a_broken_symlink_and_an_overlong_name_are_refused(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    with pytest.raises(UnwritablePathError, match="broken symbolic link"):
        check_folder(tmp_path / "link" / "markers", "markers folder")
    with pytest.raises(UnwritablePathError, match="too long"):
        check_folder(tmp_path / ("n" * 300), "markers folder")


def test_the_ledger_file_itself(tmp_path: Path) -> None:
    (tmp_path / "somefile").write_text("x")
    cases = {
        f"sqlite:///{tmp_path}": "it is a folder, not a ledger file",
        f"sqlite:///{tmp_path}/somefile/ledger.db": "is a file, not a folder",
        f"sqlite:///file:{tmp_path}/somefile/l.db?mode=rwc&uri=true": "is a file, not a folder",
    }
    for url, why in cases.items():
        with pytest.raises(UnwritablePathError, match=why):
            preflight_paths(ledger_url=url, results=None, markers=None)
    # A server ledger has no folder here; a good SQLite one passes and nothing is created.
    preflight_paths(
        ledger_url="postgresql+psycopg://u@h:5432/db",
        results=tmp_path / "new" / "results",
        markers=tmp_path / "new" / "markers",
    )
    preflight_paths(ledger_url=f"sqlite:///{tmp_path}/x/ledger.db", results=None, markers=None)
    assert _tree(tmp_path) == ["somefile"]


def test_where_results_go(tmp_path: Path) -> None:
    from prefect.filesystems import LocalFileSystem

    assert results_folder(None, tmp_path) == tmp_path / ".waymark" / "results"
    assert results_folder(tmp_path / "r", tmp_path) == tmp_path / "r"
    assert results_folder("local-file-system/some-block", tmp_path) is None
    block = LocalFileSystem(basepath=str(tmp_path / "b"))
    assert results_folder(block, tmp_path) == tmp_path / "b"
    assert sqlite_ledger_file("sqlite:///rel.db") == Path(os.path.abspath("rel.db"))
    assert sqlite_ledger_file("postgresql+psycopg://u@h/d") is None


def test_the_flow_refuses_before_it_records_anything(prefect_server: str, tmp_path: Path) -> None:
    """``run_plan`` called from Python: an unwritable markers or results folder, or a bad
    ledger URL, raises before ``run_started`` — no ledger file, no step ran."""
    from prefect_waymark.flows import run_plan

    plan = write_plan(tmp_path, counting_chain("pre", "ab"))
    (tmp_path / "somefile").write_text("x")
    bad: list[tuple[dict[str, Any], type[Exception]]] = [
        ({"markers_dir": str(tmp_path / "somefile" / "m")}, UnwritablePathError),
        ({"result_storage": tmp_path / "somefile" / "r"}, UnwritablePathError),
        ({"ledger_url": f"sqlite:///{tmp_path}/somefile/l.db"}, UnwritablePathError),
        ({"ledger_url": "sqlite://"}, LedgerUrlError),
    ]
    for kwargs, error in bad:
        with pytest.raises(error):
            run_plan(plan=str(plan), **kwargs)
    assert _tree(tmp_path) == ["plan.yaml", "somefile"]  # no .waymark, no a.count
    # A markers folder that does not exist yet is fine: it is created when the run writes it.
    summary = run_plan(plan=str(plan), markers_dir=str(tmp_path / "new" / "markers"))
    assert summary["result"] == "completed"
    assert (tmp_path / "new" / "markers" / "EXECUTION_MARKER.json").is_file()
