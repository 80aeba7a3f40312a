"""Peak memory of a real ``run_plan`` flow whose step prints a lot, in a fresh process:
``python -m tests._support.output_worker BASE``.

It runs ``BASE/quiet/plan.yaml`` first (Prefect imported, a flow run done: the baseline), then
``BASE/loud/plan.yaml``, and prints JSON with both flow runs' final state types and the process's
peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``, KiB on Linux) after each.
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path


def _peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main(base: Path) -> int:
    from prefect_waymark.flows import run_plan

    report: dict[str, object] = {}
    for name in ("quiet", "loud"):
        state = run_plan(plan=str(base / name / "plan.yaml"), return_state=True)
        report[name] = {"state": state.type.value, "peak_kib": _peak_kib()}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
