"""Declared outputs are the workdir's own files (issue 33, class 2). A symbolic link to a key
outside the workdir was hashed, copied into the shared result storage and restorable elsewhere;
a FIFO made ``waymark done`` hang, a link to ``/dev/zero`` spun for ever, a directory was "not
found". Now each is refused at once (exit 2, the path named, nothing recorded, nothing stored),
by ``waymark done`` and by a flow run's step; with ``allow_outside_workdir: true`` an outside
output is hashed but never copied into the result storage, and that is said.

Real ``waymark`` processes, a real FIFO and real links in a temporary folder; the subprocess
timeout is what proves that nothing waits."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from prefect.filesystems import LocalFileSystem

from prefect_waymark.ledger import EventKind, open_ledger
from prefect_waymark.results.outputs import OutputStore
from tests._support.helpers import run_cli, write_plan

NO_PREFECT = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}  # check-ins only warn: no server
KEY = b"-----BEGIN OPENSSH PRIVATE KEY-----\nnot a real key\n"


def _home(tmp_path: Path) -> Path:
    """A fake home with a private key, outside the workdir."""
    key = tmp_path / "home" / ".ssh" / "id_ed25519"
    key.parent.mkdir(parents=True)
    key.write_bytes(KEY)
    return key


def _agent_plan(work: Path, *, allow_outside: bool = False) -> str:
    doc: dict[str, Any] = {
        "plan_id": "outs",
        "steps": [
            {"id": "a", "kind": "agent", "instructions": "write out.txt", "outputs": ["out.txt"]}
        ],
    }
    if allow_outside:
        doc["allow_outside_workdir"] = True
    return str(write_plan(work, doc))


def _events(work: Path) -> list[str]:
    with open_ledger(f"sqlite:///{work / '.waymark' / 'ledger.db'}") as led:
        return [e.kind for e in led.events("outs")]


def _stored(store: Path) -> list[bytes]:
    """The content of every file in the result storage."""
    return [p.read_bytes() for p in store.rglob("*") if p.is_file()] if store.exists() else []


def _started(tmp_path: Path, **kw: bool) -> tuple[Path, str]:
    work = tmp_path / "work"
    plan = _agent_plan(work, **kw)
    proc = run_cli("start", plan, "a", "--executor", "bot", env=NO_PREFECT, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return work, plan


def _done(plan: str, tmp_path: Path, *extra: str) -> Any:
    env = {**NO_PREFECT, "HOME": str(tmp_path / "home")}
    return run_cli("done", plan, "a", "--executor", "bot", *extra, env=env, timeout=30)


def test_done_refuses_a_link_to_a_key_outside_the_workdir(tmp_path: Path) -> None:
    key = _home(tmp_path)
    work, plan = _started(tmp_path)
    (work / "out.txt").symlink_to(key)
    before = _events(work)
    store = tmp_path / "store"
    proc = _done(plan, tmp_path, "--results", str(store))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{work / 'out.txt'} is a symbolic link to {key}, outside the workdir" in proc.stderr
    assert "allow_outside_workdir: true" in proc.stderr
    assert _events(work) == before  # nothing recorded
    assert KEY not in _stored(store)  # nothing of it reached the result storage
    # A link inside the workdir to a file inside it still works, and is kept.
    (work / "out.txt").unlink()
    (work / "real").mkdir()
    (work / "real" / "made.txt").write_bytes(b"rows: 3\n")
    (work / "out.txt").symlink_to(Path("real") / "made.txt")
    proc = _done(plan, tmp_path, "--results", str(store), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["outputs"] == {"out.txt": hashlib.sha256(b"rows: 3\n").hexdigest()}
    assert doc["kept"] == ["out.txt"] and "not_kept" not in doc
    assert _stored(store) == [b"rows: 3\n"]


def test_done_refuses_a_fifo_at_once(tmp_path: Path) -> None:
    work, plan = _started(tmp_path)
    os.mkfifo(work / "out.txt")
    before = _events(work)
    proc = _done(plan, tmp_path)  # before: blocked in open() for ever; the timeout fails it
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{work / 'out.txt'} is a FIFO (named pipe), not a file" in proc.stderr
    assert "Traceback" not in proc.stderr and _events(work) == before
    assert stat.S_ISFIFO(os.lstat(work / "out.txt").st_mode)


@pytest.mark.parametrize("allow_outside", [False, True])
def test_done_refuses_a_link_to_dev_zero_at_once(tmp_path: Path, allow_outside: bool) -> None:
    work, plan = _started(tmp_path, allow_outside=allow_outside)
    (work / "out.txt").symlink_to("/dev/zero")
    proc = _done(plan, tmp_path)  # before: read /dev/zero for ever at 100 % CPU
    assert proc.returncode == 2, proc.stdout + proc.stderr
    if allow_outside:  # outside paths allowed: still never a device
        assert "/dev/zero (through the symbolic link" in proc.stderr
        assert "is a character device, not a file" in proc.stderr
    else:
        assert "is a symbolic link to /dev/zero, outside the workdir" in proc.stderr
    assert "Traceback" not in proc.stderr and EventKind.step_completed not in _events(work)


def test_a_directory_output_gets_its_own_message(tmp_path: Path) -> None:
    work, plan = _started(tmp_path)
    (work / "out.txt").mkdir()
    proc = _done(plan, tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{work / 'out.txt'} is a directory; outputs are files: declare the files in it" in (
        proc.stderr
    )
    assert "not found" not in proc.stderr and "Traceback" not in proc.stderr


def test_allow_outside_hashes_a_link_out_but_never_stores_it(tmp_path: Path) -> None:
    key = _home(tmp_path)
    work, plan = _started(tmp_path, allow_outside=True)
    (work / "out.txt").symlink_to(key)
    store = tmp_path / "store"
    proc = _done(plan, tmp_path, "--results", str(store))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "output out.txt: outside the workdir (allow_outside_workdir): hashed where it is, " in (
        proc.stdout
    )
    assert "never copied into the shared result storage" in proc.stdout
    assert KEY not in _stored(store)
    with open_ledger(f"sqlite:///{work / '.waymark' / 'ledger.db'}") as led:
        done = [e for e in led.events("outs") if e.kind == EventKind.step_completed]
    assert done[0].data["outputs"] == {"out.txt": hashlib.sha256(KEY).hexdigest()}


def test_the_store_keeps_only_the_workdirs_own_files(tmp_path: Path) -> None:
    key = _home(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "key.txt").symlink_to(key)
    os.mkfifo(work / "pipe")
    sha = hashlib.sha256(KEY).hexdigest()
    store = OutputStore(LocalFileSystem(basepath=str(tmp_path / "store")))
    kept = store.put(work, {"key.txt": sha, "pipe": "0" * 64})
    assert kept.stored == [] and not (tmp_path / "store").exists()
    kept = store.put(work, {"key.txt": sha}, allow_outside=True)
    assert kept.stored == [] and "never copied" in kept.not_kept["key.txt"]
    assert not (tmp_path / "store").exists()


def _run_plan(work: Path, key: Path) -> str:
    doc = {
        "plan_id": "outs",
        "steps": [
            {"id": "a", "run": f"ln -sf {key} out.txt", "outputs": ["out.txt"]},
            {"id": "b", "depends_on": ["a"], "run": "echo b > b.txt"},
        ],
    }
    return str(write_plan(work, doc))


def test_a_flow_runs_step_refuses_a_link_out_and_stores_nothing(
    prefect_server: str, tmp_path: Path
) -> None:
    key = _home(tmp_path)
    work = tmp_path / "work"
    plan = _run_plan(work, key)
    store = tmp_path / "store"
    proc = run_cli("run", plan, "--results", str(store), timeout=240)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    with open_ledger(f"sqlite:///{work / '.waymark' / 'ledger.db'}") as led:
        events = list(led.events("outs"))
    failed = [e for e in events if e.kind == EventKind.step_failed]
    assert [e.step_id for e in failed] == ["a"]
    assert failed[0].data["error"].startswith("OutputRefused: output 'out.txt': ")
    assert f"is a symbolic link to {key}, outside the workdir" in failed[0].data["error"]
    assert not [e for e in events if e.kind == EventKind.step_completed]
    assert not (work / "b.txt").exists()  # nothing downstream ran on it
    assert KEY not in _stored(store)


def test_a_fifo_put_where_a_completed_output_was_stops_the_next_run_at_once(
    prefect_server: str, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    doc = {"plan_id": "outs", "steps": [{"id": "a", "run": "echo a > out.txt",
                                         "outputs": ["out.txt"]}]}  # fmt: skip
    plan = str(write_plan(work, doc))
    first = run_cli("run", plan, timeout=240)
    assert first.returncode == 0, first.stdout + first.stderr
    (work / "out.txt").unlink()
    os.mkfifo(work / "out.txt")
    again = run_cli("run", plan, timeout=240)  # before: hung opening the FIFO to hash it
    out = again.stdout + again.stderr
    assert again.returncode == 4, out
    assert "Traceback" not in out
    with open_ledger(f"sqlite:///{work / '.waymark' / 'ledger.db'}") as led:
        review = [e for e in led.events("outs") if e.kind == EventKind.step_needs_review]
    assert "is a FIFO (named pipe), not a file" in review[-1].data["reason"]
    assert stat.S_ISFIFO(os.lstat(work / "out.txt").st_mode)
