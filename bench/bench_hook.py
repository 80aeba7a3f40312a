"""Hook benchmark: one ``waymark hook claude-code EVENT`` call, a whole process.

Run: ``.venv/bin/python bench/bench_hook.py [--runs 7] [--json]``

Claude Code runs the hook on every tool call (``PreToolUse``, ``PostToolUse``), so its latency is
added to each of them. Measured as a subprocess against a plan with an agent step in progress
(the hook tests' plan, ``tests/hooks/_helpers.py``), on ``waymark hook`` (the console script)
and on ``python -m prefect_waymark.hooks``, against ``python -c pass`` and ``python -c "import
pydantic"`` in the same run, interleaved (median of ``--runs``; wall and CPU of the child).
There is no Prefect side: the hook path never imports Prefect (tests/hooks).

``PreToolUse`` is measured twice: an allowed call (``pytest``, then a plain ``git push``: what
almost every tool call is; one session, so its plan facts and accepted contract are kept, as in
a session's second call onwards) and a denied one (``git push --force``: the deny's hint reads
the plan's steps and the ledger).

``--json``: the last line of stdout is one JSON object: ``hook_pretooluse_seconds``,
``hook_pretooluse_vs_bare_python`` (the console script's allowed ``PreToolUse`` against
``python -c pass``; issue 34's goal, <= 4), the ``-m`` form's, the deny's and ``Stop``'s
seconds, and the references'. The machine has 2 cores and is noisy: read the ratios, not the
third digit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bytecode import compile_package  # noqa: E402 - beside this file
from whole_process import timed_child  # noqa: E402 - beside this file

from tests.hooks._helpers import EXECUTOR, env_for, make_plan, payload, waymark  # noqa: E402

WAYMARK = str(Path(sys.executable).with_name("waymark"))
#: label -> (event, payload); the first is the goal's.
CALLS = {
    "PreToolUse": ("PreToolUse", "pre_tool_use_bash_allowed.json"),
    "PreToolUse deny": ("PreToolUse", "pre_tool_use_bash_force_push.json"),
    "Stop": ("Stop", "stop.json"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--runs", type=int, default=7, help="interleaved runs of each command")
    ap.add_argument("--json", action="store_true", help="last line: the figures as one JSON object")
    args = ap.parse_args()
    compile_package()  # whole processes load cached bytecode, as an installed package does
    with tempfile.TemporaryDirectory(prefix="waymark-bench-hook-") as tmp:
        work = Path(tmp)
        plan = make_plan(work)
        waymark("start", str(plan), "draft", "--executor", EXECUTOR)  # an agent step under way
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WAYMARK_", "CLAUDE_"))}
        env.update(env_for(plan))
        py = sys.executable
        rows: list[tuple[str, list[str], bytes]] = [
            ("python -c pass", [py, "-c", "pass"], b""),
            ('python -c "import pydantic"', [py, "-c", "import pydantic"], b""),
        ]
        for label, (event, name) in CALLS.items():
            stdin = json.dumps(payload(name, work)).encode()
            script = [WAYMARK, "hook", "claude-code", event]
            module = [py, "-m", "prefect_waymark.hooks", "claude-code", event]
            rows.append((f"waymark hook claude-code {label}", script, stdin))
            rows.append((f"python -m prefect_waymark.hooks claude-code {label}", module, stdin))
        for _, cmd, stdin in rows:  # warm the file cache, not counted
            timed_child(cmd, stdin=stdin, env=env)
        walls: dict[str, list[float]] = {label: [] for label, _, _ in rows}
        cpus: dict[str, list[float]] = {label: [] for label, _, _ in rows}
        for _ in range(args.runs):
            for label, cmd, stdin in rows:
                wall, cpu = timed_child(cmd, stdin=stdin, env=env)
                walls[label].append(wall)
                cpus[label].append(cpu)
    med = {label: statistics.median(v) for label, v in walls.items()}
    cpu = {label: statistics.median(v) for label, v in cpus.items()}
    print(f"\n== one hook call, whole process, median of {args.runs} (interleaved) ==")
    print(f"{'command':<58}{'wall s':>8}{'CPU s':>8}")
    for label in walls:
        print(f"{label:<58}{med[label]:>8.3f}{cpu[label]:>8.3f}")
    bare = med["python -c pass"]
    pre = med["waymark hook claude-code PreToolUse"]
    deny = med["waymark hook claude-code PreToolUse deny"]
    print(f"waymark hook PreToolUse / bare python start-up: {pre / bare:.1f}x allowed, "
          f"{deny / bare:.1f}x denied")  # fmt: skip
    if args.json:
        figures = {
            "hook_pretooluse_seconds": pre,
            "hook_pretooluse_vs_bare_python": pre / bare,
            "hook_pretooluse_module_seconds": med[
                "python -m prefect_waymark.hooks claude-code PreToolUse"
            ],
            "hook_pretooluse_deny_seconds": deny,
            "hook_pretooluse_deny_vs_bare_python": deny / bare,
            "hook_stop_seconds": med["waymark hook claude-code Stop"],
            "hook_pretooluse_cpu_seconds": cpu["waymark hook claude-code PreToolUse"],
            "bare_python_seconds": bare,
            "bare_python_cpu_seconds": cpu["python -c pass"],
            "import_pydantic_seconds": med['python -c "import pydantic"'],
        }
        print(json.dumps({k: round(v, 4) for k, v in figures.items()}, sort_keys=True))


if __name__ == "__main__":
    main()
