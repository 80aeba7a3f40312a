"""The plan cache (issue 16): a big plan file validated once is read back by later processes
while its bytes, its path and the code are unchanged — and never otherwise. Real `waymark`
subprocesses; each test has its own cache folder (`$WAYMARK_PLAN_CACHE`).

That a later process *reads* the entry is proven by tampering with it: the entry is replaced by
the same plan with another title, and the next process prints that title."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
from pydantic import Field

from prefect_waymark.plan import cache_files, plan_cache
from prefect_waymark.plan.loader import load_plan
from prefect_waymark.plan.plan_cache import CACHE_MIN_BYTES, cached_plan
from tests._support.helpers import run_cli, write_plan


def _plan(n: int = 600, title: str = "A big plan") -> dict[str, Any]:
    steps = [
        {"id": f"s{i:04d}", "title": f"Step {i} of a plan big enough for the cache",
         "run": f"echo step {i} > out{i}.txt", "depends_on": [f"s{i - 1:04d}"] if i else []}
        for i in range(n)
    ]  # fmt: skip
    return {"plan_id": "big", "title": title, "steps": steps}


def _status(plan: Path, cache: Path) -> dict[str, Any]:
    proc = run_cli("status", str(plan), "--json", env={"WAYMARK_PLAN_CACHE": str(cache)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def _tamper(entry: Path, title: str) -> None:
    with open(entry, "rb") as fh:
        spec = pickle.load(fh)
    with open(entry, "wb") as fh:
        pickle.dump(spec.model_copy(update={"title": title}), fh)


def test_a_big_plan_is_validated_once_and_read_back_while_unchanged(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "w", _plan())
    assert plan.stat().st_size >= CACHE_MIN_BYTES
    cache = tmp_path / "cache"
    proc = run_cli("validate", str(plan), env={"WAYMARK_PLAN_CACHE": str(cache)})
    assert proc.returncode == 0 and "valid plan 'big' with 600 steps" in proc.stdout
    (entry,) = cache.glob("*.pickle")
    assert cache.stat().st_mode & 0o777 == 0o700
    _tamper(entry, "read from the cache")
    assert _status(plan, cache)["title"] == "read from the cache"  # a later process read it

    # One byte changed in the file: another key, the file is validated again.
    plan.write_text(plan.read_text().replace("A big plan", "A big plan!"))
    assert _status(plan, cache)["title"] == "A big plan!"
    assert len(list(cache.glob("*.pickle"))) == 2


def test_a_small_plan_an_invalid_one_and_a_cache_turned_off_write_nothing(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    small = write_plan(tmp_path / "small", _plan(3))
    assert run_cli("validate", str(small), env={"WAYMARK_PLAN_CACHE": str(cache)}).returncode == 0
    bad = _plan()
    bad["steps"][300]["depends_on"] = ["nowhere"]
    invalid = write_plan(tmp_path / "bad", bad)
    proc = run_cli("validate", str(invalid), env={"WAYMARK_PLAN_CACHE": str(cache)})
    assert proc.returncode == 2 and "nowhere" in proc.stderr
    assert not cache.exists() or list(cache.iterdir()) == []
    big = write_plan(tmp_path / "big", _plan())
    assert run_cli("validate", str(big), env={"WAYMARK_PLAN_CACHE": "off"}).returncode == 0
    assert not cache.exists() or list(cache.iterdir()) == []


def test_a_torn_entry_is_ignored_and_replaced(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "w", _plan())
    cache = tmp_path / "cache"
    assert _status(plan, cache)["title"] == "A big plan"
    (entry,) = cache.glob("*.pickle")
    entry.write_bytes(entry.read_bytes()[:1000])  # a write cut short
    # Without the plan's status digest: `status` would answer from it (cli/quick_status.py)
    for digest in cache.glob("*.status.json"):
        digest.unlink()
    proc = run_cli("status", str(plan), env={"WAYMARK_PLAN_CACHE": str(cache)})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "A big plan" in proc.stdout
    (again,) = cache.glob("*.pickle")
    assert again.stat().st_size > 1000  # replaced by a whole entry


def test_a_folder_others_may_write_into_is_not_read(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "w", _plan())
    cache = tmp_path / "cache"
    _status(plan, cache)
    (entry,) = cache.glob("*.pickle")
    _tamper(entry, "planted")
    cache.chmod(0o777)
    assert _status(plan, cache)["title"] == "A big plan"


def test_other_code_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = write_plan(tmp_path / "w", _plan())
    monkeypatch.setenv("WAYMARK_PLAN_CACHE", str(tmp_path / "cache"))
    spec = load_plan(plan)
    text = plan.read_text()
    found = cached_plan(str(plan), str(plan.resolve()), text)
    assert found is not None and found == spec
    assert cached_plan(str(plan), str(plan.resolve()), text + "\n# edited") is None
    assert cached_plan("elsewhere/plan.yaml", str(plan.resolve()), text) is None
    monkeypatch.setattr(cache_files, "_FINGERPRINT", "another version of the code")
    assert cached_plan(str(plan), str(plan.resolve()), text) is None


def test_a_plan_whose_refs_a_plug_in_reads_is_not_kept(
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

    cache = tmp_path / "cache"
    monkeypatch.setenv("WAYMARK_PLAN_CACHE", str(cache))
    monkeypatch.setattr(registry, "_resolvers", dict(registry._resolvers))
    registry.register_resolver(TicketResolver())  # type: ignore[arg-type]
    doc = _plan()
    doc["state_refs"] = [{"name": "t", "kind": "ticket", "ticket": "T-12"}]
    plan = write_plan(tmp_path / "w", doc)
    assert load_plan(plan).plan_id == "big"  # valid here, with the resolver registered
    assert not cache.exists() or list(cache.glob("*.pickle")) == []  # and not kept
    proc = run_cli("validate", str(plan), env={"WAYMARK_PLAN_CACHE": str(cache)})
    assert proc.returncode == 2 and "ticket" in proc.stderr  # another process: no such kind


def test_no_home_folder_costs_the_cache_not_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("WAYMARK_PLAN_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    plan = write_plan(tmp_path / "w", _plan())
    assert load_plan(plan).plan_id == "big"
    small = write_plan(tmp_path / "s", _plan(2))
    assert load_plan(small).plan_id == "big"


def test_a_cached_read_leaves_the_garbage_collector_as_it_found_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The collector is off while a cached plan is unpickled, then back as it was: on in a run
    (a worker's collector keeps working), off where the caller turned it off."""
    import gc

    plan = write_plan(tmp_path / "w", _plan())
    monkeypatch.setenv("WAYMARK_PLAN_CACHE", str(tmp_path / "cache"))
    load_plan(plan)  # validated and kept
    seen: list[bool] = []
    real_load = pickle.load

    def watching_load(fh: Any) -> Any:
        seen.append(gc.isenabled())
        return real_load(fh)

    from prefect_waymark.plan import loader

    monkeypatch.setattr(plan_cache.pickle, "load", watching_load)
    assert gc.isenabled()
    loader._PARSED.clear()  # this process's own copy: the next load reads the cache
    assert load_plan(plan).plan_id == "big"
    assert gc.isenabled()
    gc.disable()
    try:
        loader._PARSED.clear()
        assert load_plan(plan).plan_id == "big"
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert seen == [False, False]  # both loads came from the cache, the collector off
