"""waymark replaces only regular files: a device node, a FIFO, a link or a read-only file where
waymark would write (an export's ``--output``, the marker and view files) is refused with exit 2
and the path named, and is left exactly as it was. The device node is a private one made in a
temporary folder (never under ``/dev``); making it needs root, as these machines' tests run."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from prefect_waymark._files.atomic import atomic_file, atomic_write
from prefect_waymark.errors import NotARegularFile
from prefect_waymark.ledger import EventKind, open_ledger
from tests._support.helpers import run_cli, write_plan

NO_PREFECT = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}  # nothing listens there


def _special(folder: Path) -> dict[str, Path]:
    """One of each kind of path waymark must not replace, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    link_target = folder / "elsewhere.txt"
    link_target.write_text("someone else's\n")
    link = folder / "link"
    link.symlink_to(link_target)
    paths = {"a FIFO (named pipe)": fifo, "a symbolic link": link}
    if os.geteuid() == 0:  # a device node needs root; these machines run tests as root
        dev = folder / "null-device"
        os.mknod(dev, stat.S_IFCHR | 0o600, os.makedev(1, 3))
        paths["a character device"] = dev
    return paths


def _kind(path: Path) -> int:
    return stat.S_IFMT(os.lstat(path).st_mode)


def test_atomic_write_refuses_every_special_file_and_leaves_it(tmp_path: Path) -> None:
    for kind, path in _special(tmp_path).items():
        before = _kind(path)
        with pytest.raises(NotARegularFile) as caught:
            atomic_write(path, "x")
        assert kind in str(caught.value) and str(path) in str(caught.value)
        assert _kind(path) == before  # still a FIFO, a link, a device
    assert (tmp_path / "elsewhere.txt").read_text() == "someone else's\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temp file left


def test_a_fifo_put_in_place_during_the_write_is_not_replaced(tmp_path: Path) -> None:
    target = tmp_path / "STATE.md"
    with pytest.raises(NotARegularFile), atomic_file(target) as fh:
        fh.write(b"new")
        os.mkfifo(target)  # appears between the first check and the rename
    assert stat.S_ISFIFO(os.lstat(target).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["STATE.md"]


def test_a_read_only_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "ro.txt"
    target.write_text("kept\n")
    target.chmod(0o444)
    with pytest.raises(NotARegularFile, match="read-only"):
        atomic_write(target, "x")
    assert target.read_text() == "kept\n"


PLAN = {"plan_id": "special", "steps": [{"id": "a", "run": "echo a"}]}


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    path = write_plan(tmp_path / "proj", PLAN)
    with open_ledger(f"sqlite:///{path.parent / '.waymark' / 'ledger.db'}") as led:
        led.record("special", EventKind.run_started, run_id="r1", step_hashes={})
        led.record("special", EventKind.run_finished, run_id="r1", result="completed")
    return path


def test_export_never_replaces_a_device_a_fifo_or_a_link(plan: Path, tmp_path: Path) -> None:
    for kind, path in _special(tmp_path / "targets").items():
        before = _kind(path)
        proc = run_cli("export", str(plan), "-o", str(path), "--force", env=NO_PREFECT, timeout=60)
        assert proc.returncode == 2, (kind, proc.stderr)
        assert f"--output {path}: is {kind}" in proc.stderr and "Traceback" not in proc.stderr
        assert _kind(path) == before


def _ledger_events(plan: Path) -> int:
    with open_ledger(f"sqlite:///{plan.parent / '.waymark' / 'ledger.db'}") as led:
        return len(list(led.events("special")))


@pytest.mark.parametrize("name", ["EXECUTION_MARKER.json", "STATE.md"])
def test_a_run_refuses_a_fifo_among_its_views_before_recording(plan: Path, name: str) -> None:
    target = plan.parent / name
    os.mkfifo(target)
    before = _ledger_events(plan)
    # Had waymark opened the FIFO to read its first line, it would block: the timeout fails it.
    proc = run_cli("run", str(plan), env=NO_PREFECT, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert f"refusing to write {target}: it is a FIFO (named pipe)" in out
    assert "--markers-dir" in out and "Traceback" not in out
    assert stat.S_ISFIFO(os.lstat(target).st_mode)
    assert _ledger_events(plan) == before  # nothing recorded
