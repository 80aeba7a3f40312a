"""A ledger that cannot be written mid-run ends the run with its reason, exit 1 and no
traceback: another process's write lock held past ``$WAYMARK_LEDGER_LOCK_SECONDS`` (the wait is
announced while it lasts), the file deleted, the file made immutable (``chattr +i``: SIGBUS
before), a full disk (a real tmpfs of 3 MB). Real ``waymark run`` processes; each fault is made
while the first step waits for a flag file."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests._support.helpers import WAYMARK, run_cli, write_plan


def _plan(folder: Path, then: str = "") -> Path:
    wait = "touch started; while [ ! -f go ]; do sleep 0.1; done"
    return write_plan(
        folder,
        {
            "plan_id": "held",
            "steps": [
                {"id": "a", "run": f"{wait}; echo a >> a.count{then}"},
                {"id": "b", "depends_on": ["a"], "run": "echo b >> b.count"},
            ],
        },
    )


@contextmanager
def _running(plan: Path, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
    """``waymark run`` started; the block runs once step ``a`` has started and waits."""
    import os

    proc = subprocess.Popen(
        [WAYMARK, "run", str(plan)],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 240
        while not (plan.parent / "started").exists():
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "step a never started"
            time.sleep(0.1)
        yield proc
    finally:
        if proc.poll() is None:
            (plan.parent / "go").touch()
            proc.wait(timeout=240)


def _end(proc: subprocess.Popen[str], plan: Path) -> str:
    (plan.parent / "go").touch()
    out, _ = proc.communicate(timeout=240)
    return out


def _ledger(plan: Path) -> Path:
    return plan.parent / ".waymark" / "ledger.db"


@pytest.mark.prefect
def test_a_lock_held_past_the_wait_is_announced_then_ends_the_run(
    prefect_server: str, tmp_path: Path
) -> None:
    plan = _plan(tmp_path / "proj")
    with _running(plan, {"WAYMARK_LEDGER_LOCK_SECONDS": "4"}) as proc:
        locker = sqlite3.connect(_ledger(plan), isolation_level=None)
        locker.execute("BEGIN IMMEDIATE")  # another process's write lock, held for 12 s
        try:
            out = _end(proc, plan)
        finally:
            locker.execute("ROLLBACK")
            locker.close()
    assert proc.returncode == 1, out
    assert "another process holds its write lock" in out  # the wait, while it lasted
    assert "held its write lock for more than 4 s ($WAYMARK_LEDGER_LOCK_SECONDS)" in out
    assert "step a's end not recorded" in out and "Traceback" not in out
    # The next run finds a's result in Prefect's cache: the step is not run again.
    again = run_cli("run", str(plan), timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (plan.parent / "a.count").read_text() == "a\n"
    assert (plan.parent / "b.count").read_text() == "b\n"


@pytest.mark.prefect
def test_a_ledger_deleted_mid_run_is_said_not_a_completed_run(
    prefect_server: str, tmp_path: Path
) -> None:
    plan = _plan(tmp_path / "proj")
    with _running(plan) as proc:
        for file in _ledger(plan).parent.glob("ledger.db*"):
            file.unlink()
        out = _end(proc, plan)
    assert proc.returncode == 1, out  # not "completed" into a file no one will read
    assert "its file was deleted while it was open" in out and "Traceback" not in out
    assert not (plan.parent / "b.count").exists()  # nothing ran on a ledger that is gone


def _chattr(flag: str, *files: Path) -> bool:
    done = subprocess.run(["chattr", flag, *map(str, files)], capture_output=True, check=False)
    return done.returncode == 0


@pytest.mark.prefect
def test_a_ledger_made_immutable_mid_run_ends_with_a_message_not_sigbus(
    prefect_server: str, tmp_path: Path
) -> None:
    plan = _plan(tmp_path / "proj")
    files = [_ledger(plan).with_name(_ledger(plan).name + end) for end in ("", "-wal", "-shm")]
    with _running(plan) as proc:
        if not _chattr("+i", *files):  # root on ext4, as in CI here; elsewhere no way to test
            pytest.skip("chattr +i needs root on a file system that has the flag")
        try:
            out = _end(proc, plan)
        finally:
            _chattr("-i", *files)
    assert proc.returncode == 1, out  # 135 (SIGBUS) before
    assert "is read-only now (its permissions, `chattr +i`" in out
    assert "Fatal Python error" not in out and "Traceback" not in out


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 3 MB tmpfs (root only: as CI runs here)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.prefect
def test_a_full_disk_ends_the_run_with_one_line(prefect_server: str, small_disk: Path) -> None:
    plan = _plan(small_disk / "proj", then="; head -c 50000000 /dev/zero > filler; true")
    with _running(plan) as proc:
        out = _end(proc, plan)
    assert proc.returncode == 1, out
    assert "the disk is full" in out and "step a's end not recorded" in out
    assert "Traceback" not in out


def test_a_lock_wait_that_is_not_seconds_is_bad_input(tmp_path: Path) -> None:
    plan = _plan(tmp_path / "proj")
    for bad in ("0", "later", "-1"):
        proc = run_cli(
            "run",
            str(plan),
            env={"WAYMARK_LEDGER_LOCK_SECONDS": bad, "PREFECT_API_URL": "http://127.0.0.1:9/api"},
            timeout=120,
        )
        assert proc.returncode == 2, (bad, proc.stderr)
        assert "$WAYMARK_LEDGER_LOCK_SECONDS" in proc.stderr and "Traceback" not in proc.stderr
        assert not (plan.parent / ".waymark").exists()  # nothing recorded
