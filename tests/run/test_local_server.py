"""The local Prefect server's UI calls its own API, and the links `waymark run` prints open it
(the session's real server, started by ``ensure_local_server`` on a random port, not 4200)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests._support.helpers import WAYMARK, run_cli, write_plan

PREFECT = str(Path(WAYMARK).parent / "prefect")


def test_the_local_servers_ui_calls_its_own_api(prefect_server: str) -> None:
    from prefect_waymark.prefect_server.local import find_local_server, ui_api_url

    info = find_local_server()
    assert info is not None and info.api_url == prefect_server
    # Before: "--port" alone left the UI on Prefect's default http://127.0.0.1:4200/api.
    assert ui_api_url(info) == info.api_url
    assert httpx.get(f"{ui_api_url(info)}/health", timeout=10).status_code == 200
    status = run_cli("server", "status")
    assert status.returncode == 0 and f"UI at {info.ui_url}" in status.stdout


def _links(stdout: str) -> dict[str, str]:
    found = re.findall(r"^  (flow run|plan page|plan page history): (\S+)$", stdout, re.M)
    return dict(found)


def test_waymark_run_prints_ui_links_that_work(prefect_server: str, tmp_path: Path) -> None:
    steps = [{"id": "a", "run": "true"}, {"id": "b", "depends_on": ["a"], "run": "true"}]
    plan = write_plan(tmp_path, {"plan_id": "ui-links", "steps": steps})
    proc = run_cli("run", str(plan), "--max-steps", "1", "--executor", "linker")
    assert proc.returncode == 3, proc.stderr  # exit codes unchanged: stopped with steps left
    links = _links(proc.stdout)
    assert set(links) == {"flow run", "plan page", "plan page history"}, proc.stdout
    run_page = re.fullmatch(
        r"(http://127\.0\.0\.1:\d+)/v2/runs/flow-run/([0-9a-f-]{36})", links["flow run"]
    )
    assert run_page is not None, links
    base, flow_run_id = run_page.groups()
    # The printed address serves a UI that names an API which answers.
    settings = httpx.get(f"{base}/ui-settings", timeout=10).json()
    api = settings["api_url"]
    assert api == prefect_server and settings["default_ui"] == "v2"
    assert httpx.get(f"{api}/health", timeout=10).status_code == 200
    run = httpx.get(f"{api}/flow_runs/{flow_run_id}", timeout=10).json()
    assert re.fullmatch(r"ui-links · [-\d]+ [:\d]+ · linker", run["name"]), run["name"]
    assert (run["state"]["type"], run["state"]["name"]) == ("CANCELLED", "Stopped")
    # The plan page link is this run's version of the plan's page.
    artifact_id = links["plan page"].rsplit("/artifacts/artifact/", 1)[1]
    artifact = httpx.get(f"{api}/artifacts/{artifact_id}", timeout=10).json()
    assert artifact["flow_run_id"] == flow_run_id and artifact["type"] == "markdown"
    assert links["plan page history"] == f"{base}/v2/artifacts/key/{artifact['key']}"
    for url in links.values():  # each page is the UI's app (the browser test renders them)
        page = httpx.get(url, headers={"Accept": "text/html"}, timeout=30, follow_redirects=True)
        assert page.status_code == 200 and "<html" in page.text.lower(), url


@pytest.mark.prefect  # a server of its own, in a PREFECT_HOME of its own (no fixture)
def test_the_local_server_outlives_its_start_and_keeps_a_log(tmp_path: Path) -> None:
    """Prefect's ``--background`` start leaves the server writing into pipes that close with the
    start command: at its next burst of output the server died (a CI run lost the session's
    server that way). Started by waymark, the server writes ``DEBUG`` logs to a file after the
    start command has ended and still answers; Prefect's own ``prefect server stop`` stops it."""
    home = tmp_path / "prefect-home"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(home), PREFECT_LOGGING_SERVER_LEVEL="DEBUG")
    started = subprocess.run(
        [WAYMARK, "server", "start"], env=env, capture_output=True, text=True, timeout=400
    )
    assert started.returncode == 0, started.stdout + started.stderr
    info = json.loads((home / "waymark-server.json").read_text())
    try:
        assert (home / "server.pid").read_text() == str(info["pid"])  # Prefect's own pid file
        for _ in range(20):  # requests the server logs, long after the start command ended
            assert httpx.post(f"{info['api_url']}/flow_runs/filter", json={}).status_code == 200
        time.sleep(2)
        assert httpx.get(f"{info['api_url']}/health", timeout=10).status_code == 200
        assert "DEBUG" in (home / "waymark-server.log").read_text(errors="replace")
        # A second start finds it: the same server, not a second one.
        again = subprocess.run(
            [WAYMARK, "server", "start"], env=env, capture_output=True, text=True, timeout=60
        )
        assert (
            again.returncode == 0
            and json.loads((home / "waymark-server.json").read_text())["pid"] == info["pid"]
        )
    finally:
        stopped = subprocess.run(
            [PREFECT, "server", "stop"], env=env, capture_output=True, text=True, timeout=60
        )
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    deadline = time.monotonic() + 30
    while Path(f"/proc/{info['pid']}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (
        not Path(f"/proc/{info['pid']}").exists()
        or "Z" in Path(f"/proc/{info['pid']}/stat").read_text().split(") ", 1)[1][:1]
    )
