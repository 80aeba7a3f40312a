"""A step's output is streamed to a capped log file; the runner's memory stays flat.

The 1 GB runs happen in fresh processes (``python -c`` / ``tests._support.output_worker``), so
the peak RSS measured (``resource.getrusage(RUSAGE_SELF).ru_maxrss``) is the runner's own, not
the test session's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from prefect_waymark.tasks.output_capture import (
    LOG_CAP_BYTES,
    LOG_FILES_KEPT_PER_STEP,
    OutputCapture,
    step_log_path,
)
from prefect_waymark.tasks.shell_command import run_command
from prefect_waymark.tasks.step_body import TAIL_CHARS, output_tail, tail
from tests._support.helpers import write_plan

ONE_GB = 1_000_000_000
ROOT = Path(__file__).resolve().parents[2]
BOUND_KIB = 200 * 1024  # allowed growth of the peak RSS over the baseline
LOUD = f"head -c {ONE_GB} /dev/zero | tr '\\0' x; printf 'done\\n' >&2"
_NOTE = b"\n[waymark: "


def _fresh_python(code: str, *args: str, timeout: float = 120) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _check_capped_log(log: Path, total: int, first: bytes, last: bytes) -> None:
    """The log is under the cap, starts with the output's first part, says how many bytes it
    dropped (once, where they were), and ends with the output's last bytes."""
    size = log.stat().st_size
    assert 0 < size <= LOG_CAP_BYTES
    with log.open("rb") as fh:
        assert fh.read(len(first)) == first
        fh.seek(LOG_CAP_BYTES // 2)
        after_head = fh.read(200)
        fh.seek(size - len(last))
        assert fh.read(len(last)) == last
    assert after_head.startswith(_NOTE), after_head[:80]
    note = after_head[1 : after_head.index(b"]\n") + 2]
    dropped = int(note.split()[1])
    assert size - len(note) - 1 + dropped == total  # every byte is either in the file or counted


def test_a_gigabyte_of_output_leaves_run_shell_step_flat(tmp_path: Path) -> None:
    # The baseline is taken after every import and a first (quiet) step: what a runner pays
    # anyway. Before streaming, the same 1 GB took this process from ~100 MB to ~3 GB.
    got = _fresh_python(
        """
        import json, logging, resource, sys
        from pathlib import Path
        from prefect_waymark.plan import validate_plan_data
        from prefect_waymark.tasks.step_body import run_shell_step
        from prefect_waymark.tasks.step_context import StepContext

        wd, loud = Path(sys.argv[1]), sys.argv[2]
        plan = validate_plan_data(
            {"plan_id": "big", "steps": [{"id": "quiet", "run": "echo hi"},
                                         {"id": "loud", "run": loud}]}, source="test")
        def ctx(step):
            return StepContext(plan=plan, step=plan.step(step), workdir=wd, upstream={},
                               logger=logging.getLogger("t"), run_id="run1")
        run_shell_step(ctx("quiet"), "echo hi")
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        value = run_shell_step(ctx("loud"), loud)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"base": base, "peak": peak, "value": value}))
        """,
        str(tmp_path),
        LOUD,
    )
    base, peak = got["base"], got["peak"]
    assert isinstance(base, int) and isinstance(peak, int)
    assert peak - base < BOUND_KIB, f"peak RSS grew by {(peak - base) // 1024} MiB"
    # The value persisted as the step's result: today's shape, bounded.
    assert got["value"] == {"returncode": 0, "stdout": "…" + "x" * TAIL_CHARS}
    log = tmp_path / ".waymark" / "logs" / "big" / "loud" / "1-run1.log"
    _check_capped_log(log, ONE_GB + 5, b"x" * 1000, b"x" * 1000 + b"done\n")


def test_a_gigabyte_through_the_run_plan_flow(prefect_server: str, tmp_path: Path) -> None:
    for name, command in (("quiet", "echo hi"), ("loud", LOUD)):
        write_plan(tmp_path / name, {"plan_id": name, "steps": [{"id": "talk", "run": command}]})
    proc = subprocess.run(
        [sys.executable, "-m", "tests._support.output_worker", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["quiet"]["state"] == got["loud"]["state"] == "COMPLETED"
    grew = got["loud"]["peak_kib"] - got["quiet"]["peak_kib"]
    assert grew < BOUND_KIB, f"the runner's peak RSS grew by {grew // 1024} MiB"
    logs = list((tmp_path / "loud" / ".waymark" / "logs" / "loud" / "talk").glob("*.log"))
    assert len(logs) == 1
    _check_capped_log(logs[0], ONE_GB + 5, b"x" * 1000, b"x" * 1000 + b"done\n")

    from prefect_waymark.ledger import default_ledger_url, open_ledger

    with open_ledger(default_ledger_url(tmp_path / "loud")) as led:
        assert led.step_states("loud")["talk"].status == "completed"


def test_the_probe_uses_the_same_bounded_capture(tmp_path: Path) -> None:
    got = _fresh_python(
        """
        import json, logging, resource, sys
        from pathlib import Path
        from prefect_waymark.plan import validate_plan_data
        from prefect_waymark.tasks.step_action import _shell_probe
        from prefect_waymark.tasks.step_context import StepContext

        wd, loud = Path(sys.argv[1]), sys.argv[2]
        plan = validate_plan_data(
            {"plan_id": "p", "steps": [{"id": "pub", "run": "true", "action": "publish",
                                        "probe": loud}]}, source="test")
        ctx = StepContext(plan=plan, step=plan.step("pub"), workdir=wd, upstream={},
                          logger=logging.getLogger("t"), run_id="run1")
        probe = _shell_probe(ctx, loud)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        answer = probe("p/pub/publish")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"base": base, "peak": peak, "answer": answer}))
        """,
        str(tmp_path),
        LOUD,
    )
    assert got["answer"] is True  # exit 0: applied
    base, peak = got["base"], got["peak"]
    assert isinstance(base, int) and isinstance(peak, int)
    assert peak - base < BOUND_KIB, f"peak RSS grew by {(peak - base) // 1024} MiB"
    log = tmp_path / ".waymark" / "logs" / "p" / "pub" / "1-run1-probe.log"
    _check_capped_log(log, ONE_GB + 5, b"x" * 1000, b"x" * 1000 + b"done\n")


def test_the_cap_holds_after_every_chunk_and_keeps_head_note_and_latest(tmp_path: Path) -> None:
    cap = 1024 * 1024
    log = tmp_path / "step.log"
    capture = OutputCapture(log, cap=cap, file_tail=64 * 1024)
    out = b"".join(f"line {i:07d}\n".encode() for i in range(400_000))  # 5.2 MB
    for start in range(0, len(out), 7777):  # odd chunk sizes: the head's end falls mid-chunk
        capture.feed("stdout", out[start : start + 7777])
        assert log.stat().st_size <= cap
    capture.close()
    data = log.read_bytes()
    assert data[: cap // 2] == out[: cap // 2]
    assert data.count(_NOTE) == 1
    note_at = data.index(_NOTE)
    assert note_at == cap // 2
    note_end = data.index(b"]\n", note_at) + 2
    rest = data[note_end:]
    assert len(rest) >= 64 * 1024 and out.endswith(rest)
    dropped = int(data[note_at:note_end].split()[1])
    assert dropped == capture.dropped == len(out) - cap // 2 - len(rest)
    assert capture.text("stdout").endswith(out[-5000:].decode())


def test_tails_look_as_they_did_when_all_output_was_kept(tmp_path: Path) -> None:
    # Multi-byte characters cut at the tail's edge, CRLF turned into LF as text mode did, and
    # stderr after stdout: the same tail as ``tail(stdout + "\n[stderr]\n" + stderr)`` of the
    # whole output read by subprocess in text mode.
    command = (
        "python3 -c \"import sys; sys.stdout.write('ünïcødé €\\r\\n' * 50000); "
        "sys.stderr.write('wärning\\r\\n' * 30)\""
    )
    whole = subprocess.run(
        command, shell=True, capture_output=True, text=True, errors="replace", check=True
    )
    proc = run_command(
        command, cwd=tmp_path, env=dict(os.environ), timeout=30, log_path=tmp_path / "x.log"
    )
    assert proc.returncode == 0
    assert output_tail(proc) == tail(whole.stdout + "\n[stderr]\n" + whole.stderr)
    assert tail(proc.stdout) == tail(whole.stdout)
    assert proc.stdout_bytes == len(whole.stdout.encode()) + 50000  # the CRs
    assert proc.log_dropped == 0 and proc.log_error is None
    assert (tmp_path / "x.log").stat().st_size == proc.stdout_bytes + proc.stderr_bytes


def test_a_timeout_kills_the_command_and_keeps_tail_and_log(tmp_path: Path) -> None:
    log = tmp_path / "t.log"
    started = time.monotonic()
    proc = run_command(
        "echo started; echo oops >&2; sleep 30",
        cwd=tmp_path,
        env=dict(os.environ),
        timeout=1,
        log_path=log,
    )
    assert time.monotonic() - started < 10
    assert proc.returncode is None
    assert proc.stdout == "started\n" and proc.stderr == "oops\n"
    assert log.read_text() in ("started\noops\n", "oops\nstarted\n")


def test_an_escaped_process_holding_the_pipe_does_not_hold_the_step(tmp_path: Path) -> None:
    # setsid re-parents the sleeper out of the command's process tree, and it keeps the pipes
    # open: before, the step waited for it (30 s); now the drain after the kill is bounded.
    pid_file = tmp_path / "escaped.pid"
    command = f"(setsid sh -c 'echo $$ > {pid_file}; exec sleep 30' &); echo hi; sleep 30"
    started = time.monotonic()
    try:
        proc = run_command(command, cwd=tmp_path, env=dict(os.environ), timeout=1)
        took = time.monotonic() - started
    finally:
        for _ in range(50):
            if pid_file.exists() and pid_file.read_text().strip():
                break
            time.sleep(0.1)
        try:
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    assert proc.returncode is None and proc.stdout == "hi\n"
    assert took < 10, f"the step was held {took:.1f}s by a process outside its tree"


def test_an_unwritable_log_never_fails_the_step(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    proc = run_command(
        "echo fine",
        cwd=tmp_path,
        env=dict(os.environ),
        timeout=10,
        log_path=blocker / "logs" / "s.log",
    )
    assert proc.returncode == 0 and proc.stdout == "fine\n"
    assert proc.log_error is not None and "not-a-folder" in proc.log_error


def test_log_names_and_retention(tmp_path: Path) -> None:
    first = step_log_path(tmp_path, "plan", "..", 2, "run", kind="probe")
    assert first == tmp_path / ".waymark/logs/plan/_../2-run-probe.log"  # never escapes
    first.parent.mkdir(parents=True)
    first.write_text("")
    assert step_log_path(tmp_path, "plan", "..", 2, "run", kind="probe").name == "2-run-probe.2.log"
    folder = tmp_path / ".waymark/logs/p/s"
    for i in range(LOG_FILES_KEPT_PER_STEP + 5):
        path = step_log_path(tmp_path, "p", "s", i + 1, "run")
        OutputCapture(path).close()
        os.utime(path, (i, i))  # distinct ages
    kept = sorted(int(p.name.split("-")[0]) for p in folder.glob("*.log"))
    assert kept == list(range(6, LOG_FILES_KEPT_PER_STEP + 6))


@pytest.mark.parametrize("cap", [100, 200_000])
def test_a_cap_too_small_to_hold_head_note_and_tail_is_refused(cap: int, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="log cap"):
        OutputCapture(tmp_path / "x.log", cap=cap)


def test_a_timeout_freezes_the_tree_top_down_before_killing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Recorded, then passed on to the real os.kill: the shell is stopped first, every process
    # of the tree before any is killed, so none can react to a child's death.
    from prefect_waymark.tasks import shell_command

    sent: list[tuple[int, int]] = []
    real_kill = os.kill

    def recording_kill(pid: int, sig: int) -> None:
        sent.append((pid, sig))
        real_kill(pid, sig)

    monkeypatch.setattr(shell_command.os, "kill", recording_kill)
    command = "(sleep 30; echo late > late.txt) & sleep 30"
    proc = run_command(command, cwd=tmp_path, env=dict(os.environ), timeout=0.5)
    assert proc.returncode is None
    signals = [sig for _, sig in sent]
    stops = signals.count(signal.SIGSTOP)
    assert stops >= 3, sent  # the shell, its subshell and the two sleeps (the subshell may fork)
    assert signals == [signal.SIGSTOP] * stops + [signal.SIGKILL] * stops, sent
    shell = sent[0][0]
    assert [pid for pid, sig in sent if sig == signal.SIGKILL][0] == shell
    assert not (tmp_path / "late.txt").exists()


def test_no_timed_out_command_runs_its_next_line(tmp_path: Path) -> None:
    # Before, the children died first: the subshell woke on its sleep's death and often ran
    # `echo late` (or the shell printed "Killed") before its own signal came (2 in 30 runs of
    # the step-timeout test here, 14 in 60 under load).
    for i in range(12):
        proc = run_command(
            f"echo oops >&2; (sleep 5; echo late > late{i}.txt); echo after > after{i}.txt",
            cwd=tmp_path,
            env=dict(os.environ),
            timeout=0.2,
        )
        assert proc.returncode is None and proc.stderr == "oops\n", proc.stderr
    time.sleep(0.3)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_what_was_stopped_is_killed_even_when_the_teardown_is_cut_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every listing of the tree after the first fails (as a second and third Ctrl-C would cut
    # the teardown off, the runner's own one included): the shell, stopped in the first pass,
    # must be killed all the same, not left stopped for good.
    from prefect_waymark.tasks import shell_command

    real = shell_command._descendants
    calls = {"n": 0}

    def cut_off(pid: int) -> list[int]:
        calls["n"] += 1
        if calls["n"] >= 2:
            raise KeyboardInterrupt
        return real(pid)

    monkeypatch.setattr(shell_command, "_descendants", cut_off)
    with pytest.raises(KeyboardInterrupt):
        run_command("echo $$ > sh.pid; sleep 30", cwd=tmp_path, env=dict(os.environ), timeout=0.3)
    shell = int((tmp_path / "sh.pid").read_text())
    time.sleep(0.2)
    try:
        with open(f"/proc/{shell}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    assert state in ("Z", "gone"), f"the shell was left in state {state}"
    if state == "Z":
        os.waitpid(shell, 0)
