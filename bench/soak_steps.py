"""The soak's step commands (``bench/soak.py``): each leaves countable traces in ``$SOAK_DIR``.

``python soak_steps.py work OUT``: an ordinary step; appends ``begin``/``end`` to
``$SOAK_DIR/runs/<step>`` and writes its declared output ``OUT`` (a new nonce each time).
``python soak_steps.py effect``: the irreversible action; appends its idempotency key to
``$SOAK_DIR/effects.log`` — the side effect the soak counts (a key there twice is an action applied
twice) — and writes the receipt. ``python soak_steps.py probe``: the action's probe, the business
system's answer: exit 0 if the key's effect is there, 1 if not.

Kill points: when ``$SOAK_KILL_AT`` names the point reached (``STEP:begin``, ``STEP:after-output``,
``STEP:before-call``, ``STEP:after-call``), the point is appended to ``$SOAK_DIR/kills.log`` and
the runner's whole process group gets SIGKILL — a machine that dies at that boundary.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import uuid
from pathlib import Path


def _soak_dir() -> Path:
    return Path(os.environ["SOAK_DIR"])


def _append(path: Path, line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def die_here(point: str) -> None:
    """SIGKILL the runner's process group when ``$SOAK_KILL_AT`` names ``point``."""
    if os.environ.get("SOAK_KILL_AT") != point:
        return
    _append(_soak_dir() / "kills.log", point)
    os.killpg(os.getpgrp(), signal.SIGKILL)


def effects() -> list[str]:
    """Every application of the action so far: one key a line."""
    path = _soak_dir() / "effects.log"
    return path.read_text().splitlines() if path.exists() else []


def work(out: str) -> int:
    step = os.environ["WAYMARK_STEP_ID"]
    runs = _soak_dir() / "runs" / step
    die_here(f"{step}:begin")
    _append(runs, "begin")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(f"{step} {uuid.uuid4().hex}\n")
    die_here(f"{step}:after-output")
    _append(runs, "end")
    return 0


def effect() -> int:
    key = os.environ["WAYMARK_IDEMPOTENCY_KEY"]
    step = os.environ["WAYMARK_STEP_ID"]
    die_here(f"{step}:before-call")
    _append(_soak_dir() / "effects.log", key)
    Path(os.environ["WAYMARK_RECEIPT_FILE"]).write_text(json.dumps({"external_id": key}))
    die_here(f"{step}:after-call")
    print(f"applied {key}")
    return 0


def probe() -> int:
    return 0 if os.environ["WAYMARK_IDEMPOTENCY_KEY"] in effects() else 1


def main(argv: list[str]) -> int:
    if argv[0] == "work":
        return work(argv[1])
    if argv[0] == "effect":
        return effect()
    return probe()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
