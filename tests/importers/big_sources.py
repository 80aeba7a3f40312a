"""Generated sources of a given size for the timing tests: a Task Master tasks.json (tasks with
subtasks, dependencies on earlier tasks, a third done) and a beads issues.jsonl (epics with
children, ``blocks`` chains, priorities), both as the tools write them."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

_WORDS = (
    "parse validate store render deploy migrate index cache retry audit export import schedule "
    "notify invoice account session token report metric queue worker shard replica backup"
).split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def taskmaster_file(path: Path, target_bytes: int, seed: int = 7) -> int:
    """Write a tagged tasks.json of about ``target_bytes``; return how many tasks it holds."""
    rng = random.Random(seed)
    tasks: list[dict[str, Any]] = []
    size = 0
    n = 0
    while size < target_bytes:
        n += 1
        deps = sorted({rng.randint(1, n - 1) for _ in range(rng.randint(0, 3))}) if n > 1 else []
        subtasks = [
            {
                "id": j,
                "title": _text(rng, 5),
                "description": _text(rng, 14),
                "dependencies": [j - 1] if j > 1 else [],
                "details": _text(rng, 30),
                "status": rng.choice(["done", "pending", "in-progress"]),
                "testStrategy": _text(rng, 10),
                "parentTaskId": n,
            }
            for j in range(1, rng.randint(0, 4) + 1)
        ]
        task = {
            "id": n,
            "title": _text(rng, 6),
            "description": _text(rng, 16),
            "details": _text(rng, 60),
            "testStrategy": _text(rng, 14),
            "status": rng.choice(["done", "pending", "pending", "deferred", "review"]),
            "dependencies": deps,
            "priority": rng.choice(["high", "medium", "low"]),
            "subtasks": subtasks,
        }
        tasks.append(task)
        size += len(json.dumps(task, indent=2))
    doc = {"master": {"tasks": tasks, "metadata": {"description": "generated"}}}
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return n


def beads_file(path: Path, target_bytes: int, seed: int = 11) -> int:
    """Write an issues.jsonl of about ``target_bytes``; return how many issues it holds."""
    rng = random.Random(seed)
    lines: list[str] = []
    size = 0
    n = 0
    epic: str | None = None
    while size < target_bytes:
        n += 1
        iid = f"bd-{n:05x}"
        deps: list[dict[str, str]] = []
        if n % 25 == 1:
            epic = iid
            kind = "epic"
        else:
            kind = rng.choice(["task", "bug", "feature", "chore"])
            if epic is not None:
                deps.append({"issue_id": iid, "depends_on_id": epic, "type": "parent-child"})
            if n > 2 and rng.random() < 0.6:
                blocker = f"bd-{rng.randint(max(1, n - 40), n - 1):05x}"
                if blocker != epic:
                    deps.append({"issue_id": iid, "depends_on_id": blocker, "type": "blocks"})
        issue = {
            "id": iid,
            "title": _text(rng, 6),
            "description": _text(rng, 40),
            "design": _text(rng, 20),
            "acceptance_criteria": "- " + _text(rng, 8) + "\n- " + _text(rng, 8),
            "notes": _text(rng, 10),
            "status": rng.choice(["open", "closed", "closed", "in_progress", "blocked"]),
            "priority": rng.randint(0, 4),
            "issue_type": kind,
            "created_at": "2025-08-01T09:00:00Z",
            "updated_at": "2025-08-02T09:00:00Z",
            "dependencies": deps,
        }
        line = json.dumps(issue, separators=(",", ":"))
        lines.append(line)
        size += len(line) + 1
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return n
