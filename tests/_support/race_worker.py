"""One of two racing runners, a real process:
``python -m tests._support.race_worker BASE URL WHO REPS``.

For each repetition it waits for the other runner at a file barrier, then runs that repetition's
plan through :func:`prefect_waymark.cli.run_command.run_from_cli` — what ``waymark run`` does
after parsing its arguments — so both runners start the same plan at the same moment. A run that
stops with steps remaining (exit 3: the other runner holds them) is started again at once, like a
poller, so the two keep racing for every step until the plan is done. One long-lived process per
runner keeps 20 repetitions within the test budget (a ``waymark run`` process costs 2-4 s to
start).
Final exit codes and run counts go to ``BASE/codes-WHO.json``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

MAX_RUNS = 60


def main(base: Path, ledger_url: str, who: str, reps: int) -> int:
    from prefect_waymark.cli.run_command import run_from_cli

    codes = []
    for i in range(reps):
        rep = base / f"rep{i:02d}"
        (rep / f"ready-{who}").touch()
        deadline = time.monotonic() + 300
        while len(list(rep.glob("ready-*"))) < 2:
            if time.monotonic() > deadline:
                print(f"{who}: the other runner never came to repetition {i}", file=sys.stderr)
                return 3
            time.sleep(0.002)
        runs = 0
        while True:
            code = run_from_cli(
                plan_path=rep / "plan.yaml",
                workdir=rep,
                ledger_url=ledger_url,
                max_steps=None,
                until=None,
                executor=who,
            )
            runs += 1
            # 3: the other runner holds the remaining steps; come back, as a poller would.
            if code != 3 or runs >= MAX_RUNS:
                break
        codes.append({"code": code, "runs": runs})
        (base / f"codes-{who}.json").write_text(json.dumps(codes))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])))
