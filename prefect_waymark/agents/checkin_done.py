"""``waymark done``: an executor completes the step it started — outputs hashed, evidence per
acceptance item, and for an ``action`` step its receipt (or, after a ``waymark rerun`` of a step
whose action was done already, the receipt that stands: the action is never done twice)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CheckinError
from ..guards.output_hashes import ABSENT, hash_outputs
from ..ledger import Ledger
from ..ledger.event_writers import record_step_completed
from ..plan.spec import PlanSpec, StepSpec
from .anchor import reanchor
from .checkin import _stop, acceptance_ids, action_done_before, checkin_step, require_holder
from .identity import agent_run_id

__all__ = ["DoneInput", "done_step"]


def _utf8(text: str) -> bool:
    """``text`` holds no lone surrogate (how Python reads a file name that is not UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass
class DoneInput:
    """What ``waymark done`` was given."""

    outputs: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)  # "ITEM: text"
    receipts: list[str] = field(default_factory=list)  # "KEY=VALUE"


def _evidence(step: StepSpec, items: list[str]) -> dict[str, str]:
    ids = acceptance_ids(step)
    by_text = {text: i for i, text in ids.items()}
    found: dict[str, str] = {}
    for raw in items:
        # An item named by its text may hold ':' itself: the longest acceptance text first.
        named = next(
            (t for t in sorted(by_text, key=len, reverse=True) if raw.startswith(t + ":")), None
        )
        if named is not None:
            name, sep, text = named, ":", raw[len(named) + 1 :]
        else:
            name, sep, text = raw.partition(":")
        name, text = name.strip(), text.strip()
        if not sep or not name or not text:
            raise CheckinError(f"--evidence {raw[:80]!r}: expected 'ITEM: text' (ITEM: A1, ...)")
        item = name if name in ids else by_text.get(name)
        if item is None:
            listed = "; ".join(f"{i}: {t}" for i, t in ids.items()) or "none"
            raise CheckinError(
                f"--evidence {name!r}: step {step.id} has no acceptance item {name!r} (its "
                f"items: {listed})"
            )
        if item in found:
            raise CheckinError(f"--evidence {item}: given twice; give each item once")
        found[item] = text
    return found


def _receipts(raw: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for r in raw:
        k, sep, v = r.partition("=")
        if not sep or not k.strip():
            raise CheckinError(f"--receipt {r[:80]!r}: expected KEY=VALUE (e.g. external_id=ch_1)")
        out[k.strip()] = v.strip()
    return out


def done_step(
    plan: PlanSpec, ledger: Ledger, workdir: Path, step_id: str, executor: str, given: DoneInput
) -> dict[str, Any]:
    """Complete ``step_id``: hash its outputs, record the evidence (and an action's receipt);
    return the completion's data."""
    step = checkin_step(plan, step_id)
    require_holder(plan, ledger, step, executor, "complete")
    evidence = _evidence(step, given.evidence)
    receipts = _receipts(given.receipts)
    done_before = action_done_before(ledger, plan, step)
    if done_before is not None and receipts:
        raise CheckinError(
            f"step {step_id}'s action {step.action!r} has a receipt already ({done_before}); "
            f"it is never done twice and its receipt never changes: `waymark done "
            f"{plan.source} {step_id} --executor {executor}` (no --receipt) completes the step"
        )
    if step.action is not None and not receipts and done_before is None:
        raise CheckinError(
            f"step {step_id} has action {step.action!r}: give --receipt external_id=… (what the "
            "system it acted on answered), so the action is never repeated"
        )
    paths = list(dict.fromkeys([*step.outputs, *given.outputs]))
    for p in given.outputs:
        if not _utf8(p):
            raise CheckinError(
                f"--output {p!r}: expected a file name in UTF-8 (the ledger's events are); "
                "rename the file"
            )
    # A link out of the workdir, a FIFO, a device, a directory: OutputRefused (exit 2), before
    # anything is opened or recorded.
    hashes = hash_outputs(workdir, paths, allow_outside=plan.allow_outside_workdir)
    absent = [p for p, h in hashes.items() if h == ABSENT]
    if absent:
        raise CheckinError(
            f"step {step_id}: output(s) {', '.join(absent)} not found in {workdir}; write them "
            "first (declared outputs must exist when the step is done)"
        )
    run_id = agent_run_id(executor)
    if step.action is not None and done_before is None:  # the contract may forbid it by now
        reading = reanchor(plan, ledger, workdir, run_id, step)
        if reading.verdict is not None:
            _stop(plan, ledger, run_id, step, reading.verdict)
        from ..review.receipts import record_receipt

        external = receipts.pop("external_id", None)
        note = "; ".join(f"{k}={v}" for k, v in receipts.items()) or None
        record_receipt(
            ledger,
            plan,
            step_id,
            outcome="applied",
            external_id=external,
            note=note,
            by=executor,
            release=False,
        )
    data: dict[str, Any] = {
        "outputs": hashes,
        "executor": executor,
        "evidence": evidence,
        "workdir": str(workdir),
    }
    record_step_completed(
        ledger,
        plan.plan_id,
        step_id=step_id,
        branch=step.branch,
        run_id=run_id,
        def_hash=step.definition_hash(),
        output_tail=None,
        attempts=1,
        **data,
    )
    return data
