"""What a ``waymark`` command imports at start: the console script builds the app with the one
command its arguments name (``cli/_registry.py``), so ``waymark status`` and ``waymark next``
load their own modules and not the other commands' (nor typer's rich help); ``waymark --help``,
``waymark`` alone and a word that is no command still get every command. How long a command
takes is a benchmark's to say (``bench/bench_ledger.py``), not a test's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from prefect_waymark.cli._registry import VERBS, build_app, verb_of
from tests._support.helpers import run_cli, write_plan

PLAN_DOC = {
    "plan_id": "start-up",
    "steps": [
        {"id": "fetch", "run": "echo fetch"},
        {"id": "clean", "run": "echo clean", "depends_on": ["fetch"]},
    ],
}
NO_PREFECT = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}  # nothing listens there

# The console script, then the modules of the process, printed after the command's own output.
_PROBE = """
import json, sys
from prefect_waymark.cli import main
sys.argv = ["waymark", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
print("\\nPROBE " + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

#: Every command module; a command loads its own (and those it calls) only.
COMMAND_MODULES = {
    f"prefect_waymark.cli.{verb.target.partition(':')[0]}" for verb in VERBS.values()
}
#: The modules no read command needs: other commands', typer's rich help, the MCP SDK, Prefect.
NEVER_FOR_A_READ = {
    "prefect_waymark.cli.commands",  # the full app
    "prefect_waymark.cli.deploy_command",
    "prefect_waymark.cli.import_command",
    "prefect_waymark.cli.mcp_command",
    "prefect_waymark.cli.mcp_server",
    "prefect_waymark.cli.audit_command",
    "prefect_waymark.cli.metrics_command",
    "prefect_waymark.cli.init_command",
    "prefect_waymark.cli.close_command",
    "prefect_waymark.cli.plan_history",
    "prefect_waymark.cli.marker_command",
    "prefect_waymark.cli.review",
    "prefect_waymark.cli.server_commands",
    "prefect_waymark.cli.hook_command",
    "prefect_waymark.importers",
    "prefect_waymark.audit",
    "prefect_waymark.metrics",
    "typer.rich_utils",
    "rich",
    "mcp",
    "prefect",
}


def probe(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[int, set[str], str]:
    """Run ``waymark ARGS`` as the console script does; its exit code, modules and output."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env if env is not None else {**os.environ, **NO_PREFECT},
        timeout=120,
    )
    out, _, line = proc.stdout.rpartition("\nPROBE ")
    assert line, proc.stdout + proc.stderr
    found = json.loads(line)
    return found["code"], set(found["modules"]), out


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_plan(tmp_path_factory.mktemp("start-up"), PLAN_DOC)


@pytest.mark.parametrize(
    ("args", "own"),
    [
        (("status", "{plan}", "--json"), "prefect_waymark.cli.status_command"),
        (("next", "{plan}", "--json"), "prefect_waymark.cli.agent_commands"),
        (("validate", "{plan}"), "prefect_waymark.cli.plan_commands"),
    ],
)
def test_a_command_imports_its_own_module_only(
    plan: Path, tmp_path: Path, args: tuple[str, ...], own: str
) -> None:
    code, modules, out = probe(tmp_path, *(a.format(plan=plan) for a in args))
    assert code in (0, 3), out  # ran: `next` of a fresh plan answers; status says not done
    assert own in modules
    assert out.strip()
    others = COMMAND_MODULES - {own}
    unexpected = sorted(
        m
        for m in modules
        if m in others or any(m == n or m.startswith(n + ".") for n in NEVER_FOR_A_READ)
    )
    assert unexpected == [], unexpected


def test_the_probe_sees_what_the_full_app_imports(tmp_path: Path) -> None:
    code, modules, out = probe(tmp_path, "--help")
    assert code == 0 and "Usage: waymark" in out
    assert COMMAND_MODULES <= modules


def test_help_lists_every_command_of_the_registry() -> None:
    proc = run_cli("--help", env={"COLUMNS": "400", "TERM": "dumb"})
    assert proc.returncode == 0, proc.stderr
    commands = proc.stdout[proc.stdout.index("─ Commands ─") :]
    assert re.findall(r"^│ (\S+) {2,}", commands, re.M) == list(VERBS)


def test_the_full_app_has_every_command_in_order() -> None:
    app = build_app()
    names = [c.name for c in app.registered_commands] + [g.name for g in app.registered_groups]
    assert names == list(VERBS)


@pytest.mark.parametrize("args", [[], ["--help"], ["statu"], ["-x", "status"], ["Status"]])
def test_the_full_app_unless_a_command_is_named(args: list[str]) -> None:
    assert verb_of(args) is None


def test_a_command_named_first_is_the_one_built() -> None:
    assert verb_of(["status", "plan.yaml", "--json"]) == "status"
    app = build_app(["server"])
    assert [g.name for g in app.registered_groups] == ["server"] and not app.registered_commands


def test_an_unknown_command_is_exit_2_with_suggestions() -> None:
    proc = run_cli("statu", "plan.yaml", env={"COLUMNS": "200", "TERM": "dumb"})
    assert proc.returncode == 2
    assert "No such command 'statu'. Did you mean 'status', 'start'?" in proc.stderr


def test_a_command_built_alone_still_parses_as_a_command_of_the_group(tmp_path: Path) -> None:
    """One command in the app: the console script still reads ``waymark VERB ARGS`` (typer would
    make a lone command the whole program, taking VERB for its first argument)."""
    proc = run_cli("status", "--help", env={"COLUMNS": "200", "TERM": "dumb"})
    assert proc.returncode == 0, proc.stderr
    assert "Usage: waymark status [OPTIONS] {plan}" in proc.stdout
    proc = run_cli("status", env={"COLUMNS": "200", "TERM": "dumb"})
    assert proc.returncode == 2 and "Missing argument 'plan'" in proc.stderr
    proc = run_cli("server", env={"COLUMNS": "200", "TERM": "dumb"})
    assert "start" in proc.stdout + proc.stderr and "stop" in proc.stdout + proc.stderr


def test_validate_opens_no_ledger(plan: Path, tmp_path: Path) -> None:
    """``validate`` reads the plan file only: neither the ledger's records nor its engine."""
    code, modules, out = probe(tmp_path, "validate", str(plan))
    assert code == 0 and "valid plan 'start-up'" in out
    assert {
        "prefect_waymark.ledger.base",
        "prefect_waymark.ledger.events",
        "sqlalchemy",
    }.isdisjoint(modules)


def test_check_ins_without_a_server_load_no_http_client(tmp_path: Path) -> None:
    """``start`` and ``done`` write the views; with no Prefect server known they send nothing,
    so neither httpx (nor the rich its CLI module loads) nor Prefect is imported."""
    plan = write_plan(
        tmp_path,
        {"plan_id": "check-ins", "steps": [{"id": "write", "kind": "agent",
                                            "instructions": "Write the note."}]},
    )  # fmt: skip
    home = tmp_path / "prefect-home"  # no profiles, no local server: no server known
    home.mkdir()
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "PREFECT_PROFILE"))
    }
    env["PREFECT_HOME"] = str(home)
    for verb in ("start", "done"):
        code, modules, out = probe(tmp_path, verb, str(plan), "write", "--json", env=env)
        assert code == 0, out
        assert json.loads(out)["ok"] is True
        heavy = sorted(m for m in modules if m.partition(".")[0] in {"httpx", "rich", "prefect"})
        assert heavy == [], (verb, heavy)
