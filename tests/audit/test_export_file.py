"""Export files and restores without a Prefect run: the ledger histories are written through the
ledger API (the events a run writes). Bad input — a format, an existing output, every kind of
bad export line — exits 2 and writes nothing; a restore into a ledger that holds other plans
moves the seq numbers up in one piece; ``--keep-identity``; an export of more than one page.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark import load_plan
from prefect_waymark.ledger import EventKind, Ledger, open_ledger
from tests._support.helpers import run_cli, write_plan

#: The events record_history writes without extra ones.
EVENTS = 11
NO_PREFECT = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}  # nothing listens there
PLAN_DOC: dict[str, Any] = {
    "plan_id": "exported",
    "steps": [
        {"id": "a", "run": "echo a"},
        {"id": "pay", "run": "echo pay", "depends_on": ["a"], "action": "pay"},
        {"id": "c", "run": "echo c", "depends_on": ["pay"]},
    ],
}


def record_history(led: Ledger, plan: Path, *, extra_events: int = 0, run: str = "r1") -> None:
    """a completed, pay completed with its receipt, c failed; ``extra_events`` reanchors."""
    spec = load_plan(plan)
    pid, hashes = spec.plan_id, spec.step_hashes()
    led.record(pid, EventKind.run_started, run_id=run, step_hashes=hashes)
    for i in range(extra_events):
        led.record(pid, EventKind.reanchor, run_id=run, refs={"n": i}, note="x" * 40)
    for sid in ("a", "pay"):
        led.record(pid, EventKind.step_started, step_id=sid, run_id=run, def_hash=hashes[sid])
        if sid == "pay":
            claim = led.claim_action(
                plan_id=pid, step_id=sid, action="pay", key=f"{pid}/pay/pay", run_id=run
            )
            led.settle_action(
                claim.record.key, outcome="applied", token=claim.record.token, external_id="p-7"
            )
        led.record(pid, EventKind.step_completed, step_id=sid, run_id=run, def_hash=hashes[sid])
    led.record(pid, EventKind.step_started, step_id="c", run_id=run, def_hash=hashes["c"])
    led.record(pid, EventKind.step_failed, step_id="c", run_id=run, error="boom", attempts=1)
    led.record(pid, EventKind.run_finished, run_id=run, result="failed", executor="tester")
    led.record(pid, EventKind.marker_written, run_id=run, result="failed")


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    path = write_plan(tmp_path / "proj", PLAN_DOC)
    with open_ledger(f"sqlite:///{path.parent / '.waymark' / 'ledger.db'}") as led:
        record_history(led, path)
    return path


def cli(*args: str) -> Any:
    return run_cli(*args, env=NO_PREFECT)


def export_to(plan: Path, out: Path, *args: str) -> list[str]:
    proc = cli("export", str(plan), "-o", str(out), *args)
    assert proc.returncode == 0, proc.stderr
    return out.read_text().splitlines()


def test_a_format_other_than_jsonl_is_bad_input(plan: Path, tmp_path: Path) -> None:
    proc = cli("export", str(plan), "--format", "csv", "-o", str(tmp_path / "x.csv"))
    assert proc.returncode == 2 and "--format 'csv'" in proc.stderr and "jsonl" in proc.stderr
    assert proc.stdout == "" and not (tmp_path / "x.csv").exists()


def test_an_existing_output_is_kept_unless_forced(plan: Path, tmp_path: Path) -> None:
    out = tmp_path / "audit.jsonl"
    out.write_text("mine\n")
    proc = cli("export", str(plan), "-o", str(out))
    assert proc.returncode == 2 and "--force" in proc.stderr
    assert out.read_text() == "mine\n"
    lines = export_to(plan, out, "--force")
    assert json.loads(lines[0])["counts"] == {"events": EVENTS, "markers": 1, "receipts": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.jsonl", "proj"]  # no temp file


def _edit(lines: list[str], n: int, **changes: Any) -> list[str]:
    doc = json.loads(lines[n - 1])
    doc.update(changes)
    return [*lines[: n - 1], json.dumps(doc), *lines[n:]]


def _drop(lines: list[str], n: int, name: str) -> list[str]:
    doc = json.loads(lines[n - 1])
    del doc[name]
    return [*lines[: n - 1], json.dumps(doc), *lines[n:]]


def _bad_files(lines: list[str]) -> dict[str, tuple[list[str], str]]:
    """Each bad export and what the refusal must say (``{f}``: the file)."""
    marker_at = next(i for i, t in enumerate(lines, 1) if '"type": "marker"' in t)
    last = len(lines)  # the receipt line
    kinds = json.loads(lines[0])["kinds"]
    swapped = {**kinds, "run_started": 0, "step_started": kinds["step_started"] + 1}
    return {
        "seq_sqlite": (_edit(lines, 2, seq=2**63), "{f}:2: seq: "),
        "seq_postgres": (_edit(lines, 2, seq=2**31), "{f}:2: seq: "),
        "key_long": (_edit(lines, last, key="k" * 401), f"{{f}}:{last}: key: "),
        "key_of_another_plan": (  # would hold plan victim's action `pay` in the new ledger
            _edit(lines, last, key="victim/pay/pay"),
            f"{{f}}:{last}: key: 'victim/pay/pay' is the key of plan 'victim' (its step 'pay')",
        ),
        "ledger_id_long": (_edit(lines, 1, ledger_id="x" * 257), "{f}:1: ledger_id: "),
        "ledger_id_empty": (_edit(lines, 1, ledger_id=""), "{f}:1: ledger_id: "),
        "plan_id": (_edit(lines, 1, plan_id="../../etc/passwd"), "{f}:1: plan_id: "),
        "at_number": (_edit(lines, 3, at=12345), "{f}:3: at: "),
        "exported_number": (_edit(lines, 1, exported_at=12345), "{f}:1: exported_at: "),
        "receipt_field": (_drop(lines, last, "token"), f"{{f}}:{last}: token: "),
        "receipt_naive": (
            _edit(lines, last, intent_at="2026-12-01T10:00:00"),
            f"{{f}}:{last}: intent_at: ",
        ),
        "claims": (_edit(lines, last, claims=-5), f"{{f}}:{last}: claims: "),
        "receipt_first": ([lines[0], lines[-1], *lines[1:-1]], "{f}:3: type: 'event' after a"),
        "kinds": (_edit(lines, 1, kinds=swapped), "{f}:1: kinds.run_started: the header says 0"),
        "blank_inside": ([*lines[:3], " ", *lines[3:]], "{f}:4: an empty line inside"),
        "schema": (_edit(lines, 1, schema_version=2), "{f}:1: schema_version: 2"),
        "kind": (_edit(lines, 3, kind="step_teleported"), "{f}:3: kind: "),
        "json": ([*lines[:3], "{not json", *lines[4:]], "{f}:4: not a JSON object"),
        "seq": (_edit(lines, 4, seq=1), "{f}:4: seq: 1 after 2"),
        "naive": (_edit(lines, 5, at="2026-12-01T10:00:00"), "{f}:5: at: "),
        "marker": (_edit(lines, marker_at, kind="run_finished"), f"{{f}}:{marker_at}: type: "),
        "receipt": (_edit(lines, len(lines), colour="red"), f"{{f}}:{len(lines)}: colour: "),
        "cut": (lines[:-1], "{f}:1: counts.receipts: the header says 1, the file has 0"),
        "header": (lines[1:], "{f}:1: type: expected the header line"),
        "empty": ([], "{f}: empty file"),
    }


BAD_CASES = (
    "seq_sqlite",
    "seq_postgres",
    "key_long",
    "key_of_another_plan",
    "ledger_id_long",
    "ledger_id_empty",
    "plan_id",
    "at_number",
    "exported_number",
    "receipt_field",
    "receipt_naive",
    "claims",
    "receipt_first",
    "kinds",
    "blank_inside",
    "schema",
    "kind",
    "json",
    "seq",
    "naive",
    "marker",
    "receipt",
    "cut",
    "header",
    "empty",
)


@pytest.fixture(scope="module")
def good_lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """One good export (read once for every bad variant of it)."""
    folder = tmp_path_factory.mktemp("good")
    path = write_plan(folder / "proj", PLAN_DOC)
    with open_ledger(f"sqlite:///{path.parent / '.waymark' / 'ledger.db'}") as led:
        record_history(led, path)
    return export_to(path, folder / "good.jsonl")


@pytest.mark.parametrize("case", BAD_CASES)
def test_a_bad_export_line_is_refused_with_its_number_and_nothing_is_written(
    good_lines: list[str], tmp_path: Path, case: str
) -> None:
    cases = _bad_files(good_lines)
    assert set(cases) == set(BAD_CASES)
    bad, says = cases[case]
    export = tmp_path / "bad.jsonl"
    export.write_text("".join(f"{t}\n" for t in bad))
    target = tmp_path / "restored" / "ledger.db"
    proc = cli("restore", str(export), "--ledger", f"sqlite:///{target}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert says.format(f=export) in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not target.parent.exists()  # not even an empty ledger


def test_restore_into_a_ledger_with_other_plans_moves_the_seqs_up(
    plan: Path, tmp_path: Path, ledger_url: str
) -> None:
    export = tmp_path / "audit.jsonl"
    original = export_to(plan, export)
    other = write_plan(tmp_path / "other", {**PLAN_DOC, "plan_id": "other"})
    with open_ledger(ledger_url) as led:
        record_history(led, other, run="r0")  # uses the seq numbers the export has
        top = led.events("other")[-1].seq
    proc = cli("restore", str(export), "--ledger", ledger_url)
    assert proc.returncode == 0, proc.stderr
    assert f"every seq moved up by {top}" in proc.stdout
    with open_ledger(ledger_url, create=False) as led:
        seqs = [e.seq for e in led.events("exported")]
        # The next append continues after the restored events (PostgreSQL: its sequence too).
        after = led.record("other", EventKind.reanchor, run_id="r0")
    assert seqs == [json.loads(t)["seq"] + top for t in original[1 : 1 + EVENTS]]
    assert after.seq == seqs[-1] + 1
    mine = json.loads(cli("status", str(plan), "--json").stdout)
    restored = json.loads(cli("status", str(plan), "--json", "--ledger", ledger_url).stdout)
    assert restored == mine and mine["counts"] == {"completed": 2, "failed": 1}
    at = json.loads(
        cli("replay", str(plan), "--at", str(seqs[5]), "--json", "--ledger", ledger_url).stdout
    )
    assert at == json.loads(cli("replay", str(plan), "--at", "6", "--json").stdout)


def test_keep_identity_takes_the_exported_ledgers_id_only_into_a_new_ledger(
    plan: Path, tmp_path: Path
) -> None:
    export = tmp_path / "audit.jsonl"
    header = json.loads(export_to(plan, export)[0])
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    proc = cli("restore", str(export), "--ledger", fresh, "--keep-identity")
    assert proc.returncode == 0, proc.stderr
    with open_ledger(fresh, create=False) as led:
        assert led.ledger_id == header["ledger_id"] is not None
    busy = f"sqlite:///{tmp_path / 'busy.db'}"
    with open_ledger(busy) as led:
        led.record("someone-else", EventKind.reanchor)
        before = led.ledger_id
    proc = cli("restore", str(export), "--ledger", busy, "--keep-identity")
    assert proc.returncode == 2 and "without --keep-identity" in proc.stderr
    with open_ledger(busy, create=False) as led:
        assert led.ledger_id == before and led.events("exported") == []


def test_an_export_of_several_pages_round_trips(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    with open_ledger(f"sqlite:///{plan.parent / '.waymark' / 'ledger.db'}") as led:
        record_history(led, plan, extra_events=4100)  # the export reads 2,000 events a page
    first = export_to(plan, tmp_path / "one.jsonl")
    total = EVENTS + 4100
    assert len(first) == 1 + total + 1
    seqs = [json.loads(t)["seq"] for t in first[1:-1]]
    assert seqs == list(range(1, total + 1))
    restored = f"sqlite:///{tmp_path / 'restored.db'}"
    assert cli("restore", str(tmp_path / "one.jsonl"), "--ledger", restored).returncode == 0
    second = export_to(plan, tmp_path / "two.jsonl", "--ledger", restored)
    assert first[1:] == second[1:]
    final = json.loads(cli("status", str(plan), "--json").stdout)
    assert json.loads(cli("replay", str(plan), "--at", str(total), "--json").stdout) == final


def test_an_export_of_a_renamed_plan_restores_the_rename(tmp_path: Path) -> None:
    from prefect_waymark.errors import LedgerError

    plan = write_plan(tmp_path / "proj", {**PLAN_DOC, "plan_id": "old"})
    with open_ledger(f"sqlite:///{plan.parent / '.waymark' / 'ledger.db'}") as led:
        record_history(led, plan)
        led.rename_plan("old", "new", by="tester")
    export_to(plan, tmp_path / "old.jsonl")
    restored = f"sqlite:///{tmp_path / 'restored.db'}"
    assert cli("restore", str(tmp_path / "old.jsonl"), "--ledger", restored).returncode == 0
    with open_ledger(restored, create=False) as led:
        with pytest.raises(LedgerError, match="renamed to 'new'"):
            led.record("old", EventKind.step_started, step_id="c", run_id="r9")
        assert led.events("old")[-1].kind == EventKind.plan_renamed


def test_a_renamed_plans_receipts_keep_their_old_keys_through_a_restore(tmp_path: Path) -> None:
    """Receipts carried over by `rename-plan` keep the old id in their keys (old/pay/pay):
    they are this plan's own, not another plan's, and restore takes them."""
    plan = write_plan(tmp_path / "proj", {**PLAN_DOC, "plan_id": "old"})
    with open_ledger(f"sqlite:///{plan.parent / '.waymark' / 'ledger.db'}") as led:
        record_history(led, plan)
        led.rename_plan("old", "new", by="tester")
    renamed = write_plan(tmp_path / "proj", {**PLAN_DOC, "plan_id": "new"})
    lines = export_to(renamed, tmp_path / "new.jsonl")
    assert json.loads(lines[-1])["key"] == "old/pay/pay"
    restored = f"sqlite:///{tmp_path / 'restored.db'}"
    proc = cli("restore", str(tmp_path / "new.jsonl"), "--ledger", restored)
    assert proc.returncode == 0, proc.stderr
    with open_ledger(restored, create=False) as led:
        assert [r.key for r in led.receipts("new", "pay")] == ["old/pay/pay"]


def test_empty_lines_at_the_end_are_fine(good_lines: list[str], tmp_path: Path) -> None:
    export = tmp_path / "audit.jsonl"
    export.write_text("".join(f"{t}\n" for t in good_lines) + "\n  \n\n")
    target = tmp_path / "restored.db"
    proc = cli("restore", str(export), "--ledger", f"sqlite:///{target}")
    assert proc.returncode == 0, proc.stderr
    with open_ledger(f"sqlite:///{target}", create=False) as led:
        assert len(led.events("exported")) == EVENTS


def test_a_refusal_after_the_lines_were_read_leaves_no_ledger_nor_folder(
    good_lines: list[str], tmp_path: Path
) -> None:
    """No events (the header alone), and seqs that would pass 2^31 - 1 once moved up: refused
    by the ledger with exit 2; a new ledger file, and the folders made for it, are removed."""
    header = json.loads(good_lines[0])
    empty = tmp_path / "empty.jsonl"
    header_only = {**header, "last_seq": 0, "counts": dict.fromkeys(header["counts"], 0)}
    empty.write_text(json.dumps({**header_only, "kinds": {}}) + "\n")
    work = tmp_path / "work"
    work.mkdir()
    proc = cli("restore", str(empty), "--workdir", str(work))  # the default: work/.waymark/
    assert proc.returncode == 2 and "has no event" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and list(work.iterdir()) == []

    top = 2**31 - 1  # the last seq PostgreSQL's integer column holds
    shift = top - header["last_seq"]
    lines = [json.dumps({**header, "last_seq": top})]
    for text in good_lines[1:]:
        doc = json.loads(text)
        if "seq" in doc:
            doc["seq"] += shift
        lines.append(json.dumps(doc))
    high = tmp_path / "high.jsonl"
    high.write_text("".join(f"{t}\n" for t in lines))
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"  # alone in a ledger, those seqs fit
    assert cli("restore", str(high), "--ledger", fresh).returncode == 0
    other = _edit(_edit(good_lines, 1, plan_id="other"), len(good_lines), key="other/pay/pay")
    low = tmp_path / "other.jsonl"  # seq 1..: it would move up past the ledger's last seq
    low.write_text("".join(f"{t}\n" for t in other))
    proc = cli("restore", str(low), "--ledger", fresh)
    assert proc.returncode == 2 and "beyond the largest" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    with open_ledger(fresh, create=False) as led:
        assert led.events("other") == [] and led.receipts("other") == []


def test_keep_identity_needs_an_identity_to_keep(good_lines: list[str], tmp_path: Path) -> None:
    export = tmp_path / "schema1.jsonl"
    export.write_text(
        "".join(f"{t}\n" for t in [_edit(good_lines, 1, ledger_id=None)[0], *good_lines[1:]])
    )
    target = tmp_path / "new" / "ledger.db"
    proc = cli("restore", str(export), "--ledger", f"sqlite:///{target}", "--keep-identity")
    assert proc.returncode == 2 and f"{export}:1: ledger_id: null" in proc.stderr
    assert "restore without --keep-identity" in proc.stderr and not target.parent.exists()
    assert cli("restore", str(export), "--ledger", f"sqlite:///{target}").returncode == 0


def test_export_never_writes_over_a_ledger_nor_into_waymarks_folder(plan: Path) -> None:
    db = plan.parent / ".waymark" / "ledger.db"
    before = db.read_bytes()
    for out in (db, db.with_name("ledger.db-wal"), db.with_name("ledger.db-journal")):
        proc = cli("export", str(plan), "-o", str(out), "--force")
        assert proc.returncode == 2 and "the ledger's own file" in proc.stderr, proc.stderr
        assert "--force" not in proc.stderr
    inside = plan.parent / ".waymark" / "audit.jsonl"
    proc = cli("export", str(plan), "-o", str(inside))
    assert proc.returncode == 2 and "inside a .waymark folder" in proc.stderr
    assert not inside.exists() and db.read_bytes() == before
    with open_ledger(f"sqlite:///{db}", create=False) as led:
        assert len(led.events("exported")) == EVENTS


def test_the_closing_hint_of_a_restore_never_prints_a_password() -> None:
    from prefect_waymark.cli.audit_command import _read_hint

    url = "postgresql+psycopg://postgres:s3cret@db.example:5432/waymark"
    given = _read_hint(url, url)
    assert "s3cret" not in given and "***" not in given
    assert '`waymark status <plan file> --ledger "$WAYMARK_LEDGER_URL"`' in given
    assert "s3cret" not in _read_hint(url, None)  # from $WAYMARK_LEDGER_URL: it still says so
    assert "`waymark status <plan file>`" in _read_hint(url, None)
    plain = "sqlite:////tmp/x.db"
    assert _read_hint(plain, plain) == f"Read it with `waymark status <plan file> --ledger {plain}`"
