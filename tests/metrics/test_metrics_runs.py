"""The eight metrics on real plans driven through real Prefect flow runs: a resume, a skipped
step, a forbidden action, a contract change, a step without ``serves``, a verification step,
an action decided on a ref read long before, a decision taken in another run, two racing
runners. Each test asserts the values the scenario must give."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from tests._support.artifacts import latest_artifact, plan_copy_of
from tests._support.helpers import run_cli, write_plan
from tests._support.inprocess import run_inprocess

ROOT = Path(__file__).resolve().parents[2]


def _contract(version: int) -> dict[str, Any]:
    return {
        "goal_id": "report",
        "version": version,
        "objective": "Publish the report.",
        "acceptance": [{"id": "A1", "text": "Figures collected."}, "Report published."],
        "forbidden": ["action:delete-*"],
        "exit_conditions": ["The report is out."],
    }


def _plan_doc(version: int) -> dict[str, Any]:
    def step(sid: str, **fields: Any) -> dict[str, Any]:
        return {"id": sid, "run": f"echo {sid} >> {sid}.count", **fields}

    return {
        "plan_id": "metrics-scenario",
        "contract": _contract(version),
        "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
        "steps": [
            step("collect", milestone="m1", serves=["A1"], reads=["terms"]),
            step("check", milestone="m1", serves=["A1"], verify=True, depends_on=["collect"]),
            step("extra", depends_on=["check"]),  # neither serves nor milestone: drift
            step("skipme", milestone="m2", serves=["A2"], depends_on=["extra"]),
            step(
                "purge", milestone="m2", serves=["A2"], action="delete-all", depends_on=["skipme"]
            ),
        ],
    }


def _skip(plan: Path, ledger: str, step: str) -> None:
    """``waymark skip`` when the command is there; else the same event through the ledger."""
    from prefect_waymark.cli.commands import app
    from prefect_waymark.ledger import open_ledger
    from prefect_waymark.ledger.events import EventKind

    names = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    if "skip" in names:
        done = run_cli("skip", str(plan), step, "--reason", "not needed", "--ledger", ledger)
        assert done.returncode == 0, done.stderr
        return
    with open_ledger(ledger) as led:
        led.record("metrics-scenario", EventKind.step_skipped, step_id=step, branch="main",
                   reason="not needed", by="test")  # fmt: skip


def _metrics(ledger: str, plan: Path) -> dict[str, Any]:
    from prefect_waymark.ledger import open_ledger
    from prefect_waymark.metrics import compute_metrics
    from prefect_waymark.plan.loader import load_plan

    with open_ledger(ledger, create=False) as led:
        return compute_metrics(load_plan(plan), led)


def test_a_plan_resumed_skipped_refused_and_re_contracted(
    prefect_server: str, tmp_path: Path
) -> None:
    from prefect_waymark.ledger import open_ledger
    from prefect_waymark.ledger.events import EventKind

    (tmp_path / "terms.md").write_text("v1\n")
    plan = write_plan(tmp_path, _plan_doc(1))
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    first = run_inprocess(plan, ledger_url=ledger, max_steps=2)
    assert first.result == "stopped" and first.executed_steps == ["collect", "check"]
    _skip(plan, ledger, "skipme")
    write_plan(tmp_path, _plan_doc(2))  # the contract's author bumps its version
    second = run_inprocess(plan, ledger_url=ledger)
    assert second.executed_steps == ["extra"] and second.failed_steps == ["purge"]
    # Side effects counted: each executed step ran once, the refused one never.
    assert [(tmp_path / f"{s}.count").read_text() for s in ("collect", "check", "extra")] == [
        "collect\n",
        "check\n",
        "extra\n",
    ]
    assert not (tmp_path / "purge.count").exists()

    m = _metrics(ledger, plan)
    om = m["plan_omission_rate"]
    assert (om["value"], om["steps"], om["executed"], om["skipped"], om["omitted"]) == (
        0.2, 5, 3, 1, 1,
    )  # fmt: skip
    assert om["closed"] is False and om["detail"] == ["purge"]
    ac = m["acceptance_coverage"]
    assert (ac["value"], ac["steps_serving"], ac["items"], ac["items_with_evidence"]) == (
        0.8, 4, 2, 1,
    )  # fmt: skip
    assert "item A2: no evidence" in ac["detail"] and "step extra: serves nothing" in ac["detail"]
    dr = m["goal_drift_events"]
    assert (dr["forbidden_refusals"], dr["unlinked_steps"], dr["contract_changes"]) == (1, 1, 1)
    assert dr["value"] == 3
    refusal = dr["detail"][0]["forbidden_action"]
    assert refusal["step"] == "purge" and refusal["rule"] == "action:delete-*"
    assert dr["detail"][1]["contract_change"]["to"] == "report v2"
    vc = m["verification_coverage"]
    assert (vc["units"], vc["covered"], vc["value"]) == (3, 1, 0.3333)
    assert [(u["unit"], u["covered"]) for u in vc["detail"]] == [
        ("m1", True), ("m2", False), ("(plan)", False),
    ]  # fmt: skip
    rs = m["resume_success_rate"]
    assert (rs["runs"], rs["resumed"], rs["succeeded"], rs["value"]) == (2, 1, 1, 1.0)
    assert m["duplicate_side_effects"]["value"] == 0
    rf = m["ref_freshness"]
    assert (rf["decisions"], rf["fresh"], rf["value"]) == (1, 1, 1.0)
    assert rf["detail"][0]["step"] == "collect" and rf["max_staleness_seconds"] < 5
    ip = m["single_in_progress_compliance"]
    assert (ip["value"], ip["intervals"]) == (0, 3)

    # At the end of each run: the run_finished event's metrics, the marker's values, the table
    # artifact and the plan page's section.
    with open_ledger(ledger, create=False) as led:
        finished = led.events("metrics-scenario", kinds=[EventKind.run_finished])
        markers = led.events("metrics-scenario", kinds=[EventKind.marker_written])
    assert [e.data["metrics"]["resume_success_rate"]["resumed"] for e in finished] == [0, 1]
    assert finished[-1].data["metrics"]["goal_drift_events"]["value"] == 3
    assert markers[-1].data["metrics"] == {name: v["value"] for name, v in m.items()}
    on_file = json.loads((tmp_path / "EXECUTION_MARKER.json").read_text())
    assert on_file["execution_history"][0]["metrics"]["plan_omission_rate"] == 0.6
    copy = plan_copy_of("metrics-scenario", ledger, tmp_path)
    table = json.loads(latest_artifact(copy.key("metrics")).data)
    assert [r["key"] for r in table] == list(m)
    assert table[2]["value"] == "3" and "1 forbidden-action refusals" in table[2]["made of"]
    page = latest_artifact(copy.page_key()).data
    assert "## Metrics" in page and "| goal drift events | 3 |" in page

    # Closed (forced: purge was refused) with the evidence of A2: measured "at close" now.
    evidence = ["--evidence", "A2: published by hand", "--evidence", "E1: it is out"]
    closed = run_cli(
        "close", str(plan), "--ledger", ledger, *evidence, "--force", "--reason", "purge refused"
    )
    assert closed.returncode == 0, closed.stderr
    m = _metrics(ledger, plan)
    assert m["plan_omission_rate"]["closed"] is True and m["plan_omission_rate"]["value"] == 0.2
    ac = m["acceptance_coverage"]
    assert (ac["closed"], ac["items"], ac["items_with_evidence"], ac["items_rate"]) == (
        True, 2, 2, 1.0,
    )  # fmt: skip
    shown = run_cli("metrics", str(plan), "--ledger", ledger)
    assert "1 of 5 steps omitted at close" in shown.stdout and "measured at close" in shown.stdout


def _stale_plan(folder: Path) -> Path:
    (folder / "terms.md").write_text("v1\n")
    (folder / "slow_steps.py").write_text(
        "import time\n\n"
        "def notify(ctx):\n"
        "    time.sleep(1.2)  # the action is decided 1.2 s after the step's re-read\n"
        "    with ctx.action('notify') as act:\n"
        "        if act.needed:\n"
        "            with open(ctx.path('notify.count'), 'a') as fh:\n"
        "                fh.write('sent\\n')\n"
        "            act.record(external_id='n-1')\n"
        "    return 'ok'\n"
    )
    doc = {
        "plan_id": "metrics-stale",
        "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
        "steps": [
            {"id": "a", "run": "echo a >> a.count", "reads": ["terms"]},
            {"id": "b", "call": "slow_steps:notify", "reads": ["terms"], "depends_on": ["a"]},
            {"id": "c", "run": "echo c >> c.count", "reads": ["terms"], "depends_on": ["b"]},
        ],
    }
    return write_plan(folder, doc)


def test_ref_freshness_and_staleness_at_each_decision(prefect_server: str, tmp_path: Path) -> None:
    from prefect_waymark.ledger import open_ledger
    from prefect_waymark.ledger.events import EventKind

    plan = _stale_plan(tmp_path)
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    run_inprocess(plan, ledger_url=ledger, max_steps=2)
    assert (tmp_path / "notify.count").read_text() == "sent\n"
    m = _metrics(ledger, plan)["ref_freshness"]
    # a's start, b's start, b's action: all on refs re-read in the same run; the action 1.2 s on.
    assert (m["decisions"], m["fresh"], m["stale"], m["value"]) == (3, 3, 0, 1.0)
    assert m["detail"][0]["decision"] == "action" and m["detail"][0]["staleness_seconds"] >= 1.2
    assert m["max_staleness_seconds"] >= 1.2

    # c decided in another run that never re-read `terms` (waymark's own runs always re-read
    # before a step; an outside writer does not): a stale decision, aged since run 1's read.
    time.sleep(0.5)
    with open_ledger(ledger) as led:
        led.record("metrics-stale", EventKind.step_started, step_id="c", branch="main",
                   run_id="outside", def_hash="x", result_key=None, host="h", pid=0)  # fmt: skip
    m = _metrics(ledger, plan)["ref_freshness"]
    assert (m["decisions"], m["fresh"], m["stale"], m["value"]) == (4, 3, 1, 0.75)
    stale = m["detail"][0]
    assert (stale["step"], stale["fresh"], stale["run_id"]) == ("c", False, "outside")
    assert stale["staleness_seconds"] >= 0.5
    assert _metrics(ledger, plan)["duplicate_side_effects"]["keys"] == 1


def test_two_racing_runners_keep_every_metric_clean(prefect_server: str, tmp_path: Path) -> None:
    from prefect_waymark.ledger import SqlLedger

    rep = tmp_path / "rep00"
    steps = [
        {"id": f"{b}{i}", "branch": b, "run": f"sleep 0.2; echo x >> {b}{i}.count",
         **({"depends_on": [f"{b}{i - 1}"]} if i else {})}
        for b in ("a", "b") for i in range(3)
    ]  # fmt: skip
    plan = write_plan(rep, {"plan_id": "metrics-race", "steps": steps})
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    SqlLedger(url).close()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests._support.race_worker", str(tmp_path), url, who, "1"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for who in ("r1", "r2")
    ]
    for p in procs:
        out = p.communicate(timeout=300)[0]
        assert p.returncode == 0, out[-3000:]
    assert all((rep / f"{s['id']}.count").read_text() == "x\n" for s in steps)  # each ran once
    m = _metrics(url, plan)
    assert m["plan_omission_rate"]["value"] == 0.0
    assert m["single_in_progress_compliance"]["value"] == 0
    assert m["single_in_progress_compliance"]["intervals"] == 6
    assert m["duplicate_side_effects"]["value"] == 0
    rs = m["resume_success_rate"]
    assert rs["runs"] >= 2 and rs["resumed"] == rs["runs"] - 1 and rs["value"] == 1.0
    assert yaml.safe_load(plan.read_text())["plan_id"] == "metrics-race"


def test_a_metric_that_cannot_be_computed_never_fails_the_run(
    prefect_server: str, tmp_path: Path, monkeypatch: Any
) -> None:
    import prefect_waymark.metrics as metrics
    from prefect_waymark.ledger import open_ledger
    from prefect_waymark.ledger.events import EventKind

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("metrics broke")

    monkeypatch.setattr(metrics, "compute_metrics", broken)
    plan = write_plan(
        tmp_path, {"plan_id": "metrics-broken", "steps": [{"id": "s", "run": "true"}]}
    )
    summary = run_inprocess(plan)
    assert summary.result == "completed" and summary.executed_steps == ["s"]
    with open_ledger(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}", create=False) as led:
        finished = led.events("metrics-broken", kinds=[EventKind.run_finished])
        marker = led.events("metrics-broken", kinds=[EventKind.marker_written])
    assert "metrics" not in finished[-1].data and marker[-1].data["metrics"] == {}
