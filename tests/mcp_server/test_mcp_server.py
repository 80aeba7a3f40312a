"""``waymark mcp`` through the official SDK's own client: real ``waymark mcp`` subprocesses on
stdio (and one on streamable HTTP), a real SQLite ledger, and the real ``waymark`` command to
compare with. Two agents race for one branch from two servers (two processes, one ledger)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.types import CallToolResult, TextContent  # noqa: E402

from prefect_waymark.ledger import open_reader  # noqa: E402
from tests._support.helpers import WAYMARK, run_cli, write_plan  # noqa: E402

PLAN: dict[str, Any] = {
    "plan_id": "mcp-notes",
    "title": "Notes by agents",
    "contract": {
        "goal_id": "notes",
        "objective": "Write and polish the notes",
        "acceptance": ["notes.md exists"],
        "forbidden": ["never push to main"],
    },
    "steps": [
        {"id": "write", "kind": "agent", "instructions": "Write notes.md.",
         "outputs": ["notes.md"], "acceptance": ["notes.md has a title"]},
        {"id": "polish", "kind": "agent", "depends_on": ["write"],
         "instructions": "Polish notes.md."},
    ],
}  # fmt: skip

CHECKINS = {"next", "start", "tick", "done", "fail", "block", "skip", "status", "metrics"}


def _env(home: Path) -> dict[str, str]:
    """What the server needs, given explicitly (the SDK's default environment is minimal)."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "PREFECT_HOME": str(home / ".prefect")}  # fmt: skip


@asynccontextmanager
async def _session(plan: Path, *extra: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=WAYMARK, args=["mcp", "--plan", str(plan), *extra], env=_env(plan.parent)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _run(fn: Callable[[], Awaitable[None]]) -> None:
    anyio.run(fn)


def _text(result: CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text


def _cli_json(*args: str) -> Any:
    proc = run_cli(*args, "--json")
    try:
        return json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError(proc.stdout + proc.stderr) from exc


def test_tools_are_listed_with_typed_input_schemas(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, PLAN)

    async def check() -> None:
        async with _session(plan) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert set(tools) == CHECKINS  # review only with --allow-review
            done = tools["done"].input_schema
            assert done["required"] == ["step"]
            assert done["properties"]["outputs"]["type"] == "array"
            assert done["properties"]["evidence"]["type"] == "object"
            start = tools["start"].input_schema["properties"]
            assert start["lease"]["minimum"] == 60 and start["lease"]["maximum"] == 30 * 86400
            assert set(tools["fail"].input_schema["required"]) == {"step", "reason"}
            assert all(t.description for t in tools.values())
            uris = {str(r.uri) for r in (await s.list_resources()).resources}
            assert uris == {"waymark://plan/status", "waymark://plan/next"}
        async with _session(plan, "--allow-review") as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert set(tools) == CHECKINS | {"review"}
            decision = tools["review"].input_schema["properties"]["decision"]
            assert decision["enum"] == ["accept", "rerun", "abort"]
            # Nothing is in review: the CLI's refusal, as a tool error with its exit code.
            got = await s.call_tool("review", {"decision": "accept"})
            assert got.is_error and (got.meta or {})["waymark/exit_code"] == 2
            assert "(exit code 2: bad input)" in _text(got)

    _run(check)


def test_next_start_done_with_evidence_completes_the_step(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, PLAN)

    async def check() -> None:
        async with _session(plan, "--executor", "agent-a") as s:
            nxt = await s.call_tool("next", {})
            assert not nxt.is_error, _text(nxt)
            doc = nxt.structured_content
            assert doc is not None and doc["step"]["id"] == "write"
            assert doc["contract"]["forbidden"] == ["never push to main"]
            assert json.loads(_text(nxt)) == doc  # the text is the document, as --json prints it
            # The resource of the current step is the same document.
            res = await s.read_resource("waymark://plan/next")
            first = res.contents[0]
            assert getattr(first, "text", None) is not None
            assert json.loads(first.text)["step"]["id"] == "write"  # type: ignore[union-attr]

            started = await s.call_tool("start", {"step": "write"})
            assert not started.is_error, _text(started)
            assert started.structured_content == {
                "ok": True, "step": "write", "executor": "agent-a",
                "message": started.structured_content["message"],  # type: ignore[index]
            }  # fmt: skip
            (tmp_path / "notes.md").write_text("# Notes\n")
            done = await s.call_tool(
                "done",
                {"step": "write", "outputs": ["notes.md"], "evidence": {"A1": "it has # Notes"}},
            )
            assert not done.is_error, _text(done)
            d = done.structured_content
            assert d is not None and d["ok"] and d["evidence"] == {"A1": "it has # Notes"}
            assert set(d["outputs"]) == {"notes.md"} and d["no_evidence"] == []

            # `status` is `waymark status --json`, parsed; so is the standing resource.
            status = await s.call_tool("status", {})
            cli = _cli_json("status", str(plan))
            assert status.structured_content == cli
            standing = await s.read_resource("waymark://plan/status")
            assert json.loads(standing.contents[0].text) == cli  # type: ignore[union-attr]
            # `metrics` is `waymark metrics --json`, parsed.
            metrics = await s.call_tool("metrics", {})
            assert metrics.structured_content == _cli_json("metrics", str(plan))

        rows = {r["id"]: r for r in _cli_json("status", str(plan))["steps"]}
        assert rows["write"]["status"] == "completed", rows
        assert rows["polish"]["status"] == "pending", rows

    _run(check)


def test_two_agents_racing_for_one_branch_one_wins_the_other_gets_the_clis_refusal(
    tmp_path: Path,
) -> None:
    plan = write_plan(tmp_path, PLAN)
    results: dict[str, CallToolResult] = {}

    async def race() -> None:
        async with (
            _session(plan, "--executor", "agent-a") as a,
            _session(plan, "--executor", "agent-b") as b,
        ):

            async def start(name: str, s: ClientSession) -> None:
                results[name] = await s.call_tool("start", {"step": "write"})

            async with anyio.create_task_group() as tg:
                tg.start_soon(start, "agent-a", a)
                tg.start_soon(start, "agent-b", b)
            # The loser's server is still up: its next call is answered.
            loser = next(n for n, r in results.items() if r.is_error)
            again = await (a if loser == "agent-a" else b).call_tool("status", {})
            assert not again.is_error

    _run(race)
    won = [n for n, r in results.items() if not r.is_error]
    lost = [n for n, r in results.items() if r.is_error]
    assert len(won) == 1 and len(lost) == 1, {n: _text(r) for n, r in results.items()}
    refusal = results[lost[0]]
    assert (refusal.meta or {})["waymark/exit_code"] == 2
    assert refusal.structured_content == {
        "ok": False, "review": False,
        "reason": refusal.structured_content["reason"],  # type: ignore[index]
    }  # fmt: skip
    # The same check-in through the CLI is refused too, with the same exit code, naming the
    # same holder (the loser of the race met the branch's slot taken: "branch main is busy:
    # ..."; a later start meets the step in progress first: the CLI's same check).
    cli = run_cli("start", str(plan), "write", "--executor", lost[0])
    assert cli.returncode == 2, cli.stdout + cli.stderr
    message = _text(refusal).splitlines()
    holder = f"step write is in progress by executor {won[0]!r} since "
    assert message[0].startswith("waymark: ") and holder in message[0]
    assert holder in cli.stderr.strip().splitlines()[-1]
    assert message[1] == "(exit code 2: bad input)"


def test_an_invalid_call_is_a_tool_error_and_the_server_goes_on(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, PLAN)

    async def check() -> None:
        async with _session(plan, "--executor", "agent-a") as s:
            bad = await s.call_tool("start", {"step": "write", "lease": 5})  # below 60 seconds
            assert bad.is_error and "lease" in _text(bad)
            bad = await s.call_tool("start", {"step": "nope"})  # the CLI's message, exit 2
            cli = run_cli("start", str(plan), "nope", "--executor", "agent-a")
            assert bad.is_error and cli.returncode == 2
            assert _text(bad).splitlines()[0] == cli.stderr.strip().splitlines()[-1]
            bad = await s.call_tool("start", {"step": "write", "executor": "no spaces allowed"})
            assert bad.is_error and "--executor" in _text(bad)
            bad = await s.call_tool("fail", {"step": "write", "reason": " "})
            assert bad.is_error and "--reason: say what went wrong" in _text(bad)
            bad = await s.call_tool("fail", {"step": "write", "reason": "x" * 2_001})
            assert bad.is_error and "2000" in _text(bad), _text(bad)  # the reason's limit
            long = {"step": "write", "evidence": {"A1": "y" * 65_537}}
            bad = await s.call_tool("done", long)
            assert bad.is_error and "65536" in _text(bad), _text(bad)[:300]
            bad = await s.call_tool("status", {"plan": str(tmp_path / "missing.yaml")})
            assert bad.is_error and "(exit code 2: bad input)" in _text(bad)
            ok = await s.call_tool("start", {"step": "write"})
            assert not ok.is_error, _text(ok)
            nothing = await s.call_tool("next", {"executor": "agent-b"})  # nothing ready: exit 3
            assert not nothing.is_error and (nothing.meta or {})["waymark/exit_code"] == 3

    _run(check)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_streamable_http(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, PLAN)
    port = _free_port()
    server = subprocess.Popen(
        [WAYMARK, "mcp", "--plan", str(plan), "--http", f"127.0.0.1:{port}"],
        env={**os.environ, **_env(tmp_path)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "the server did not listen"
                time.sleep(0.2)

        async def check() -> None:
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write) as s,
            ):
                await s.initialize()
                got = await s.call_tool("status", {})
                assert not got.is_error, _text(got)
                assert got.structured_content == _cli_json("status", str(plan))

        _run(check)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_bad_http_address_is_bad_input(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, PLAN)
    proc = run_cli("mcp", "--plan", str(plan), "--http", "localhost")
    assert proc.returncode == 2 and "expected HOST:PORT" in proc.stderr


def test_a_stop_for_review_is_answered_through_the_review_tool_and_a_step_skipped(
    tmp_path: Path,
) -> None:
    """A real stop: the step reads a file ref that changes while it is in progress. The
    ``review`` tool (``--allow-review``) answers it as ``waymark review --accept`` would, and
    ``skip`` leaves the last step out with its reason kept."""
    doc = {
        **PLAN,
        "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
        "steps": [{**PLAN["steps"][0], "reads": ["terms"]}, PLAN["steps"][1]],
    }
    plan = write_plan(tmp_path, doc)
    (tmp_path / "terms.md").write_text("v1")

    async def check() -> None:
        async with _session(plan, "--executor", "agent-a", "--allow-review") as s:
            started = await s.call_tool("start", {"step": "write"})
            assert not started.is_error, _text(started)
            (tmp_path / "terms.md").write_text("v2")  # the authoritative state moved
            nxt = await s.call_tool("next", {})
            # exit 4 (review) is a document, not a refusal: no step, the reason names the ref
            assert (nxt.meta or {})["waymark/exit_code"] == 4, _text(nxt)
            got = nxt.structured_content
            assert got is not None and got["step"] is None and "terms" in got["reason"]
            assert "waymark review" in got["reason"]
            rows = {r["id"]: r for r in _cli_json("status", str(plan))["steps"]}
            assert rows["write"]["status"] == "needs_review"

            answered = await s.call_tool(
                "review", {"decision": "accept", "step": "write", "reason": "terms v2 is fine"}
            )
            assert not answered.is_error, _text(answered)
            assert (answered.meta or {})["waymark/exit_code"] == 0
            # The step is offered again, under the accepted terms.
            again = await s.call_tool("next", {})
            assert not again.is_error and again.structured_content is not None
            assert again.structured_content["step"]["id"] == "write", _text(again)

            skipped = await s.call_tool("skip", {"step": "polish", "reason": "not needed"})
            assert not skipped.is_error, _text(skipped)

        rows = {r["id"]: r for r in _cli_json("status", str(plan))["steps"]}
        assert rows["polish"]["status"] == "completed", rows
        with open_reader(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as r:
            said = [json.dumps(e.data) for e in r.events("mcp-notes")]
        assert any("not needed" in d for d in said) and any("terms v2 is fine" in d for d in said)

    _run(check)
