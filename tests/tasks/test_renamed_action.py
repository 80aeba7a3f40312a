"""An applied action is never applied again because its step was renamed or its action moved:
the receipt follows the action, not the step id. Real ``waymark run`` processes against a real
HTTP service on 127.0.0.1 that counts every call per idempotency key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests._support.action_plans import PY, prepare_workdir
from tests._support.helpers import run_cli, write_plan
from tests._support.http_counter import CounterService

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> Iterator[CounterService]:
    with CounterService() as svc:
        monkeypatch.setenv("WAYMARK_TEST_SERVICE", svc.url)
        monkeypatch.delenv("WAYMARK_TEST_KILL_AT", raising=False)
        yield svc


def _plan(folder: Path, publish_id: str, action: str = "publish-post") -> Path:
    steps: list[dict[str, Any]] = [
        {"id": "draft", "run": "echo d >> draft.count"},
        {
            "id": publish_id,
            "depends_on": ["draft"],
            "action": action,
            "run": f"echo p >> publish.count && {PY} paysteps.py publish",
        },
        {"id": "announce", "depends_on": [publish_id], "run": "echo a >> announce.count"},
    ]
    return write_plan(folder, {"plan_id": "blog", "steps": steps})


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_renaming_an_action_step_never_applies_its_action_again(
    tmp_path: Path, service: CounterService
) -> None:
    prepare_workdir(tmp_path)
    plan = _plan(tmp_path, "publish")
    first = run_cli("run", str(plan))
    assert first.returncode == 0, first.stdout + first.stderr
    assert service.calls == {"blog/publish/publish-post": 1}

    # The everyday tidy-up: the step takes its action's name. The run finds the rename (the
    # same definition under a new id): the step keeps its completion and nothing runs again
    # (`announce`, whose dependency was renamed, keeps its completion too).
    _plan(tmp_path, "publish-post")
    second = run_cli("run", str(plan))
    assert second.returncode == 0, second.stdout + second.stderr
    assert service.calls == {"blog/publish/publish-post": 1}  # published once, not twice
    assert _lines(tmp_path / "publish.count") == 1  # the command did not run again
    assert _lines(tmp_path / "announce.count") == 1
    out = second.stdout + second.stderr
    assert "renamed publish → publish-post (same definition): completion kept" in out
    status = run_cli("status", str(plan), "--json")
    assert '"publish-post"' in status.stdout and status.returncode == 0

    # A new action name is a new action: the hint the warning gives applies it again.
    doc = yaml.safe_load(plan.read_text())
    doc["steps"].append(
        {
            "id": "publish-again",
            "depends_on": ["publish-post"],
            "action": "publish-post-2",
            "run": f"{PY} paysteps.py publish",
        }
    )
    plan.write_text(yaml.safe_dump(doc, sort_keys=False))
    third = run_cli("run", str(plan))
    assert third.returncode == 0, third.stdout + third.stderr
    assert service.calls == {
        "blog/publish/publish-post": 1,
        "blog/publish-again/publish-post-2": 1,
    }


def test_an_action_moved_to_another_step_is_not_applied_again(
    tmp_path: Path, service: CounterService
) -> None:
    prepare_workdir(tmp_path)
    plan = _plan(tmp_path, "publish")
    assert run_cli("run", str(plan)).returncode == 0
    # `publish` stays, as a plain step; a new step `post` now holds the action.
    steps: list[dict[str, Any]] = [
        {"id": "draft", "run": "echo d >> draft.count"},
        {"id": "publish", "depends_on": ["draft"], "run": "echo p >> publish.count"},
        {
            "id": "post",
            "depends_on": ["publish"],
            "action": "publish-post",
            "run": f"echo q >> post.count && {PY} paysteps.py publish",
        },
        {"id": "announce", "depends_on": ["post"], "run": "echo a >> announce.count"},
    ]
    write_plan(tmp_path, {"plan_id": "blog", "steps": steps})
    stopped = run_cli("run", str(plan))  # `publish` and `announce` changed: review first
    assert stopped.returncode == 4, stopped.stdout + stopped.stderr
    for step in ("publish", "announce"):
        run_cli("review", str(plan), "--step", step, "--accept")
    moved = run_cli("run", str(plan))
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert service.calls == {"blog/publish/publish-post": 1}
    assert _lines(tmp_path / "post.count") == 0
