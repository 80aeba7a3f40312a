"""Input sizes have limits (issue 33, class 7): a 3 MB title was copied into every view and
printed by ``status``; a 1 MB objective became a 1 MB log line; a run summary listed 2,002 step ids
on one line, twice; a restored export planted a 100 MB ``output_tail`` and step ids outside the id
pattern.

Titles, objectives, reasons and evidence are bounded (``prefect_waymark.models``: one
:class:`~prefect_waymark.models.TextLimit` each), checked by the plan loader and by the check-in
options (exit 2 naming the field or the option and the limit, nothing recorded); ``waymark done
--evidence-file`` (``-``: standard input) takes evidence too long for an argument; ``waymark
restore`` holds every line to the same limits and writes nothing when one is past them; lists of
step ids on a line show at most 20, then how many more. Real ``waymark`` processes, real SQLite
ledgers, a real Prefect flow run for the summary.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.ledger import EventKind, open_ledger
from prefect_waymark.models import EVIDENCE, OBJECTIVE, OUTPUT_TAIL, REASON, TITLE
from tests._support.helpers import WAYMARK, run_cli, write_plan

NO_SERVER = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}  # nothing listens there
AGENT_PLAN: dict[str, Any] = {
    "plan_id": "limits",
    "steps": [
        {
            "id": "write",
            "kind": "agent",
            "instructions": "Write it.",
            "acceptance": ["it reads well"],
        },
        {"id": "after", "kind": "agent", "instructions": "Then this.", "depends_on": ["write"]},
    ],
}


def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    if stdin is None:
        return run_cli(*args, env=NO_SERVER, timeout=120)
    return subprocess.run(
        [WAYMARK, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **NO_SERVER},
        timeout=120,
    )


def _refused(proc: subprocess.CompletedProcess[str], *pieces: str) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-3000:]
    assert "Traceback" not in out
    for piece in pieces:
        assert piece in out, f"{piece!r} not in\n{out[-3000:]}"
    assert len(out) < 5000, "the bad value is not copied into the message"


def _ledger(folder: Path) -> Path:
    return folder / ".waymark" / "ledger.db"


def _events(folder: Path, *kinds: EventKind) -> list[Any]:
    with open_ledger(f"sqlite:///{_ledger(folder)}") as led:
        return list(led.events("limits", kinds=list(kinds) or None))


# -- the plan file ---------------------------------------------------------------------------------


def test_a_3_mb_title_is_refused_by_validate_and_run_before_anything_is_recorded(
    tmp_path: Path,
) -> None:
    doc = {"plan_id": "limits", "title": "T" * 3_000_000, "steps": [{"id": "a", "run": "true"}]}
    plan = write_plan(tmp_path, doc)
    for command in ("validate", "run", "status"):
        proc = _cli(command, str(plan))
        _refused(proc, str(plan), "title: ", f"at most {TITLE.chars} characters", "3,000,000")
    assert not (tmp_path / ".waymark").exists()  # no ledger, no marker, no view
    assert not (tmp_path / "STATE.md").exists()


def test_a_step_title_over_the_limit_names_its_field_path(tmp_path: Path) -> None:
    doc = {"plan_id": "limits", "steps": [{"id": "a", "run": "true", "title": "t" * 201}]}
    plan = write_plan(tmp_path, doc)
    _refused(_cli("validate", str(plan)), "steps[0].title: ", "got 201 characters")
    doc["steps"][0]["title"] = "t" * TITLE.chars  # at the limit: fine
    assert _cli("validate", str(write_plan(tmp_path, doc))).returncode == 0


def test_an_objective_over_the_limit_is_refused_before_anything_is_recorded(
    tmp_path: Path,
) -> None:
    doc = {
        "plan_id": "limits",
        "contract": {"goal_id": "g", "objective": "o" * 1_000_000},
        "steps": [{"id": "a", "run": "true"}],
    }
    plan = write_plan(tmp_path, doc)
    for command in ("validate", "run"):
        _refused(
            _cli(command, str(plan)),
            "contract.objective: ",
            f"at most {OBJECTIVE.chars:,} characters",
            "1,000,000",
        )
    assert not (tmp_path / ".waymark").exists()


# -- check-ins ------------------------------------------------------------------------------------


@pytest.fixture
def started(tmp_path: Path) -> Path:
    plan = write_plan(tmp_path, AGENT_PLAN)
    proc = _cli("start", str(plan), "write", "--executor", "ann")
    assert proc.returncode == 0, proc.stderr
    return plan


def test_evidence_over_the_limit_is_refused_and_nothing_recorded(started: Path) -> None:
    before = len(_events(started.parent))
    big = "A1: " + "e" * EVIDENCE.chars
    proc = _cli("done", str(started), "write", "--executor", "ann", "--evidence", big)
    _refused(proc, "--evidence: ", f"at most {EVIDENCE.chars:,} characters")
    assert len(_events(started.parent)) == before
    assert not _events(started.parent, EventKind.step_completed)


@pytest.mark.parametrize(
    ("command", "limit"),
    [
        (["fail", "{plan}", "write", "--executor", "ann", "--reason"], REASON),
        (["block", "{plan}", "write", "--executor", "ann", "--reason"], REASON),
        (["skip", "{plan}", "after", "--reason"], REASON),
        (["review", "{plan}", "--accept", "--reason"], REASON),
        (["close", "{plan}", "--force", "--reason"], REASON),
        (["close", "{plan}", "--evidence"], EVIDENCE),
    ],
    ids=["fail", "block", "skip", "review", "close", "close-evidence"],
)
def test_every_check_in_bounds_its_text(started: Path, command: list[str], limit: Any) -> None:
    before = len(_events(started.parent))
    args = [a.format(plan=started) for a in command] + ["r" * (limit.chars + 1)]
    proc = _cli(*args)
    _refused(proc, f"{command[-1]}: ", f"at most {limit.chars:,} characters")
    assert len(_events(started.parent)) == before


def test_evidence_from_a_file_and_from_standard_input(tmp_path: Path) -> None:
    text = "e" * (EVIDENCE.chars - 10)  # over what one argument may hold on many systems
    for source in ("file", "stdin"):
        folder = tmp_path / source
        plan = write_plan(folder, AGENT_PLAN)
        assert _cli("start", str(plan), "write", "--executor", "ann").returncode == 0
        evidence = folder / "evidence.txt"
        evidence.write_text(f"A1: {text}\n")
        args = ["done", str(plan), "write", "--executor", "ann", "--evidence-file"]
        if source == "file":
            proc = _cli(*args, str(evidence))
        else:
            proc = _cli(*args, "-", stdin=evidence.read_text())
        assert proc.returncode == 0, proc.stderr[-2000:]
        (done,) = _events(folder, EventKind.step_completed)
        assert done.data["evidence"] == {"A1": text}


def test_evidence_file_mistakes_are_bad_input(started: Path, tmp_path: Path) -> None:
    args = ["done", str(started), "write", "--executor", "ann"]
    missing = tmp_path / "no-such.txt"
    _refused(_cli(*args, "--evidence-file", str(missing)), f"--evidence-file {missing}", "cannot")
    big = tmp_path / "big.txt"
    big.write_text("A1: " + "e" * EVIDENCE.chars)
    _refused(_cli(*args, "--evidence-file", str(big)), "--evidence-file", f"{EVIDENCE.chars:,}")
    _refused(
        _cli(*args, "--evidence-file", "-", stdin=big.read_text() * 5),
        "--evidence-file standard input",
        f"{EVIDENCE.chars:,}",
    )
    small = tmp_path / "small.txt"
    small.write_text("A1: fine")
    _refused(
        _cli(*args, "--evidence-file", str(small), "--evidence", "A1: also"),
        "--evidence and --evidence-file",
    )
    assert not _events(started.parent, EventKind.step_completed)


# -- restore --------------------------------------------------------------------------------------


@pytest.fixture
def export_lines(tmp_path: Path) -> list[dict[str, Any]]:
    """An export of a plan whose step failed with an output tail."""
    plan = write_plan(tmp_path / "src", {"plan_id": "limits", "steps": [{"id": "a", "run": "x"}]})
    with open_ledger(f"sqlite:///{_ledger(plan.parent)}") as led:
        led.record("limits", EventKind.run_started, run_id="r1")
        led.record("limits", EventKind.step_started, step_id="a", run_id="r1", def_hash="h")
        led.record(
            "limits",
            EventKind.step_failed,
            step_id="a",
            run_id="r1",
            error="boom",
            output_tail="…" + "o" * OUTPUT_TAIL.chars,  # what a run keeps: fine
            attempts=1,
        )
        led.record(
            "limits", EventKind.run_finished, run_id="r1", result="failed", failed_steps=["a"]
        )
    out = tmp_path / "export.jsonl"
    proc = _cli("export", str(plan), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in out.read_text().splitlines()]


def _restore(tmp_path: Path, lines: list[dict[str, Any]]) -> tuple[Path, Any]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    export = tmp_path / "crafted.jsonl"
    export.write_text("".join(json.dumps(doc) + "\n" for doc in lines))
    target = tmp_path / "restored" / "ledger.db"
    return target, _cli("restore", str(export), "--ledger", f"sqlite:///{target}")


def _failed(lines: list[dict[str, Any]]) -> dict[str, Any]:
    return next(d for d in lines if d.get("kind") == "step_failed")


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("tail", f"data.output_tail: expected an output tail of at most {OUTPUT_TAIL.chars:,}"),
        ("step_id", "step_id: String should match pattern"),
        ("summary_id", "data.failed_steps[1]: String should match pattern"),
        ("evidence", f"data.evidence.A1: expected evidence of at most {EVIDENCE.chars:,}"),
        ("reason", f"data.reason: expected a reason of at most {REASON.chars:,}"),
    ],
)
def test_restore_refuses_values_past_the_limits_and_writes_nothing(
    export_lines: list[dict[str, Any]], tmp_path: Path, case: str, says: str
) -> None:
    lines = [dict(d) for d in export_lines]
    failed = _failed(lines)
    if case == "tail":
        failed["data"] = {**failed["data"], "output_tail": "x" * 5_000_000}
    elif case == "step_id":
        failed["step_id"] = "../../etc/passwd"
    elif case == "summary_id":
        finished = next(d for d in lines if d.get("kind") == "run_finished")
        finished["data"] = {**finished["data"], "failed_steps": ["a", "a b\n"]}
    elif case == "evidence":
        failed["kind"] = "step_completed"
        failed["data"] = {"def_hash": "h", "outputs": {}, "evidence": {"A1": "e" * 70_000}}
        header = lines[0]
        header["kinds"] = {**header["kinds"], "step_failed": 0, "step_completed": 1}
    elif case == "reason":
        failed["kind"] = "step_blocked"
        failed["data"] = {"reason": "r" * (REASON.chars + 1), "by": "ann"}
        header = lines[0]
        header["kinds"] = {**header["kinds"], "step_failed": 0, "step_blocked": 1}
    target, proc = _restore(tmp_path, lines)
    line = 5 if case == "summary_id" else 4
    _refused(proc, f"crafted.jsonl:{line}: ", says, "nothing written")
    assert not target.parent.exists()  # not even an empty ledger
    if case == "tail":  # the export as written, its kept tail at the limit, restores
        target, proc = _restore(tmp_path / "as-written", export_lines)
        assert proc.returncode == 0, proc.stderr


# -- lists of step ids -----------------------------------------------------------------------------


@pytest.mark.usefixtures("prefect_server")
def test_a_run_of_many_steps_prints_a_capped_summary(tmp_path: Path) -> None:
    steps = [{"id": f"s{i:02d}", "run": "true"} for i in range(26)]
    plan = write_plan(tmp_path, {"plan_id": "limits", "steps": steps})
    proc = run_cli("run", str(plan), timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (ran,) = [line for line in proc.stdout.splitlines() if "steps run: 26" in line]
    assert ran.endswith(" … and 6 more)"), ran
    assert "s19" in ran and "s20" not in ran
    log = (tmp_path / "IMPLEMENTATION_LOG.md").read_text()
    assert "- ran: s00, s01" in log and " … and 6 more" in log
    assert "s25" not in next(line for line in log.splitlines() if line.startswith("- ran: "))
    # The whole list stays in the ledger and the marker.
    (finished,) = _events(tmp_path, EventKind.run_finished)
    assert len(finished.data["executed_steps"]) == 26
