"""`make demo`: run the research-report plan, watch it fail once, resume it, and show the record.

The plan is copied to .demo/research-report (fresh each time) so the example stays clean.
With no PREFECT_API_URL, `waymark run` starts a local Prefect server once and reuses it
(`waymark server stop` ends it); the first start on a new machine takes up to ~30 s.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WORK = ROOT / ".demo" / "research-report"
WAYMARK = str(Path(sys.executable).parent / "waymark")


def step(title: str, *args: str, expect: int) -> None:
    print(f"\n=== {title}\n$ waymark {' '.join(args)}", flush=True)
    code = subprocess.run([WAYMARK, *args], cwd=WORK).returncode
    if code != expect:
        print(f"demo: expected exit code {expect}, got {code}", file=sys.stderr)
        sys.exit(1)
    print(f"(exit code {code})", flush=True)


def main() -> None:
    if WORK.exists():
        shutil.rmtree(WORK)
    shutil.copytree(HERE, WORK, ignore=shutil.ignore_patterns("run_demo.py", "__pycache__"))
    step("Validate the plan", "validate", "plan.yaml", expect=0)
    step("Status before the first run (nothing recorded yet)", "status", "plan.yaml", expect=0)
    step(
        "First run: check-figures fails once on purpose (exit 1)",
        "run",
        "plan.yaml",
        "--executor",
        "demo-agent-1",
        expect=1,
    )
    step("Status after the failure", "status", "plan.yaml", expect=1)
    step(
        "Second run, as another agent: resumes at check-figures, skips what completed (exit 0)",
        "resume",
        "plan.yaml",
        "--executor",
        "demo-agent-2",
        expect=0,
    )
    step("Status after the resume", "status", "plan.yaml", expect=0)
    step("Execution markers of both runs", "marker", "plan.yaml", "--history", expect=0)
    published = (WORK / "published" / "publish-log.txt").read_text().splitlines()
    print(f"\npublish log ({len(published)} line(s)): the report was published once")
    print(
        f"files beside the plan: {', '.join(sorted(p.name for p in WORK.glob('*.md')))}, "
        "EXECUTION_MARKER.json"
    )
    if len(published) != 1:
        sys.exit("demo: the report was published more than once")


if __name__ == "__main__":
    main()
