"""A check-in shows in the Prefect UI: `waymark start / done / fail / block`
publish a new version of the plan page and the steps table to the session's real Prefect server
(read back over its REST API); a server that does not answer costs one warning and the check-in
is recorded all the same; with no server known nothing is sent and none is started."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from prefect_waymark.ledger import open_ledger
from prefect_waymark.markers.plan_copy import plan_copy
from tests._support.helpers import WAYMARK, run_cli, write_plan

PLAN: dict[str, Any] = {
    "plan_id": "checkin-ui",
    "title": "Agent steps in the UI",
    "steps": [
        {"id": "draft", "kind": "agent", "instructions": "Write draft.md.",
         "outputs": ["draft.md"]},
        {"id": "review", "kind": "manual", "depends_on": ["draft"],
         "instructions": "Read draft.md."},
    ],
}  # fmt: skip


def _versions(api: str, key: str) -> list[dict[str, Any]]:
    """Every version of ``key`` the server holds, the newest first."""
    body = {"artifacts": {"key": {"any_": [key]}}, "sort": "CREATED_DESC", "limit": 50}
    found = httpx.post(f"{api}/artifacts/filter", json=body, timeout=10)
    found.raise_for_status()
    out: list[dict[str, Any]] = found.json()
    return out


def _key(work: Path) -> str:
    with open_ledger(f"sqlite:///{work / '.waymark' / 'ledger.db'}") as led:
        return plan_copy("checkin-ui", led, str(work)).page_key()


def test_each_check_in_publishes_the_plan_page_and_steps_table(
    prefect_server: str, tmp_path: Path
) -> None:
    work = tmp_path / "plan"
    p = str(write_plan(work, PLAN))
    proc = run_cli("start", p, "draft", "--executor", "writer")
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
    key = _key(work)
    (page,) = _versions(prefect_server, key)
    assert page["type"] == "markdown" and page["flow_run_id"] is None
    assert page["metadata_"]["check-in"] == "draft started by writer"
    assert page["metadata_"]["waymark-plan"] == "checkin-ui"
    (steps,) = _versions(prefect_server, key.replace("-plan-page", "-steps"))
    rows = {r["step"]: r for r in json.loads(steps["data"])}
    assert rows["draft"]["status"] == "in_progress" and rows["review"]["status"] == "pending"
    assert "check-in: draft started by writer" in steps["description"]

    (work / "draft.md").write_text("# Draft\n")
    proc = run_cli("done", p, "draft", "--executor", "writer")
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
    proc = run_cli("start", p, "review", "--executor", "boss")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("block", p, "review", "--executor", "boss", "--reason", "waiting for legal")
    assert proc.returncode == 0, proc.stderr
    pages = _versions(prefect_server, key)
    assert [v["metadata_"]["check-in"] for v in pages] == [
        "review blocked by boss",
        "review started by boss",
        "draft done by writer",
        "draft started by writer",
    ]
    assert "1/2 done" in pages[0]["description"], pages[0]["description"]
    # each version says it is the plan page and which check-in made it
    assert pages[0]["description"].startswith("Plan page · check-in: review blocked by boss · ")
    said = "**This version:** published by the check-in “review blocked by boss”"
    assert said in pages[0]["data"]
    assert "- `review` — blocked: waiting for legal" in pages[0]["data"]  # the reason, shown
    steps_key = key.replace("-plan-page", "-steps")
    latest = {
        r["step"]: r["status"] for r in json.loads(_versions(prefect_server, steps_key)[0]["data"])
    }
    assert latest == {"draft": "completed", "review": "blocked"}


def test_a_server_that_does_not_answer_costs_a_warning_not_the_check_in(tmp_path: Path) -> None:
    work = tmp_path / "plan"
    p = str(write_plan(work, PLAN))
    env = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}  # nothing answers there
    proc = run_cli("start", p, "draft", "--executor", "writer", "--json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["ok"] is True
    assert "warning: the Prefect server at http://127.0.0.1:9/api did not take" in proc.stderr
    assert "the check-in is recorded in the ledger" in proc.stderr
    assert "Traceback" not in proc.stderr
    with open_ledger(f"sqlite:///{work / '.waymark' / 'ledger.db'}") as led:
        assert led.step_states("checkin-ui")["draft"].status == "in_progress"
    assert "- [~] `draft` — **in_progress**" in (work / "TASKS.md").read_text()  # views too


def test_with_no_server_known_nothing_is_sent_and_none_is_started(tmp_path: Path) -> None:
    work = tmp_path / "plan"
    p = str(write_plan(work, PLAN))
    home = tmp_path / "prefect-home"
    home.mkdir()
    env = {"PREFECT_API_URL": "", "PREFECT_HOME": str(home)}
    for args in (("start", p, "draft"), ("fail", p, "draft", "--reason", "no data")):
        proc = run_cli(*args, "--executor", "writer", env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert proc.stderr == "", proc.stderr
    assert list(home.iterdir()) == []  # no server, no Prefect database


def test_the_ui_address_is_derived_as_prefect_derives_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect_waymark.markers.checkin_artifacts import _ui_url

    monkeypatch.delenv("PREFECT_UI_URL", raising=False)
    assert _ui_url("http://127.0.0.1:4200/api") == "http://127.0.0.1:4200"
    cloud = "https://api.prefect.cloud/api/accounts/a1/workspaces/w2"
    assert _ui_url(cloud) == "https://app.prefect.cloud/account/a1/workspace/w2"
    monkeypatch.setenv("PREFECT_UI_URL", "https://ui.example/")
    assert _ui_url(cloud) == "https://ui.example"


def test_basic_auth_wins_over_an_api_key_as_in_prefects_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from prefect_waymark.prefect_server.local import api_headers

    monkeypatch.setenv("PREFECT_API_KEY", "pnu_key")
    assert api_headers() == {"Authorization": "Bearer pnu_key"}
    monkeypatch.setenv("PREFECT_API_AUTH_STRING", "admin:pass")
    assert api_headers() == {"Authorization": "Basic YWRtaW46cGFzcw=="}


def _without_prefect_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(extra)
    return env


def test_with_nothing_that_names_a_server_prefect_is_not_imported(tmp_path: Path) -> None:
    """No variable, no file here and no profile name a server: the check-in learns that without
    importing Prefect (its settings cost ~0.5 s a check-in), and sends nothing."""
    work = tmp_path / "plan"
    p = str(write_plan(work, PLAN))
    home = tmp_path / "prefect-home"
    home.mkdir()
    env = _without_prefect_env(PREFECT_HOME=str(home), PYTHONPROFILEIMPORTTIME="1")
    proc = subprocess.run(
        [WAYMARK, "start", p, "draft", "--executor", "writer"],
        cwd=work, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "prefect_waymark.markers.checkin_artifacts" in imported  # it did look
    assert "prefect.settings" not in imported and "prefect" not in imported
    assert [ln for ln in proc.stderr.splitlines() if not ln.startswith("import time:")] == []


def test_a_profile_that_names_the_server_is_still_followed(
    prefect_server: str, tmp_path: Path
) -> None:
    """The active profile of the user's profiles file names the server (as `prefect config set
    PREFECT_API_URL=...` writes it): the check-in publishes there, read through Prefect."""
    work = tmp_path / "plan"
    p = str(write_plan(work, PLAN))
    home = tmp_path / "prefect-home"
    home.mkdir()
    (home / "profiles.toml").write_text(
        f'active = "team"\n\n[profiles.team]\nPREFECT_API_URL = "{prefect_server}"\n'
    )
    env = _without_prefect_env(PREFECT_HOME=str(home))
    proc = subprocess.run(
        [WAYMARK, "start", p, "draft", "--executor", "writer"],
        cwd=work, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (page,) = _versions(prefect_server, _key(work))
    assert page["metadata_"]["check-in"] == "draft started by writer"


@pytest.mark.parametrize(
    ("files", "env", "may"),
    [
        ({}, {}, False),  # no profiles file: Prefect's packaged default names no server
        (
            {"home/profiles.toml": 'active = "x"\n[profiles.x]\nPREFECT_LOGGING_LEVEL = "INFO"\n'},
            {},
            False,
        ),
        (
            {"home/profiles.toml": 'active = "gone"\n[profiles.x]\nPREFECT_API_URL = "u"\n'},
            {},
            False,
        ),
        ({"home/profiles.toml": 'active = "x"\n[profiles.x]\nPREFECT_API_URL = "u"\n'}, {}, True),
        ({"home/profiles.toml": "not = [toml"}, {}, True),  # unreadable: ask Prefect
        ({"here/.env": "PREFECT_API_URL=u\n"}, {}, True),
        ({"here/prefect.toml": '[api]\nurl = "u"\n'}, {}, True),
        ({"here/pyproject.toml": '[tool.prefect.api]\nurl = "u"\n'}, {}, True),
        ({"here/pyproject.toml": '[project]\nname = "x"\n'}, {}, False),
        ({"here/pyproject.toml": '[project]\ndependencies = ["prefect>=3"]\n'}, {}, False),
        ({"here/pyproject.toml": '[tool]\nprefect.api.url = "u"\n'}, {}, True),
        ({"here/pyproject.toml": '[tool."prefect".api]\nurl = "u"\n'}, {}, True),
        ({"here/pyproject.toml": "[tool\n"}, {}, True),  # not TOML: ask Prefect
        ({}, {"prefect_api_url": "u"}, True),  # Prefect reads its variables in any case
        ({}, {"PREFECT_PROFILE": "team"}, True),
        ({}, {"PREFECT_API_KEY": "k"}, True),
    ],
)
def test_what_may_name_a_server(
    files: dict[str, str],
    env: dict[str, str],
    may: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from prefect_waymark.markers.checkin_artifacts import _settings_may_name_a_server

    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "here").mkdir(exist_ok=True)
    for key in [k for k in os.environ if k.startswith("PREFECT_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "home"))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path / "here")
    assert _settings_may_name_a_server() is may
