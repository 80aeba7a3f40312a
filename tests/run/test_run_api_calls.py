"""What a run costs in Prefect API calls: a top-level ``run_plan`` call creates one flow run,
named (Prefect's ``flow_run_name``) and tagged once each, and the run's last artifacts go out
side by side, every one of them still there; a request that fails is logged, the others go out
and the run is not failed."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest

from tests._support.helpers import write_plan


@pytest.fixture
def requests() -> Iterator[list[tuple[str, str, str, bytes]]]:
    """Every request the Prefect client sends meanwhile: (method, path, thread, body)."""
    seen: list[tuple[str, str, str, bytes]] = []
    original = httpx.Client.send

    def send(self: httpx.Client, request: httpx.Request, *args: Any, **kwargs: Any) -> Any:
        seen.append(
            (request.method, request.url.path, threading.current_thread().name, request.content)
        )
        return original(self, request, *args, **kwargs)

    httpx.Client.send = send  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        httpx.Client.send = original  # type: ignore[method-assign]


def test_a_run_is_named_and_tagged_and_its_artifacts_go_out_together(
    prefect_server: str, tmp_path: Path, requests: list[tuple[str, str, str, bytes]]
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    from prefect_waymark.flows import run_plan

    plan = write_plan(tmp_path, {"plan_id": "calls", "steps": [{"id": "a", "run": "true"}]})
    out = run_plan(plan=str(plan), executor="tester")
    assert out["result"] == "completed"
    fr = out["flow_run_id"]

    created = [
        json.loads(body) for m, p, _, body in requests if (m, p) == ("POST", "/api/flow_runs/")
    ]
    assert len(created) == 1
    patches = [
        json.loads(b) for m, p, _, b in requests if (m, p) == ("PATCH", f"/api/flow_runs/{fr}")
    ]
    named = [p["name"] for p in patches if "name" in p]  # Prefect's flow_run_name, once
    tagged = [p["tags"] for p in patches if p.get("tags")]  # the plan's tags, once
    assert len(named) == 1 and re.fullmatch(r"calls · [-\d]+ [:\d]+ · tester", named[0]), patches
    assert len(tagged) == 1 and {"waymark", "plan:calls"} <= set(tagged[0]), patches

    # Side by side: the progress bar's and the plan page's creation (as the run starts, while
    # the first step runs) and, at its end, the marker, steps and metrics tables, the plan
    # page's and the progress bar's last versions (the progress bar's is sent at once instead
    # if the step took over 5 s).
    posts = sorted(
        json.loads(body)["key"].rsplit("-", 1)[-1]
        for m, _, thread, body in requests
        if thread.startswith("waymark-send") and m == "POST"
    )
    # one each: "page" is the plan page's version (its key ends in -plan-page)
    assert posts == ["marker", "metrics", "page", "progress", "steps"], posts
    updates = [
        p for m, p, thread, _ in requests if thread.startswith("waymark-send") and m == "PATCH"
    ]
    assert len(updates) in (1, 2) and all(p.startswith("/api/artifacts/") for p in updates)
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(UUID(fr))
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[UUID(fr)]))
        )
    assert run.name == named[0] and {"waymark", "plan:calls"} <= set(run.tags)
    suffixes = sorted((a.key or "").rsplit("-", 1)[-1] for a in found)
    assert suffixes == ["marker", "metrics", "page", "progress", "steps"]
    assert next(a for a in found if (a.key or "").endswith("-progress")).data == 100.0


@pytest.mark.parametrize("in_run", [True, False], ids=["run's pool", "outside a run"])
def test_a_failed_send_is_logged_and_the_others_go_out(
    caplog: pytest.LogCaptureFixture, in_run: bool
) -> None:
    import contextlib
    import time

    from prefect_waymark.markers.concurrent_sends import RunSends, Send, send_all, send_soon

    calls: list[str] = []

    def ok(name: str) -> Any:
        return lambda client: calls.append(name)

    def broken(client: Any) -> None:
        calls.append("broken")
        raise RuntimeError("the server said no")

    def slow(client: Any) -> None:
        time.sleep(0.3)
        calls.append("slow")

    log = logging.getLogger("test-sends")
    with RunSends() if in_run else contextlib.nullcontext():
        send_soon(Send("progress not updated", ok("progress"), logging.WARNING), log)
        with caplog.at_level(logging.WARNING, logger="test-sends"):
            send_all([Send("marker not published", broken), Send("steps", ok("steps"))], log)
        assert sorted(calls) == ["broken", "progress", "steps"]
        send_soon(Send("late", slow), log)  # waited for as the run ends
    assert calls[-1] == "slow"
    errors = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "test-sends"]
    assert errors == [(logging.ERROR, "marker not published: the server said no")]


def test_the_ui_links_name_the_page_the_run_made_without_asking_the_server(
    prefect_server: str, tmp_path: Path, requests: list[tuple[str, str, str, bytes]]
) -> None:
    """``waymark run`` prints the plan page's link from the version its run created in this
    process: no artifact filter call after the run, and the same page the server lists."""
    from prefect_waymark.flows import run_plan
    from prefect_waymark.run import prefect_ui

    plan = write_plan(tmp_path, {"plan_id": "links", "steps": [{"id": "a", "run": "true"}]})
    out = run_plan(plan=str(plan), executor="tester")
    fr = out["flow_run_id"]
    requests.clear()
    links = prefect_ui.ui_links(fr, "links", ui_url=prefect_server.removesuffix("/api"))
    assert not [p for _, p, _, _ in requests if p.startswith("/api/artifacts")], requests
    asked = prefect_ui._plan_page(fr, "links")  # what the server lists for this flow run
    assert asked is not None
    assert links["plan page"].endswith(f"/artifacts/artifact/{asked[0]}")
    assert links["plan page history"].endswith(f"/artifacts/key/{asked[1]}")


def test_a_remembered_page_is_the_plans_own_and_the_memory_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from prefect_waymark.markers.plan_page import publish as pages

    monkeypatch.setattr(pages, "_CREATED", {})  # this test's own, the process's back after

    pages._remember("run-1", "waymark-a-b-0123abcd-plan-page", "page-of-a-b")
    assert pages.created_page("run-1", "a") is None  # plan "a" is not plan "a-b"
    assert pages.created_page("run-1", "a-b") == ("page-of-a-b", "waymark-a-b-0123abcd-plan-page")
    assert pages.created_page("run-2", "a-b") is None
    for i in range(pages._KEEP + 10):
        pages._remember(f"other-{i}", "waymark-x-0123abcd-plan-page", f"id-{i}")
    assert len(pages._CREATED) == pages._KEEP
    assert pages.created_page("run-1", "a-b") is None  # the oldest went first
    assert pages.created_page(f"other-{pages._KEEP + 9}", "x") is not None
