"""Before a run or check-in records anything: this folder can reach what the plan's completed
steps left — their persisted results and declared outputs — or it is refused.

A plan whose ledger is shared is continued from several folders (two checkouts, two machines,
an agent's worktree). A completed step made in *another* folder left its result and outputs
there, or in the result storage that run used. Here:

1. each such step's declared outputs missing from this folder are restored from the result
   storage (content-addressed, hash checked: results/outputs.py);
2. each such step's persisted result must be in the storage this run reads (a local folder is
   probed; a remote one is read when a step needs the value);
3. whatever is still out of reach refuses the run or check-in with
   :class:`~prefect_waymark.errors.ResultsUnavailable` (exit 2): which steps, which storage,
   and the one line that fixes it — before anything is recorded. This folder's missing files
   never become review stops on the shared plan.

Steps completed in *this* folder are left to the run's guards as before (guards/completed.py,
guards/outputs.py): a result or output lost where it was made is the plan's loss, a stop for
review. Where a step was made is its ``step_completed`` event's ``workdir`` (recorded by check-ins
and, since the result storage can be pinned, by flow runs); for an older record the
``run_started`` of the run that completed it says — read only when a cheap look (files here, a
local storage folder) finds something missing, so a run's cost does not grow with its history.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ResultsUnavailable

if TYPE_CHECKING:
    from ..ledger import LedgerReader
    from ..ledger.step_state import StepState
    from ..plan.spec import PlanSpec
    from ..results.storage import ResultAccess, StorageSpec

__all__ = ["Unreached", "check_reach"]

ABSENT = "absent"  # guards/output_hashes.py's mark of an output missing at completion


@dataclass
class Unreached:
    """What one completed step left that this folder cannot reach."""

    step: str
    made_in: str
    #: The persisted result's key, when it is out of reach.
    result: str | None = None
    #: The declared outputs out of reach: path -> recorded sha256.
    outputs: dict[str, str] = field(default_factory=dict)


def _elsewhere(
    states: dict[str, StepState],
    ledger: LedgerReader,
    plan_id: str,
    workdir: Path,
    storage: StorageSpec | None,
) -> dict[str, str]:
    """Completed steps made in another folder than ``workdir``: step -> that folder."""
    here = str(workdir.resolve())
    made: dict[str, str] = {}
    unknown: dict[str, str | None] = {}
    for sid, st in states.items():
        if st.status != "completed" or st.skipped is not None:
            continue
        if not st.result_key and not st.outputs:
            continue
        if st.workdir is None:
            if _lacks(st, workdir, storage):  # only then is it worth asking where it was made
                unknown[sid] = st.run_id
        elif st.workdir != here:
            made[sid] = st.workdir
    if unknown:  # older records: the run that completed the step says where it ran
        wanted = sorted({r for r in unknown.values() if r})  # those runs only, by run id
        runs = {
            e.run_id: e.data.get("workdir")
            for e in ledger.events(plan_id, kinds=["run_started"], run_ids=wanted)
        }
        for sid, run_id in unknown.items():
            where = runs.get(run_id) if run_id else None
            if where and where != here:
                made[sid] = str(where)
    return made


def _lacks(st: StepState, workdir: Path, storage: StorageSpec | None) -> bool:
    """A cheap look (no Prefect, no read): an output missing here, or the result missing from
    a local storage folder."""
    if any(h != ABSENT and not (workdir / p).exists() for p, h in st.outputs.items()):
        return True
    if not st.result_key or not (storage is None or isinstance(storage, (str, Path))):
        return False
    if storage is None:
        folder = workdir / ".waymark" / "results"
    elif str(storage).startswith("/"):
        folder = Path(storage)
    else:
        return False  # a block slug: read when a step needs the value
    return not (folder / st.result_key).exists()


def check_reach(
    spec: PlanSpec,
    ledger: LedgerReader,
    workdir: Path,
    storage: StorageSpec | None,
    *,
    results: bool,
    fix: Callable[[str, str], str],
    prepare: Callable[[], object] | None = None,
) -> list[tuple[str, str, str]]:
    """Restore what completed steps made elsewhere left missing here; raise
    :class:`ResultsUnavailable` naming what cannot be reached. ``results``: persisted results
    count too (a flow run reads them; a check-in needs only outputs). ``fix(flag, value)``: the
    command line that retries with ``--results VALUE`` or ``--workdir VALUE``. ``prepare``:
    called before Prefect is imported (points it at a server). Returns the outputs restored, as
    (step, path, sha256)."""
    states = ledger.step_states(spec.plan_id)
    made = _elsewhere(states, ledger, spec.plan_id, workdir, storage)
    if not made:
        return []
    if prepare is not None:
        prepare()  # Prefect is pointed at its server before it is imported (a block slug)
    try:
        access = _access(storage, workdir)
    except Exception as exc:  # noqa: BLE001 - no such block, not a file system, no server
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise ResultsUnavailable(
            f"the result storage {storage} cannot be read ({type(exc).__name__}: {first}); "
            "nothing was recorded",
            sorted(made),
        ) from None
    restored: list[tuple[str, str, str]] = []
    missing: list[Unreached] = []
    mutable = {s.id: set(s.mutable_outputs) for s in spec.steps}
    for sid in [s.id for s in spec.steps if s.id in made]:
        st = states[sid]
        gone = Unreached(sid, made[sid])
        if results and st.result_key and access.known_missing(st.result_key):
            gone.result = st.result_key
        for rel, sha in sorted(st.outputs.items()):
            if sha == ABSENT or rel in mutable.get(sid, set()) or (workdir / rel).exists():
                continue
            if access.outputs is not None and access.outputs.restore(workdir, rel, sha):
                restored.append((sid, rel, sha))
                continue
            gone.outputs[rel] = sha
        if gone.result or gone.outputs:
            missing.append(gone)
    if missing:
        message = _message(spec, workdir, storage, missing, fix)
        raise ResultsUnavailable(message, [m.step for m in missing])
    return restored


def _access(storage: StorageSpec | None, workdir: Path) -> ResultAccess:
    from ..results.storage import ResultAccess, as_storage

    if storage is None:  # this folder's own (not created here: nothing is written yet)
        return ResultAccess(workdir / ".waymark" / "results")
    spec = as_storage(storage)
    return ResultAccess(spec, keep_outputs=True)


def _message(
    spec: PlanSpec,
    workdir: Path,
    storage: StorageSpec | None,
    missing: list[Unreached],
    fix: Callable[[str, str], str],
) -> str:
    from ..results.storage import describe_storage

    parts = []
    for m in missing:
        what = (["its result"] if m.result else []) + [f"output {p}" for p in m.outputs]
        parts.append(f"{m.step} ({', '.join(what)}; made in {m.made_in})")
    head = (
        f"this folder ({workdir}) cannot reach what completed steps left in another folder: "
        f"{'; '.join(parts)}. They are not here nor in the result storage "
        f"{describe_storage(storage, workdir)}; nothing was recorded (the plan's steps stay "
        "completed)."
    )
    folders = sorted({m.made_in for m in missing if m.made_in})
    theirs = _their_storage(folders, missing)
    if theirs is not None:
        return head + (
            f" Fix: `{fix('--results', theirs)}` — or pin it in {spec.source} beside the "
            f"ledger: `results: {theirs}`"
        )
    if len(folders) == 1 and Path(folders[0]).is_dir():
        return head + (
            f" Fix: work in the folder that has them: `{fix('--workdir', folders[0])}`; and pin "
            f"a result storage every folder reaches in {spec.source} (`results: /SHARED/FOLDER` "
            "or a file-system block's slug) so the next steps' results and outputs are kept there"
        )
    return head + (
        f" Fix: pin the result storage the runs in {', '.join(folders) or 'the other folder'} "
        f"keep their results in, in {spec.source} beside the ledger (`results: /SHARED/FOLDER` "
        "or a file-system block's slug), or give it: "
        f"`{fix('--results', '/SHARED/FOLDER')}`"
    )


def _their_storage(folders: list[str], missing: list[Unreached]) -> str | None:
    """The other folder's own result storage, when it is one folder this machine reads and it
    holds everything out of reach (results by key, outputs by hash)."""
    from ..results.outputs import output_key

    if len(folders) != 1:
        return None
    theirs = Path(folders[0]) / ".waymark" / "results"
    wanted = [m.result for m in missing if m.result]
    wanted += [output_key(sha) for m in missing for sha in m.outputs.values()]
    if not theirs.is_dir() or not all((theirs / key).is_file() for key in wanted):
        return None
    return str(theirs)
