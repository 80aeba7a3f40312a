"""A plan file is parsed and validated once per process: the same bytes at the same path give
the same PlanSpec again, a changed byte is validated anew; a big plan is read the same way by
every process (nothing is kept on disk), and what a plug-in's resolver allows is checked in
each process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
from pydantic import Field

from prefect_waymark.plan.loader import load_plan
from tests._support.helpers import run_cli, write_plan


def _plan(n: int = 600, title: str = "A big plan") -> dict[str, Any]:
    steps = [
        {"id": f"s{i:04d}", "title": f"Step {i} of a big plan",
         "run": f"echo step {i} > out{i}.txt", "depends_on": [f"s{i - 1:04d}"] if i else []}
        for i in range(n)
    ]  # fmt: skip
    return {"plan_id": "big", "title": title, "steps": steps}


def _files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*"))


def test_a_big_plan_is_validated_and_read_by_each_process_writing_nothing(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "w", _plan())
    cache = tmp_path / "xdg-cache"
    env = {"XDG_CACHE_HOME": str(cache), "HOME": str(tmp_path / "home")}
    before = _files(tmp_path)
    proc = run_cli("validate", str(plan), env=env)
    assert proc.returncode == 0 and "valid plan 'big' with 600 steps" in proc.stdout
    proc = run_cli("status", str(plan), "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["title"] == "A big plan"
    assert _files(tmp_path) == before  # no cache folder, no file beside the plan

    # One byte changed in the file: the next process reads the new text.
    plan.write_text(plan.read_text().replace("A big plan", "A big plan!"))
    proc = run_cli("status", str(plan), "--json", env=env)
    assert json.loads(proc.stdout)["title"] == "A big plan!"


def test_the_same_file_is_validated_once_per_process(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "w", _plan(3))
    first = load_plan(plan)
    assert load_plan(plan) is first  # the same bytes at the same path: not parsed again
    plan.write_text(plan.read_text().replace("A big plan", "Another title"))
    again = load_plan(plan)
    assert again is not first and again.title == "Another title"
    sub = write_plan(tmp_path / "s", {"plan_id": "sub", "steps": [{"id": "x", "run": "true"}]})
    parent = write_plan(
        tmp_path / "s", {"plan_id": "parent", "steps": [{"id": "p", "plan": sub.name}]}, "top.yaml"
    )
    assert load_plan(parent) is not load_plan(parent)  # its sub-plan file may change: read again


def test_an_invalid_big_plan_is_refused(tmp_path: Path) -> None:
    bad = _plan()
    bad["steps"][300]["depends_on"] = ["nowhere"]
    invalid = write_plan(tmp_path / "bad", bad)
    proc = run_cli("validate", str(invalid))
    assert proc.returncode == 2 and "nowhere" in proc.stderr


def test_a_plan_whose_refs_a_plug_in_reads_is_checked_in_each_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect_waymark.resolvers import RefConfig, registry

    class TicketConfig(RefConfig):
        locator_field: ClassVar[str] = "ticket"
        kind: Literal["ticket"] = "ticket"
        ticket: str = Field(pattern=r"^T-[0-9]+$")

    class TicketResolver:
        kind = "ticket"
        config_model = TicketConfig

        async def read_version(self, config: Any, ctx: Any) -> str:
            return "v1"

    monkeypatch.setattr(registry, "_resolvers", dict(registry._resolvers))
    registry.register_resolver(TicketResolver())  # type: ignore[arg-type]
    doc = _plan()
    doc["state_refs"] = [{"name": "t", "kind": "ticket", "ticket": "T-12"}]
    plan = write_plan(tmp_path / "w", doc)
    assert load_plan(plan).plan_id == "big"  # valid here, with the resolver registered
    proc = run_cli("validate", str(plan))
    assert proc.returncode == 2 and "ticket" in proc.stderr  # another process: no such kind


def test_no_home_folder_is_needed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    plan = write_plan(tmp_path / "w", _plan())
    assert load_plan(plan).plan_id == "big"
    small = write_plan(tmp_path / "s", _plan(2))
    assert load_plan(small).plan_id == "big"
