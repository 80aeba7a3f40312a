"""A parent plan with two sub-plans: ``research`` (its step r2 fails on its first attempt) and
``build`` (its step b2 stops for review the first time it runs). Every step that succeeds
appends its name to ``<name>.count`` in the workdir."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests._support.helpers import write_plan

GATE = """
import json

from prefect_waymark import NeedsReview


def gate(ctx):
    seen = ctx.workdir / "gate.seen"
    if not seen.exists():
        seen.write_text("")
        raise NeedsReview("b2 wants a person to look at the build inputs")
    with open(ctx.workdir / "b2.count", "a") as f:
        f.write("b2\\n")
    return "looked at"


def final(ctx):
    with open(ctx.workdir / "final.count", "a") as f:
        f.write("final\\n")
    with open(ctx.workdir / "upstream.json", "w") as f:
        json.dump(ctx.upstream, f)
    return "done"
"""


def count(name: str) -> str:
    return f"echo {name} >> {name}.count"


def write_family(folder: Path, *, parent_extra: dict[str, Any] | None = None) -> Path:
    """Write parent.yaml, research.yaml, build.yaml and steps.py; return parent.yaml."""
    (folder / "steps.py").write_text(GATE)
    write_plan(
        folder,
        {
            "plan_id": "research",
            "steps": [
                {"id": "r1", "run": count("r1"), "outputs": ["r1.count"]},
                {
                    "id": "r2",
                    "depends_on": ["r1"],
                    "run": "test -f r2.ok || { touch r2.ok; echo r2 not yet >&2; exit 1; }; "
                    + count("r2"),
                },
                {"id": "r3", "depends_on": ["r2"], "run": count("r3")},
            ],
        },
        "research.yaml",
    )
    write_plan(
        folder,
        {
            "plan_id": "build",
            "steps": [
                {"id": "b1", "run": count("b1")},
                {"id": "b2", "depends_on": ["b1"], "call": "steps:gate"},
                {"id": "b3", "depends_on": ["b2"], "run": count("b3")},
            ],
        },
        "build.yaml",
    )
    doc: dict[str, Any] = {
        "plan_id": "parent",
        "steps": [
            {"id": "prep", "run": count("prep")},
            {"id": "research", "depends_on": ["prep"], "plan": "research.yaml"},
            {"id": "build", "depends_on": ["prep"], "plan": "build.yaml", "branch": "b"},
            {"id": "final", "depends_on": ["research", "build"], "call": "steps:final"},
        ],
    }
    doc.update(parent_extra or {})
    return write_plan(folder, doc, "parent.yaml")


def counts(folder: Path) -> dict[str, int]:
    """How many times each step succeeded, from its count file."""
    return {p.stem: len(p.read_text().splitlines()) for p in sorted(folder.glob("*.count"))}
