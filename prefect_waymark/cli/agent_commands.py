"""``waymark next / start / tick / done / fail / block``: agents and people check in.

Each works on the ledger alone (no Prefect server needed), prints one line (or, with
``--json``, one JSON document), and exits with the CLI's codes: 0 done, 2 bad input (a check-in
the ledger must not take), 3 nothing ready, 4 review needed. The executor is ``--executor``,
else ``$WAYMARK_EXECUTOR``, else ``user@host``.

Each command is two functions: ``*_answer`` does the check-in and returns an
:class:`~._common.Answer` (the ``--json`` document, the line, the exit code) or raises
:class:`~prefect_waymark.errors.CommandRefused`; the command prints it (:func:`_say`).
``waymark mcp``'s tools call the same ``*_answer`` functions (cli/mcp_server.py).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import CommandRefused, LedgerError, WaymarkError
from ..ledger.identity import default_executor
from ..models import EVIDENCE, REASON
from ..run import exit_codes
from ._common import Answer, fail, load_or_exit, open_or_exit, workdir_for
from .options import EvidenceFileOpt, LedgerOpt, PlanArg, ResultsOpt, WorkdirOpt, bounded

__all__ = [
    "block",
    "block_answer",
    "done",
    "done_answer",
    "fail_answer",
    "fail_command",
    "next_answer",
    "next_command",
    "start",
    "start_answer",
    "tick",
    "tick_answer",
]

#: Bounds of ``--lease`` (seconds), for the CLI's option and the MCP tools' schemas.
LEASE_MIN, LEASE_MAX, LEASE_DEFAULT = 60, 30 * 86400, 3600.0

StepArg = Annotated[str, typer.Argument(help="Step id.")]
AgentOpt = Annotated[
    str | None,
    typer.Option("--executor", help="Who checks in (default: $WAYMARK_EXECUTOR, else user@host)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document.")]
LeaseOpt = Annotated[
    float,
    typer.Option(
        "--lease",
        min=LEASE_MIN,
        max=LEASE_MAX,
        help="Seconds the hold lives without a tick (default: an hour); a longer one for a "
        "person's step that takes days.",
    ),
]


_EXECUTOR_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@/-]{0,99}$")


def _executor(given: str | None) -> str:
    env = os.environ.get("WAYMARK_EXECUTOR")
    source = "--executor" if given is not None else "$WAYMARK_EXECUTOR"
    name = given if given is not None else env if env is not None else default_executor()
    return valid_executor(name, source)


def valid_executor(name: str, source: str) -> str:
    """``name`` if it is an executor's name, else exit 2 naming ``source``."""
    if not _EXECUTOR_RE.fullmatch(name):
        fail(
            f"{source} {name[:100]!r}: expected a name of letters, digits and . _ @ / - "
            "(at most 100 characters)"
        )
    return name


def _check_results(results: str | None, label: str = "--results") -> None:
    """``--results`` (or the plan's ``results:``, ``label``) before anything is recorded: an
    absolute folder, or the slug of a saved file-system block on a Prefect server that is
    already known (none is started for it)."""
    if results is None or results.startswith("/"):
        return
    if results.count("/") != 1 or results.startswith(".") or not results.strip("/"):
        fail(
            f"{label} {results[:100]!r}: expected an absolute folder path or a saved "
            "file-system block's slug (e.g. local-file-system/team-results)"
        )
    from ..review.suspend import prefect_api_known

    if not prefect_api_known():
        fail(
            f"{label} {results}: a block lives on a Prefect server and none is known here "
            "(set PREFECT_API_URL), or give an absolute folder path"
        )
    from .run_command import storage_problem

    try:
        problem = storage_problem(results)
    except Exception as exc:  # noqa: BLE001 - the server did not answer: one line, exit 2
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        problem = f"the block cannot be read ({type(exc).__name__}: {first})"
    if problem is not None:
        fail(f"{label} {results}: {problem}")


def _storage(spec: Any, results: str | None) -> str | None:
    """The check-in's result storage: ``--results``, else the plan file's ``results:``
    (checked as ``--results`` is); ``None``: the workdir's own."""
    from ..plan.results_pin import chosen_storage

    try:
        storage: str | None = chosen_storage(results, spec)
    except WaymarkError as exc:
        fail(str(exc))
    _check_results(storage, "--results" if results else f"results: in {spec.source}:")
    return storage


def _reach(spec: Any, led: Any, wd: Path, storage: str | None, fix: str) -> set[str]:
    """Before the check-in records anything: restore the outputs completed steps made in
    another folder left missing here, or refuse (exit 2) naming them (run/reach.py)."""
    from ..run.reach import check_reach
    from ..text.commands import carry_options

    restored: list[tuple[str, str, str]] = _checkin(
        lambda: check_reach(
            spec,
            led,
            wd,
            storage,
            results=False,
            fix=lambda flag, value: carry_options(f"{fix} {flag} {shlex.quote(value)}"),
        ),
    )
    return {rel for _sid, rel, _sha in restored}


def _open(
    plan: Path, workdir: Path | None, ledger: str | None, held: tuple[str, str | None]
) -> tuple[Any, Path, Any]:
    """The plan, workdir and ledger of a check-in (:func:`_plan`, then :func:`_ledger`)."""
    spec, wd = _plan(plan, workdir, ledger)
    return spec, wd, _ledger(spec, wd, ledger, True, held)


def _plan(
    plan: Path, workdir: Path | None, ledger: str | None, results: str | None = None
) -> tuple[Any, Path]:
    """The plan and workdir of a check-in; the options given are remembered for the hints
    the command prints (text/commands.py)."""
    from ..text.commands import remember_options

    remember_options(workdir=workdir, ledger=ledger, results=results)
    spec = load_or_exit(plan)
    return spec, workdir_for(spec, workdir)


def _ledger(
    spec: Any,
    wd: Path,
    ledger: str | None,
    checkin: bool = False,
    held: tuple[str, str | None] | None = None,
) -> Any:
    """The check-in's ledger; for a ``checkin`` (every one but ``next``, which says it in its
    document), a closed plan is refused (exit 2) — except, with ``held`` (step,
    executor) for ``done``/``fail``/``block``/``tick``, a step that executor has in progress:
    it ends (or renews) a hold taken before the close."""
    led = open_or_exit(ledger, wd, create=True, plan=spec)
    assert led is not None  # create=True
    if checkin:
        from ..closing.closed import check_not_closed

        if held is not None and _holds_step(led, spec.plan_id, held[0], held[1]):
            return led
        _checkin(lambda: check_not_closed(led, spec.plan_id, spec.source))
    _see_plan(spec, led, "check-in" if checkin else "next")
    return led


def _see_plan(spec: Any, led: Any, source: str) -> None:
    """Before ``next`` or a check-in acts: an edited plan file is compared with the plan the
    ledger saw last (a renamed step keeps its completion), and the changes said on stderr."""
    from ..guards.plan_edits import see_plan

    edits = see_plan(led, spec, by=_executor(None), source=source)
    for line in edits.lines() if edits is not None else ():
        print(f"waymark: {line}", file=sys.stderr)


def _holds_step(led: Any, plan_id: str, step: str, executor: str | None) -> bool:
    """Whether ``step`` is in progress by ``executor`` (its check-in run)."""
    from ..agents.identity import agent_run_id

    st = led.step_states(plan_id).get(step)
    who = _executor(executor)
    return st is not None and st.status == "in_progress" and st.run_id == agent_run_id(who)


def _views(spec: Any, led: Any, wd: Path, what: str) -> None:
    """After a check-in (``what``, in words): the plan's views in the workdir say it too, and
    when a Prefect server is known, the plan page and steps table in its UI (as after a run)."""
    from ..markers import markers_folder
    from ..markers.checkin_artifacts import publish_checkin_artifacts
    from ..markers.run_markers import write_views

    try:
        write_views(spec, led, markers_folder(spec, wd, None))
    except (OSError, WaymarkError) as exc:
        print(f"waymark: warning: the views (TASKS.md, STATE.md) were not updated: {exc}",
              file=sys.stderr)  # fmt: skip
    try:
        problem = publish_checkin_artifacts(spec, led, wd, what)
    except Exception as exc:  # noqa: BLE001 - the UI's copy must not fail a recorded check-in
        problem = f"the plan page could not be rendered ({type(exc).__name__}: {exc})"
    if problem is not None:
        print(f"waymark: warning: {problem}; the check-in is recorded in the ledger",
              file=sys.stderr)  # fmt: skip


def _emit(as_json: bool, doc: dict[str, Any], line: str, code: int = exit_codes.OK) -> None:
    if as_json:
        print(json.dumps(doc, indent=2, default=str, ensure_ascii=False))
    else:
        print(line)
    raise typer.Exit(code)


def _say(as_json: bool, answer: Callable[[], Answer]) -> None:
    """Print a command's answer, or its refusal (one line, or its document with ``--json``),
    and exit with its code."""
    try:
        said = answer()
    except CommandRefused as exc:
        if exc.document is not None and (as_json or exc.code == exit_codes.NEEDS_REVIEW):
            _emit(as_json, exc.document, f"waymark: {exc.message}", exc.code)  # review: stdout
        fail(exc.message, exc.code)
    _emit(as_json, said.document, said.line, said.code)


def _checkin(fn: Callable[[], Any]) -> Any:
    """Run one check-in; a user's mistake is :class:`~prefect_waymark.errors.CommandRefused`
    with exit 2, a stop for review with exit 4 (each with its ``--json`` document)."""
    from ..agents.checkin import CheckinError, CheckinStopped

    try:
        return fn()
    except CommandRefused:
        raise
    except CheckinStopped as exc:
        doc = {"ok": False, "review": True, "reason": str(exc)}
        raise CommandRefused(str(exc), exit_codes.NEEDS_REVIEW, doc) from exc
    except (CheckinError, LedgerError, WaymarkError) as exc:
        doc = {"ok": False, "review": False, "reason": str(exc)}
        raise CommandRefused(str(exc), exit_codes.BAD_INPUT, doc) from exc


def next_command(
    plan: PlanArg,
    executor: AgentOpt = None,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    results: ResultsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The step to work on now, re-anchored (contract, refs); or why nothing is ready. With
    --results, upstream outputs this folder lacks are restored from the storage."""
    _say(as_json, lambda: next_answer(plan, executor, workdir, ledger, results))


def next_answer(
    plan: Path,
    executor: str | None = None,
    workdir: Path | None = None,
    ledger: str | None = None,
    results: str | None = None,
) -> Answer:
    """``waymark next``'s answer; exit 3 (with the document) when nothing is ready."""
    from ..agents.next_step import next_document
    from ..text.commands import waymark_command

    spec, wd = _plan(plan, workdir, ledger, results)
    storage = _storage(spec, results)
    led = _ledger(spec, wd, ledger)
    who = _executor(executor) if executor or os.environ.get("WAYMARK_EXECUTOR") else None
    with led:
        restored = _reach(spec, led, wd, storage, waymark_command("next", plan))
        doc, code = _checkin(lambda: next_document(spec, led, wd, who))
    for up in (doc.get("step") or {}).get("upstream") or []:
        for out in up.get("outputs") or []:
            if out["path"] in restored:  # restored from the storage before anything ran
                out["restored"] = True
    if storage and doc.get("step"):
        from ..agents.outputs import restore_upstream

        _checkin(lambda: restore_upstream(storage, wd, doc["step"]))
    return Answer(doc, _next_text(doc), code)


def _next_text(doc: dict[str, Any]) -> str:
    lines = [f"{doc['plan_id']}: {doc['standing']}"]
    c = doc.get("contract") or {}
    if c.get("goal"):
        lines.append(f"goal: {c['goal']}")
    if c.get("forbidden"):
        lines.append("forbidden: " + "; ".join(c["forbidden"]))
    for r in doc.get("refs_changed") or []:
        lines.append(f"ref changed: {r['name']} ({r.get('where')}): {r.get('accepted')} -> "
                     f"{r.get('current')}")  # fmt: skip
    for st in doc.get("stale") or []:
        again = "the next `waymark run` runs it again (or stops it for review)"
        lines.append(f"stale: {st['step']}: {st['why']} — {again}")
    step = doc.get("step")
    if step is None:
        lines.append(f"nothing to do now: {doc['reason']}")
        return "\n".join(lines)
    lines += [
        f"step: {step['id']}"
        + (f" — {step['title']}" if step["title"] else "")
        + f" ({step['kind']}, {step['status']})",
        f"instructions: {step['instructions']}",
    ]
    lines += [f"acceptance {a['id']}: {a['text']}" for a in step["acceptance"]]
    lines += [f"action {r['action']}: {r['note']}" for r in step.get("receipts") or []]
    for u in step["upstream"]:
        for o in u["outputs"]:
            where = "here" if o.get("here") else f"not here; made at {o.get('made_in')}"
            if o.get("restored"):
                where = "restored here from the result storage"
            lines.append(f"upstream {u['step']}: {o['path']} (sha256 {o['sha256'][:12]}…, {where})")
    for a in step["attempts"]:
        lines.append(f"earlier: {a['event']} at {a['at'][:19]}: {a.get('error') or ''}")
    cmd = step["commands"]
    lines.append(f"then: {cmd['start'] if step['status'] != 'in_progress' else cmd['done']}")
    return "\n".join(lines)


def start(
    plan: PlanArg,
    step: StepArg,
    executor: AgentOpt = None,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    lease: LeaseOpt = LEASE_DEFAULT,
    results: ResultsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Take the step's branch (one step in progress per branch): re-anchors first. Outputs
    of completed steps this folder lacks are restored from the result storage first."""
    _say(as_json, lambda: start_answer(plan, step, executor, workdir, ledger, lease, results))


def start_answer(
    plan: Path,
    step: str,
    executor: str | None = None,
    workdir: Path | None = None,
    ledger: str | None = None,
    lease: float = LEASE_DEFAULT,
    results: str | None = None,
) -> Answer:
    """``waymark start``'s answer."""
    from ..agents.checkin import start_step
    from ..text.commands import waymark_command

    spec, wd = _plan(plan, workdir, ledger, results)
    storage = _storage(spec, results)
    led = _ledger(spec, wd, ledger, checkin=True)
    who = _executor(executor)
    with led:
        _reach(spec, led, wd, storage, waymark_command("start", plan, step))
        line = _checkin(lambda: start_step(spec, led, wd, step, who, lease))
        _views(spec, led, wd, f"{step} started by {who}")
    return Answer({"ok": True, "step": step, "executor": who, "message": line}, line)


def tick(
    plan: PlanArg,
    step: StepArg,
    executor: AgentOpt = None,
    every: Annotated[
        int, typer.Option("--every", min=1, help="Re-anchor on every N-th tick.")
    ] = 10,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    lease: LeaseOpt = LEASE_DEFAULT,
    as_json: JsonOpt = False,
) -> None:
    """Renew the hold on a step in progress; every N ticks re-anchor and print the contract."""
    _say(as_json, lambda: tick_answer(plan, step, executor, every, workdir, ledger, lease))


def tick_answer(
    plan: Path,
    step: str,
    executor: str | None = None,
    every: int = 10,
    workdir: Path | None = None,
    ledger: str | None = None,
    lease: float = LEASE_DEFAULT,
) -> Answer:
    """``waymark tick``'s answer."""
    from ..agents.checkin import tick_step

    spec, wd, led = _open(plan, workdir, ledger, (step, executor))
    who = _executor(executor)
    count = _count_tick(wd, spec.plan_id, who, step)
    with led:
        anchored = _checkin(
            lambda: tick_step(
                spec, led, wd, step, who, count=count, every=every, lease_seconds=lease
            ),
        )
    doc = {"ok": True, "step": step, "tick": count, "reanchored": anchored}
    line = f"tick {count} on {step}: hold renewed"
    if anchored is not None:
        line += f"; re-anchored: goal {anchored['goal']!r}; forbidden: " + (
            "; ".join(anchored["forbidden"]) or "none"
        )
    return Answer(doc, line)


def _count_tick(workdir: Path, plan_id: str, executor: str, step: str) -> int:
    """This tick's number (per plan, executor and step), kept in ``.waymark/agents/``."""
    folder = workdir / ".waymark" / "agents" / plan_id
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (re.sub(r"[^A-Za-z0-9._-]", "_", executor) + ".json")
    try:
        counts = json.loads(path.read_text())
        if not isinstance(counts, dict):
            counts = {}
    except (OSError, ValueError):
        counts = {}
    n = int(counts.get(step, 0)) + 1
    counts[step] = n
    path.write_text(json.dumps(counts))
    return n


def done(
    plan: PlanArg,
    step: StepArg,
    executor: AgentOpt = None,
    output: Annotated[
        list[str] | None, typer.Option("--output", help="A file the step made (repeat).")
    ] = None,
    evidence: Annotated[
        list[str] | None,
        typer.Option(
            "--evidence",
            help=f'"ITEM: text" for an acceptance item (A1, ...); at most {EVIDENCE.chars:,} '
            "characters (longer: --evidence-file).",
            callback=bounded(EVIDENCE, "--evidence"),
        ),
    ] = None,
    evidence_file: EvidenceFileOpt = None,
    receipt: Annotated[
        list[str] | None,
        typer.Option("--receipt", help="KEY=VALUE of an action step's receipt (external_id=)."),
    ] = None,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    results: ResultsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check in a step as done: outputs hashed, evidence per acceptance item, receipts. With
    --results the outputs are kept in the storage too (for executors in other folders)."""
    if evidence and evidence_file:
        fail("--evidence and --evidence-file: give the evidence one way or the other")
    evidence = evidence or evidence_file  # --evidence-file: the files' texts (options.py)
    _say(
        as_json,
        lambda: done_answer(
            plan, step, executor, output, evidence, receipt, workdir, ledger, results
        ),
    )


def done_answer(
    plan: Path,
    step: str,
    executor: str | None = None,
    output: list[str] | None = None,
    evidence: list[str] | None = None,
    receipt: list[str] | None = None,
    workdir: Path | None = None,
    ledger: str | None = None,
    results: str | None = None,
) -> Answer:
    """``waymark done``'s answer."""
    from ..agents.checkin_done import DoneInput, done_step
    from ..text.commands import waymark_command

    spec, wd = _plan(plan, workdir, ledger, results)
    storage = _storage(spec, results)
    led = _ledger(spec, wd, ledger, True, (step, executor))
    who = _executor(executor)
    given = DoneInput(outputs=output or [], evidence=evidence or [], receipts=receipt or [])
    with led:
        _reach(spec, led, wd, storage, waymark_command("done", plan, step))
        data = _checkin(lambda: done_step(spec, led, wd, step, who, given))
        if storage:
            from ..agents.outputs import keep_outputs

            kept = _checkin(
                lambda: keep_outputs(
                    storage, wd, data["outputs"], allow_outside=spec.allow_outside_workdir
                ),
            )
            data["kept"] = kept.stored
            if kept.not_kept:
                data["not_kept"] = kept.not_kept
        missing = [i for i in _acceptance_ids(spec, step) if i not in (data.get("evidence") or {})]
        from ..agents.flow_suspend import resume_waiting_runs

        data["resumed"] = resume_waiting_runs(led, spec.plan_id, step)
        _views(spec, led, wd, f"{step} done by {who}")
    line = f"step {step} done by {who}"
    if missing:
        line += f" (no evidence for {', '.join(missing)})"
    line += "".join(f"\n{spec.plan_id}: {r}" for r in data["resumed"])
    line += "".join(f"\noutput {p}: {why}" for p, why in (data.get("not_kept") or {}).items())
    return Answer({"ok": True, "step": step, "executor": who, **data, "no_evidence": missing},
                  line)  # fmt: skip


def _acceptance_ids(spec: Any, step: str) -> list[str]:
    from ..agents.checkin import acceptance_ids

    return list(acceptance_ids(spec.step(step)))


def fail_command(
    plan: PlanArg,
    step: StepArg,
    reason: Annotated[
        str,
        typer.Option(
            "--reason",
            help=f"What went wrong (at most {REASON.chars:,} characters).",
            callback=bounded(REASON, "--reason"),
        ),
    ],
    executor: AgentOpt = None,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check in a step as failed (the next `waymark next` offers it again)."""
    _say(as_json, lambda: fail_answer(plan, step, reason, executor, workdir, ledger))


def fail_answer(
    plan: Path,
    step: str,
    reason: str,
    executor: str | None = None,
    workdir: Path | None = None,
    ledger: str | None = None,
) -> Answer:
    """``waymark fail``'s answer."""
    if not reason.strip():
        fail("--reason: say what went wrong")
    from ..agents.checkin import fail_step

    spec, wd, led = _open(plan, workdir, ledger, (step, executor))
    who = _executor(executor)
    with led:
        _checkin(lambda: fail_step(spec, led, step, who, reason))
        _views(spec, led, wd, f"{step} failed by {who}")
    return Answer({"ok": True, "step": step, "executor": who}, f"step {step} failed: {reason}")


def block(
    plan: PlanArg,
    step: StepArg,
    on: Annotated[str | None, typer.Option("--on", help="The step it waits behind.")] = None,
    reason: Annotated[
        str,
        typer.Option(
            "--reason",
            help=f"Why it cannot go on (at most {REASON.chars:,} characters).",
            callback=bounded(REASON, "--reason"),
        ),
    ] = "",
    executor: AgentOpt = None,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record that a step cannot go on: behind another step (--on), or why (--reason)."""
    _say(as_json, lambda: block_answer(plan, step, on, reason, executor, workdir, ledger))


def block_answer(
    plan: Path,
    step: str,
    on: str | None = None,
    reason: str = "",
    executor: str | None = None,
    workdir: Path | None = None,
    ledger: str | None = None,
) -> Answer:
    """``waymark block``'s answer."""
    if on is None and not reason.strip():
        fail("give --on STEP or --reason TEXT (or both)")
    from ..agents.checkin import block_step

    spec, wd, led = _open(plan, workdir, ledger, (step, executor))
    who = _executor(executor)
    with led:
        _checkin(lambda: block_step(spec, led, step, who, on, reason))
        _views(spec, led, wd, f"{step} blocked by {who}")
    why = f"behind {on}" if on else reason
    return Answer({"ok": True, "step": step, "on": on, "reason": reason},
                  f"step {step} blocked: {why}")  # fmt: skip
