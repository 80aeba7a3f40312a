"""Step bodies of the irreversible-action tests; copied into each test's workdir as
``paysteps.py`` so that runner subprocesses import it (``call:``) or run it (``run:``).

The effect is ``POST $WAYMARK_TEST_SERVICE/charge`` with the action's idempotency key (the test's
:class:`~tests._support.http_counter.CounterService` counts every call). Kill points: when
``$WAYMARK_TEST_KILL_AT`` names the point reached, the point is appended to
``$WAYMARK_TEST_KILL_LOG`` and the whole process group (the ``waymark run`` runner and its
children) gets SIGKILL. ``$WAYMARK_TEST_NO_PROBES`` set: ``call:`` actions get no probe.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import urllib.request
from pathlib import Path
from typing import Any


def die_here(point: str) -> None:
    if os.environ.get("WAYMARK_TEST_KILL_AT") != point:
        return
    with open(os.environ["WAYMARK_TEST_KILL_LOG"], "a") as fh:
        fh.write(point + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.killpg(os.getpgrp(), signal.SIGKILL)


def charge(key: str) -> dict[str, Any]:
    req = urllib.request.Request(
        os.environ["WAYMARK_TEST_SERVICE"] + "/charge",
        data=b"{}",
        headers={"Idempotency-Key": key, "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        body: dict[str, Any] = json.load(resp)
    return body


def applied(key: str) -> bool:
    url = os.environ["WAYMARK_TEST_SERVICE"] + "/applied?key=" + urllib.request.quote(key)
    with urllib.request.urlopen(url, timeout=30) as resp:
        return bool(json.load(resp)["applied"])


def _probe() -> Any:
    return None if os.environ.get("WAYMARK_TEST_NO_PROBES") else applied


def work(ctx: Any) -> dict[str, str]:
    """An ordinary step: it only leaves a trace."""
    die_here(f"{ctx.step_id}:begin")
    done = Path(ctx.workdir) / "done"
    done.mkdir(exist_ok=True)
    with open(done / ctx.step_id, "a") as fh:
        fh.write("x")
    return {"step": ctx.step_id}


def charge_card(ctx: Any) -> dict[str, Any]:
    """An action in the ``with`` form."""
    die_here(f"{ctx.step_id}:begin")
    with ctx.action("charge-card", probe=_probe()) as act:
        if act.needed:
            die_here(f"{ctx.step_id}:before-call")
            resp = charge(act.key)
            die_here(f"{ctx.step_id}:after-call")
            act.record(external_id=resp["id"], response=resp, result=resp)
    die_here(f"{ctx.step_id}:after-receipt")
    return {"external_id": act.receipt.external_id, "how": act.how}


def send_invoice(ctx: Any) -> dict[str, Any]:
    """An action in the decorator form."""
    die_here(f"{ctx.step_id}:begin")

    @ctx.action("send-invoice", probe=_probe())
    def send(act: Any) -> dict[str, Any]:
        die_here(f"{ctx.step_id}:before-call")
        resp = charge(act.key)
        die_here(f"{ctx.step_id}:after-call")
        act.record(external_id=resp["id"], response=resp)
        return resp

    done = send()
    die_here(f"{ctx.step_id}:after-receipt")
    return {"external_id": done.receipt.external_id, "how": done.how}


def _command(argv: list[str]) -> int:
    """``run:`` steps: ``python paysteps.py publish`` (the action) or ``probe``."""
    key = os.environ["WAYMARK_IDEMPOTENCY_KEY"]
    step = os.environ["WAYMARK_STEP_ID"]
    if argv[0] == "probe":
        return 0 if applied(key) else 1
    die_here(f"{step}:before-call")
    resp = charge(key)
    Path(os.environ["WAYMARK_RECEIPT_FILE"]).write_text(json.dumps({"external_id": resp["id"]}))
    die_here(f"{step}:after-call")
    print(f"published with key {key}: {resp['id']}")
    return 0


if __name__ == "__main__":
    sys.exit(_command(sys.argv[1:]))
