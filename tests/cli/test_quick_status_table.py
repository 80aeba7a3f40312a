"""``waymark status PLAN`` (the table) on the quick path (cli/quick_status.py): for a plan status
has read before, the table is the full command's byte for byte, with the same exit code (on the
same ledgers as ``--json``'s: tests/cli/test_quick_status.py), for a small plan (rich draws it)
and a big one (cli/status_table.py draws it); the process loads neither pydantic, typer, PyYAML,
SQLAlchemy nor Prefect; Ctrl-C ends both alike (a closed pipe: tests/cli/test_quick_status.py).

Every "full" answer is a real ``waymark`` process with the plan cache off (the full command,
always); every ledger history is written through the ledger API, as a run writes it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from prefect_waymark import load_plan
from prefect_waymark.cli.quick_status import quick_status
from prefect_waymark.cli.status_table import LARGE_TABLE_ROWS
from prefect_waymark.ledger import open_ledger
from tests._support.helpers import WAYMARK, run_cli, write_plan
from tests.cli.test_status import NO_PREFECT, PLAN_DOC, default_url, record_history

FULL = {**NO_PREFECT, "WAYMARK_PLAN_CACHE": "off"}


def _quick_process(plan: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The table as a whole ``waymark`` process with the plan's digest kept: the quick path
    (the same stdout a terminal-less caller gets from either path: rich draws no colours)."""
    env = {**os.environ, **NO_PREFECT, "WAYMARK_PLAN_CACHE": str(cache)}
    return subprocess.run(
        [WAYMARK, "status", str(plan), *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_a_big_plan_and_a_workdir(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Over :data:`LARGE_TABLE_ROWS` steps the table is drawn without rich's table: the same
    either way, from another workdir's ledger too."""
    n = LARGE_TABLE_ROWS + 20
    doc = {
        "plan_id": "big",
        "title": "Ünïcode — 大きな plan",
        "steps": [
            {"id": f"s{i:04d}", "run": "true", "owner": "張偉" if i % 7 == 0 else None}
            | ({"depends_on": [f"s{i - 1:04d}"]} if i else {})
            for i in range(n)
        ],
    }
    plan = write_plan(tmp_path / "proj", doc)
    work = tmp_path / "elsewhere"
    work.mkdir()
    with open_ledger(f"sqlite:///{work.resolve() / '.waymark' / 'ledger.db'}") as led:
        for sid in ("s0000", "s0001"):
            led.record("big", "step_started", step_id=sid, branch="main", run_id="r1")
            led.record("big", "step_completed", step_id=sid, branch="main", run_id="r1")
        led.record("big", "step_started", step_id="s0002", branch="main", run_id="r1")
        led.record("big", "step_failed", step_id="s0002", branch="main", run_id="r1", error="e")
    for args in ((), ("--workdir", str(work)), (f"--workdir={work}",)):
        full = run_cli("status", str(plan), *args, env=FULL)
        assert full.returncode == (1 if args else 0), full.stderr  # 1: a step failed
        load_plan(plan, keep_digest=True)
        quick = _quick_process(plan, cache, *args)
        assert (quick.stdout, quick.returncode) == (full.stdout, full.returncode), args
        capsys.readouterr()
        assert quick_status(["status", str(plan), *args]) == full.returncode  # answered quickly
        assert capsys.readouterr().out == full.stdout
        assert len(full.stdout.splitlines()) > n  # every step has its row
    assert "failed: s0002: e" in quick.stdout  # the workdir's ledger was read


def test_the_table_process_loads_none_of_the_heavy_modules(tmp_path: Path, cache: Path) -> None:
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    with open_ledger(default_url(plan)) as led:
        record_history(led, plan)
    first = run_cli("status", str(plan), env=NO_PREFECT)  # the full path keeps the digest
    assert list(cache.glob("*.status.json")), "status kept no digest"
    probe = (
        "import atexit, sys\n"
        "heavy = ('pydantic', 'typer', 'yaml', 'sqlalchemy', 'prefect')\n"
        "atexit.register(lambda: print('LOADED', sorted({m.split('.')[0] for m in sys.modules}"
        " & set(heavy)), file=sys.stderr))\n"
        "from prefect_waymark.cli import main\n"
        "sys.argv = ['waymark', *sys.argv[1:]]\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, "status", str(plan)],
        capture_output=True,
        text=True,
        env={**os.environ, **NO_PREFECT},
        timeout=120,
    )
    assert "LOADED []" in proc.stderr, proc.stderr
    assert proc.stdout == first.stdout and proc.returncode == first.returncode == 4


def test_what_the_table_leaves_to_the_full_command(tmp_path: Path, cache: Path) -> None:
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    assert quick_status(["status", str(plan)]) is None  # no digest yet
    load_plan(plan, keep_digest=True)
    for args in (["--rebuild"], ["--ledger", default_url(plan)], ["--workdir"], ["--table"]):
        assert quick_status(["status", str(plan), *args]) is None, args
    assert quick_status(["status", str(plan), str(plan)]) is None


def test_what_people_wrote_is_shown_as_written(tmp_path: Path, cache: Path) -> None:
    """Brackets in a title, an owner, an error or a review reason are text, not rich markup:
    shown as written (they were dropped, and a stray ``[/]`` ended the command in a
    traceback), the same on both paths."""
    doc = {
        **PLAN_DOC,
        "title": "Démo [bold]x[/]",
        "steps": [
            {**s, "owner": "bo [red]"} if s["id"] == "fetch" else s for s in PLAN_DOC["steps"]
        ],
    }
    plan = write_plan(tmp_path / "proj", doc)
    with open_ledger(default_url(plan)) as led:
        record_history(led, plan)
        spec = load_plan(plan)
        branch = spec.step("clean").branch
        for kind, data in (("step_failed", {"error": "exit 1: [/] oops [x] [bold]no[/bold]"}),):
            led.record(spec.plan_id, kind, step_id="clean", branch=branch, run_id="run-1", **data)
        led.record(spec.plan_id, "plan_aborted", by="ann [i]", reason="[stop] now")
    full = run_cli("status", str(plan), env=FULL)
    assert full.returncode == 4 and "Traceback" not in full.stderr, full.stderr
    for text in (
        "Démo [bold]x[/]",
        "bo [red]",
        "clean: exit 1: [/] oops [x] [bold]no[/bold]",
        "review-me: the orders row changed",
        "by ann [i] at",
        "([stop] now)",
    ):
        assert text in full.stdout, text
    load_plan(plan, keep_digest=True)
    quick = _quick_process(plan, cache)
    assert (quick.stdout, quick.returncode) == (full.stdout, full.returncode)


def test_ctrl_c_ends_both_paths_alike(tmp_path: Path, cache: Path) -> None:
    """Ctrl-C while the table is printed: exit 130 and nothing on stderr, on either path (typer
    ends the full command so; the quick path does the same). The interrupt is raised in the
    table's printing, after its first line, by the probe below (a real SIGINT lands wherever
    the process happens to be)."""
    plan = write_plan(tmp_path / "proj", PLAN_DOC)
    with open_ledger(default_url(plan)) as led:
        record_history(led, plan)
    load_plan(plan, keep_digest=True)
    probe = (
        "import sys\n"
        "from prefect_waymark.cli import status_output\n"
        "def interrupted(view, extra, console=None):\n"
        "    print('first line', flush=True)\n"
        "    raise KeyboardInterrupt\n"
        "status_output.print_table = interrupted\n"
        "from prefect_waymark.cli import main\n"
        "sys.argv = ['waymark', *sys.argv[1:]]\n"
        "main()\n"
    )
    answers = []
    for cache_env in ("off", str(cache)):  # the full command, then the quick path
        env = {**os.environ, **NO_PREFECT, "WAYMARK_PLAN_CACHE": cache_env}
        answers.append(
            subprocess.run(
                [sys.executable, "-c", probe, "status", str(plan)],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
        )
    for proc in answers:
        assert (proc.returncode, proc.stdout, proc.stderr) == (130, "first line\n", "")
