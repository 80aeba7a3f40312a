"""``waymark marker``: the latest execution marker, the history, a rebuild of the files, this
copy's latest marker artifact from Prefect (``--from-prefect``), or the runs' execution
boundaries (``--changes``, :mod:`.marker_changes`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..ledger.event_payloads import skip_counts
from ..run import exit_codes
from ..text.lists import capped_list
from ._common import fail, load_or_exit, open_or_exit, open_reader_or_exit, workdir_for
from .options import LedgerOpt, MarkersDirOpt, PlanArg, WorkdirOpt

if TYPE_CHECKING:
    from ..plan.spec import PlanSpec


def marker(
    plan: PlanArg,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    markers_dir: MarkersDirOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the marker as JSON.")] = False,
    history: Annotated[bool, typer.Option("--history", help="Every run's marker.")] = False,
    rebuild: Annotated[
        bool,
        typer.Option("--rebuild", help="Rewrite EXECUTION_MARKER.json and views from the ledger."),
    ] = False,
    from_prefect: Annotated[
        bool,
        typer.Option("--from-prefect", help="Read the latest marker artifact from Prefect's API."),
    ] = False,
    changes: Annotated[
        bool,
        typer.Option(
            "--changes",
            help="The run's execution boundary: ledger range, git before/after, files it "
            "created, modified, deleted or used temporarily, edits made between runs.",
        ),
    ] = False,
) -> None:
    """Show the latest execution marker: what the last run did and where the next one starts."""
    code = marker_command(
        plan, workdir, ledger, markers_dir, as_json, history, rebuild, from_prefect, changes
    )
    raise typer.Exit(code)


def _print_marker(m: dict[str, Any]) -> None:
    nxt = m["next_start"]
    print(f"{m['executed_at']}  {m['result']:<12} by {m['executor']}")
    print(f"  started from: {m.get('started_from') or 'the beginning'}")
    print(f"  executed: {capped_list(m['executed_steps']) or 'none'}")
    print(f"  skipped: {skip_counts(m)[0]}; failed: {capped_list(m['failed_steps']) or 'none'}")
    for o in m.get("outputs", []):
        print(f"  output: {o['path']} sha256 {o['sha256'][:16]}")
    for r in m.get("receipts", []):
        print(f"  receipt: {r.get('key')} ({r.get('outcome', 'applied')})")
    print(f"  next start: {nxt.get('step') or 'none'} ({nxt.get('why')})")


def _from_prefect(spec: PlanSpec, wd: Path, ledger_url: str | None, as_json: bool) -> int:
    """This copy's latest marker artifact (the copy: this workdir's ledger), never another
    copy's with the same plan id."""
    reader = open_reader_or_exit(ledger_url, wd, spec)
    if reader is None:
        fail(
            f"plan {spec.plan_id!r} has no ledger in {wd}: no run of this copy, so no marker "
            "artifact in Prefect",
            exit_codes.STEP_FAILED,
        )
    from .run_command import configure_prefect

    configure_prefect()
    from ..markers.artifacts import read_latest_marker

    with reader:
        latest = read_latest_marker(spec.plan_id, reader, wd)
    if latest is None:
        fail(
            f"no marker artifact for plan {spec.plan_id!r} (this copy: ledger {reader.url}) in "
            "Prefect",
            exit_codes.STEP_FAILED,
        )
    if as_json:
        print(json.dumps(latest, indent=2))
        return exit_codes.OK
    nxt = latest.get("next_start") or {}
    art = latest["artifact"]
    print(f"{latest['executed_at']}  {latest['result']:<12} by {latest['executor']}")
    print(f"  from Prefect: artifact {art['key']} (copy {latest['copy']['copy_id']})")
    print(f"  {art['description']}")
    print(f"  started from: {latest.get('started_from') or 'the beginning'}")
    print(f"  executed: {capped_list(latest.get('executed_steps') or []) or 'none'}")
    print(f"  failed: {capped_list(latest.get('failed_steps') or []) or 'none'}")
    print(f"  next start: {nxt.get('step') or 'none'} ({nxt.get('why')})")
    print(f"  flow run: {latest.get('flow_run_id') or '-'}")
    return exit_codes.OK


def marker_command(
    plan_path: Path,
    workdir: Path | None,
    ledger_url: str | None,
    markers_dir: Path | None,
    as_json: bool,
    history: bool,
    rebuild: bool,
    from_prefect: bool,
    changes: bool = False,
) -> int:
    from ..markers import MarkerFileError, marker_history, markers_folder, rebuild_marker_files

    if changes and (rebuild or from_prefect):
        fail("--changes reads the ledger's markers: use it without --rebuild and --from-prefect")
    spec = load_or_exit(plan_path)
    wd = workdir_for(spec, workdir)
    if from_prefect:
        return _from_prefect(spec, wd, ledger_url, as_json)
    led = open_or_exit(ledger_url, wd, create=False, plan=spec)
    if led is None:
        if rebuild:
            fail(f"no ledger for plan {spec.plan_id!r} in {wd}: nothing to rebuild from")
        print(f"plan {spec.plan_id}: no run recorded yet", file=sys.stderr)
        if as_json:
            print("null")
        return exit_codes.OK
    with led:
        markers = marker_history(led, spec.plan_id)
        if rebuild:
            folder = markers_folder(spec, wd, markers_dir)
            try:
                n = rebuild_marker_files(spec, led, folder)
            except MarkerFileError as exc:
                fail(str(exc))
            print(
                f"rebuilt waymark's files in {folder} from the ledger ({n} runs in the marker "
                f"file: the newest; every run: `waymark marker {plan_path} --history`)"
            )
            return exit_codes.OK
    if not markers:
        print(f"plan {spec.plan_id}: no run recorded yet", file=sys.stderr)
        if as_json:
            print("null")
        return exit_codes.OK
    if changes:
        from .marker_changes import print_changes

        print_changes(spec.plan_id, markers, as_json, history)
        return exit_codes.OK
    shown = markers if history else markers[-1:]
    if as_json:
        doc: Any = {"plan_id": spec.plan_id, "execution_history": shown} if history else shown[0]
        print(json.dumps(doc, indent=2))
    else:
        for m in shown:
            _print_marker(m)
    return exit_codes.OK
