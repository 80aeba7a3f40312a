"""The hostile corpus: every plan file in ``tests/hostile/`` is refused by ``waymark validate``
with exit 2, no traceback, a message naming the file and, where the file says so, the field path
and a piece of the message.

A YAML file says what it expects in leading comments::

    # expect: steps[0].retries
    # expect-message: an integer from 0 to 100

JSON has no comments: its expectations are in ``JSON_EXPECT`` below. Files too big to keep in
the repository (a 5 MB value, a file over the size limit, JSON nested 100,000 deep) are written
by the tests. Every file goes through the command in process (``CliRunner``, quick); a few
through the real ``waymark`` command in a subprocess, whose CPU time is measured.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prefect_waymark.cli import app
from prefect_waymark.plan.reading import MAX_PLAN_BYTES
from tests._support.helpers import run_cli

CORPUS = Path(__file__).resolve().parents[1] / "hostile"
FILES = sorted(p for p in CORPUS.iterdir() if p.suffix in (".yaml", ".json"))

#: JSON files: (field path or "", a piece of the message or "").
JSON_EXPECT: dict[str, tuple[str, str]] = {
    "deep.json": ("", "nested more than 64 levels"),
    "dup-plan-id.json": ("plan_id", "duplicate key 'plan_id'"),
    "dup-run.json": ("steps[0].run", "duplicate key 'run'"),
    "huge-int.json": ("", "cannot be read"),
    "nested-map.json": ("", "nested more than 64 levels"),
    "output-absolute.json": ("steps[0].outputs[0]", "outside the workdir"),
    "retries-bool.json": ("steps[0].retries", "boolean"),
    "steps-not-list.json": ("steps", "valid list"),
    "syntax-error.json": ("", "JSON syntax error"),
    "timeout-inf.json": ("steps[0].timeout_seconds", "at most 2,592,000"),
    "timeout-nan.json": ("steps[0].timeout_seconds", "at most 2,592,000"),
    "top-level-list.json": ("", "expected a mapping with plan_id and steps"),
    "unknown-field.json": ("steps[0].retry", "did you mean 'retries'"),
}


def expectations(path: Path) -> tuple[str, str]:
    """(field path, message piece) the file expects; either may be empty."""
    if path.suffix == ".json":
        return JSON_EXPECT[path.name]
    field = message = ""
    for line in path.read_bytes().decode("utf-8", "replace").splitlines():
        if not line.startswith("#"):
            break
        if line.startswith("# expect: "):
            field = line.removeprefix("# expect: ").strip()
        elif line.startswith("# expect-message: "):
            message = line.removeprefix("# expect-message: ").strip()
    return field, message


def assert_refused(path: Path, code: int, output: str, field: str, message: str) -> None:
    assert code == 2, f"{path.name}: exit {code}\n{output[-3000:]}"
    assert "Traceback" not in output, f"{path.name}:\n{output[-3000:]}"
    assert str(path) in output, f"{path.name}: the message does not name the file\n{output}"
    if field:
        assert f" {field}: " in output, f"{path.name}: no problem at {field}\n{output}"
    if message:
        assert message in output, f"{path.name}: {message!r} not in\n{output}"


def validate_in_process(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["validate", str(path)])
    return result.exit_code, result.output  # stdout and stderr (Click 8.2 and later)


def test_the_corpus_covers_at_least_forty_files() -> None:
    assert len(FILES) >= 40
    assert {p.name for p in FILES if p.suffix == ".json"} == set(JSON_EXPECT)
    named = [p for p in FILES if expectations(p) != ("", "")]
    assert len(named) == len(FILES), "every file says what it expects"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_validate_refuses_each_hostile_file(path: Path) -> None:
    started = time.process_time()
    code, output = validate_in_process(path)
    cpu = time.process_time() - started
    assert_refused(path, code, output, *expectations(path))
    assert cpu < 1.0, f"{path.name}: {cpu:.2f} s of CPU"
    assert max(len(line) for line in output.splitlines()) < 1000


@pytest.mark.parametrize(
    "name", ["alias-bomb.yaml", "deep-flow.yaml", "dup-run.yaml", "timeout-inf.yaml", "deep.json"]
)
def test_the_real_command_refuses_them_quickly(name: str) -> None:
    """The real ``waymark`` process: exit 2, no traceback, well under a second of its CPU (the
    alias bomb took minutes and ~10 GB; the deep lists ended in a RecursionError)."""
    path = CORPUS / name
    # A fresh process runs the command and reports its own child's usage: this process's
    # RUSAGE_CHILDREN peak is the largest of every child the session waited for.
    probe = (
        "import json, resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=60)\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(json.dumps({'code': r.returncode, 'out': r.stdout + r.stderr, "
        "'cpu': u.ru_utime + u.ru_stime, 'peak_kib': u.ru_maxrss}))\n"
    )
    waymark = str(Path(sys.executable).parent / "waymark")
    done = subprocess.run(
        [sys.executable, "-c", probe, waymark, "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(done.stdout)
    assert_refused(path, report["code"], report["out"], *expectations(path))
    cpu = report["cpu"]
    assert cpu < 2.0, f"{name}: the command used {cpu:.2f} s of CPU (start-up included)"
    peak = report["peak_kib"]
    assert peak < 200 * 1024, f"{name}: {peak} KiB peak"  # KiB on Linux


def test_a_3_mb_bad_value_is_quoted_short(tmp_path: Path) -> None:
    path = tmp_path / "big-value.yaml"
    value = "z" * 3_000_000  # 5 MB is over the file size limit (refused below)
    path.write_text(f"plan_id: p\nsteps:\n  - id: a\n    run: x\n    depends_on: [{value}]\n")
    result = run_cli("validate", str(path), timeout=60)
    output = result.stdout + result.stderr
    assert_refused(path, result.returncode, output, "steps[0].depends_on[0]", "unknown step")
    assert len(output) < 1000  # was the whole value
    assert "…" in output or "..." in output


def test_a_3_mb_bad_value_in_a_ref_is_quoted_short(tmp_path: Path) -> None:
    path = tmp_path / "big-ref.yaml"
    path.write_text(
        "plan_id: p\nstate_refs:\n  - name: r\n    kind: http\n    url: http://h/x\n"
        "    on_error: " + "q" * 3_000_000 + "\nsteps: [{id: a, run: x}]\n"
    )
    code, output = validate_in_process(path)
    assert_refused(path, code, output, "state_refs[0].on_error", "")
    assert len(output) < 1000


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("plan_id: p\nsteps: [{id: a, run: x}]\n" + "#" * MAX_PLAN_BYTES + "\n")
    code, output = validate_in_process(path)
    assert_refused(path, code, output, "", f"larger than the plan file limit of {MAX_PLAN_BYTES:,}")


def test_json_nested_100000_deep_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    result = run_cli("validate", str(path), timeout=60)
    assert_refused(path, result.returncode, result.stdout + result.stderr, "", "nested more than")
    assert "RecursionError" not in result.stderr


def test_outputs_outside_the_workdir_are_allowed_when_the_plan_says_so(tmp_path: Path) -> None:
    text = (CORPUS / "output-absolute.yaml").read_text()
    path = tmp_path / "allowed.yaml"
    path.write_text("allow_outside_workdir: true\n" + text)
    code, output = validate_in_process(path)
    assert code == 0, output
    assert "valid plan 'p'" in output
