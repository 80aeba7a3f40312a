"""``bench/run_all.py`` (``make bench``): every goal it checks names a figure its bench prints,
the table says plainly what is met, and a real bench run end to end feeds the table.

No test here asserts a time: the one bench run is ``--quick`` (20 refs) and only its wiring is
checked (the figure is there and judged against its limit, whatever it is)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _run_all() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run_all", BENCH / "run_all.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being made
    spec.loader.exec_module(module)
    return module


def _bench_text(script: str) -> str:
    """A bench's source and that of the modules of this folder it imports."""
    text = (BENCH / script).read_text()
    for name in re.findall(r"^\s*(?:from|import) (\w+)", text, flags=re.MULTILINE):
        if (BENCH / f"{name}.py").is_file():
            text += (BENCH / f"{name}.py").read_text()
    return text


def test_every_goal_names_a_figure_its_bench_prints() -> None:
    ra = _run_all()
    for goal in ra.GOALS:
        script = ra.BENCHES[goal.bench][0]
        assert f'"{goal.key}"' in _bench_text(script), (goal.key, script)
    # the nine speed goals (the chain's is two figures) are all there
    assert sum(1 for g in ra.GOALS if "16" in g.issue) == 10


def test_the_table_judges_each_figure_against_its_limit() -> None:
    ra = _run_all()
    benches = {
        "resume": {
            "overhead_ratio_net": 1.3549,
            "overhead_ratio_raw": 1.2,
            "skip_ms_per_step": 0.3,
        },
        "ledger": {
            "append_ratio_vs_bare_insert": 0.19,
            "sqlite_step_events_per_s": True,
            "status_json_seconds": 0.1234,
        },
    }
    rows = {r["key"]: r for r in ra.evaluate(benches)}
    assert rows["overhead_ratio_net"]["met"] is False  # over a <= limit
    assert rows["overhead_ratio_raw"]["met"] is True  # at the limit is met
    assert rows["append_ratio_vs_bare_insert"]["met"] is False  # under a >= limit
    assert rows["skip_ms_per_step"]["met"] is True
    assert rows["sqlite_step_events_per_s"]["value"] is None  # a bool is not a figure
    assert rows["sqlite_step_events_per_s"]["missing"] == "not in ledger's figures"
    assert rows["validate_ratio_vs_yaml"]["missing"] == "scale not run"
    table = ra.goal_table(list(rows.values()))
    assert "| 200-step chain / plain Prefect, net (3, 16) | `overhead_ratio_net` | 1.35 |" in table
    assert "| **no** |" in table and "| scale not run |" in table
    assert "| `status_json_seconds` | 0.123 | <= 0.5 | yes |" in table
    assert table.splitlines()[-1] == "3 of 5 measured goals met (17 goals in all)."
    many = ra.goal_table(ra.evaluate({"ledger": {"sqlite_step_events_per_s": 8786.46}}))
    assert "| `sqlite_step_events_per_s` | 8,786 | >= 2000 | yes |" in many


def test_last_json_takes_only_an_object_on_the_last_line() -> None:
    ra = _run_all()
    assert ra.last_json('figures\n{"a": 1}\n\n') == {"a": 1}
    assert ra.last_json('{"a": 1}\nTraceback: boom\n') is None
    assert ra.last_json("[1, 2]\n") is None
    assert ra.last_json("") is None


def test_a_real_bench_run_feeds_the_table() -> None:
    """``run_all.py --quick --only http_refs --json``: the bench runs against a real local HTTP
    server, its figures reach the goal table and the JSON; an unknown bench is exit 2."""
    proc = subprocess.run(
        [sys.executable, str(BENCH / "run_all.py"), "--quick", "--only", "http_refs", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["failed"] == []
    figure = out["benches"]["http_refs"]["refs_concurrent_best_seconds"]
    row = next(r for r in out["goals"] if r["key"] == "refs_concurrent_best_seconds")
    assert row["value"] == figure > 0 and row["met"] is (figure <= 0.3)
    assert "20 HTTP refs, server answers each after 50 ms" in proc.stdout  # the bench's own lines
    bad = subprocess.run(
        [sys.executable, str(BENCH / "run_all.py"), "--only", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "no bench named nope" in bad.stderr
