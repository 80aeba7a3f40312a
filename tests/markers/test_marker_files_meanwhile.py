"""A run's files (TASKS.md, STATE.md, IMPLEMENTATION_LOG.md, EXECUTION_MARKER.json) are
written while its last artifacts are on their way to Prefect, not before they leave; and they
are written even when the artifacts' part fails. Real flow runs against the session's Prefect
server; the artifacts' sends are Prefect's, with one send of the test's added beside them."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.markers import run_markers
from prefect_waymark.markers.concurrent_sends import Send
from tests._support.helpers import write_plan

pytestmark = pytest.mark.usefixtures("prefect_server")


def _plan(folder: Path, plan_id: str) -> Path:
    return write_plan(folder, {"plan_id": plan_id, "steps": [{"id": "a", "run": "true"}]})


def test_the_files_are_written_while_the_artifacts_go_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect_waymark.flows import run_plan
    from prefect_waymark.markers import artifacts

    send_started, files_done = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}
    original_sends = artifacts.run_artifact_sends
    original_views = run_markers._write_views

    def sends(*args: Any, **kwargs: Any) -> list[Send]:
        def call(client: object) -> None:
            send_started.set()
            seen["files_before_send_ended"] = files_done.wait(30)

        return [*original_sends(*args, **kwargs), Send("test send", call)]

    def views(*args: Any, **kwargs: Any) -> None:
        # Under the old order the files came before any send existed: this waited in vain.
        seen["send_in_flight"] = send_started.wait(5)
        original_views(*args, **kwargs)
        files_done.set()

    monkeypatch.setattr(artifacts, "run_artifact_sends", sends)
    monkeypatch.setattr(run_markers, "_write_views", views)
    out = run_plan(plan=str(_plan(tmp_path, "meanwhile")))
    assert out["result"] == "completed"
    assert seen == {"send_in_flight": True, "files_before_send_ended": True}
    assert "a" in (tmp_path / "TASKS.md").read_text()


def test_the_files_are_written_when_the_artifacts_part_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect_waymark.flows import run_plan

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the artifacts' part broke")

    monkeypatch.setattr(run_markers, "_publish", broken)
    with pytest.raises(RuntimeError, match="artifacts' part broke"):
        run_plan(plan=str(_plan(tmp_path, "files-anyway")))
    for name in ("TASKS.md", "STATE.md", "IMPLEMENTATION_LOG.md", "EXECUTION_MARKER.json"):
        assert (tmp_path / name).is_file(), name
