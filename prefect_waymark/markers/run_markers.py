"""Everything a run leaves behind when it ends, in the seed's order: TASKS.md statuses, what was
verified in IMPLEMENTATION_LOG.md, the marker (ledger event, EXECUTION_MARKER.json, Prefect
artifact), and "Latest execution record" in STATE.md; then the plan page's last version."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..ledger import Ledger
from ..ledger.events import EventKind, ProgressEvent
from ..ledger.progress_view import PlanView, build_view
from ..ledger.step_state import StepState
from ..plan.spec import PlanSpec
from ..text.controls import visible
from .concurrent_sends import wait_sent
from .generated_files import MarkerFileError, atomic_write, check_writable
from .human_views import implementation_log_md, state_md, tasks_md
from .marker_file import (
    MARKER_ENTRIES,
    MARKER_FILE,
    read_marker_file,
    verify_marker_file,
    write_marker_file,
)
from .marker_record import build_marker, marker_history

if TYPE_CHECKING:
    from .concurrent_sends import Send
    from .plan_page.publish import PlanPagePublisher

__all__ = [
    "VIEW_FILES",
    "markers_folder",
    "preflight_markers",
    "rebuild_marker_files",
    "write_views",
    "write_run_markers",
]

VIEW_FILES = ("TASKS.md", "IMPLEMENTATION_LOG.md", MARKER_FILE, "STATE.md")


def markers_folder(plan: PlanSpec, workdir: Path, markers_dir: str | Path | None) -> Path:
    """The workdir — beside the plan file unless ``--workdir`` moved it, so each workdir (and
    its ledger) keeps its own markers; ``markers_dir`` overrides it."""
    if markers_dir is not None:
        return Path(markers_dir).resolve()
    return workdir.resolve()


def preflight_markers(plan: PlanSpec, ledger: Ledger | None, folder: Path) -> None:
    """Refuse before anything runs if a target file is someone else's or a corrupt marker."""
    check_writable([folder / name for name in VIEW_FILES])
    # The ledger's newest markers, twice what the file keeps: a file lags them only by runs a
    # crash cut off before their file write.
    window = 2 * MARKER_ENTRIES
    history = marker_history(ledger, plan.plan_id, last=window) if ledger is not None else []
    verify_marker_file(
        folder / MARKER_FILE, plan.plan_id, history, ledger=ledger, plan_file=plan.source
    )


def _write_views(plan: PlanSpec, ledger: Ledger, folder: Path, view: PlanView | None) -> None:
    from ..ledger.plan_close import read_closed

    history = marker_history(ledger, plan.plan_id, last=MARKER_ENTRIES)  # what the file keeps
    closed = read_closed(ledger, plan.plan_id)  # `waymark close`: the views say nothing is next
    if view is None:
        view = build_view(plan, ledger.step_states(plan.plan_id))
    # Text from the plan, a step or an executor may hold control characters: a `cat` of a view
    # must not clear the screen, so they are written as escapes (text/controls.py).
    atomic_write(folder / "TASKS.md", visible(tasks_md(plan, view, closed)))
    log = implementation_log_md(plan, history, view, capped=len(history) == MARKER_ENTRIES)
    atomic_write(folder / "IMPLEMENTATION_LOG.md", visible(log))
    write_marker_file(folder / MARKER_FILE, plan.plan_id, history, closed)
    last = history[-1] if history else None
    atomic_write(folder / "STATE.md", visible(state_md(plan, view, last, closed)))


def write_views(plan: PlanSpec, ledger: Ledger, folder: Path) -> None:
    """Rewrite the views (TASKS.md, STATE.md, IMPLEMENTATION_LOG.md, EXECUTION_MARKER.json) from
    the ledger between runs — after a check-in; refuses files someone else wrote."""
    check_writable([folder / name for name in VIEW_FILES])
    _write_views(plan, ledger, folder, None)


def write_run_markers(
    plan: PlanSpec,
    ledger: Ledger,
    summary: dict[str, Any],
    folder: Path,
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger],
    *,
    artifacts: bool = True,
    states: Mapping[str, StepState] | None = None,
    view: PlanView | None = None,
    page: PlanPagePublisher | None = None,
) -> dict[str, Any]:
    """Record and write this run's marker; return it. File problems are logged, not raised:
    the ledger event is the record of truth and the files can be rebuilt from it.

    ``states`` and ``view`` are the step states the run read at its end and their view; without
    them both are read here. ``page``: the run's plan page publisher, which updates the version
    it created at run start (else the version is looked up, or created)."""
    if states is None:
        states = ledger.step_states(plan.plan_id)
    if view is None:
        view = build_view(plan, dict(states))
    marker = build_marker(
        plan, ledger, summary, marker_file=str(folder / MARKER_FILE), states=states
    )
    ledger.append(
        ProgressEvent(
            plan_id=plan.plan_id,
            kind=EventKind.marker_written,
            run_id=marker["run_id"],
            data=marker,
        )
    )
    written = False

    def files() -> None:
        nonlocal written
        if written:
            return
        written = True
        try:
            check_writable([folder / name for name in VIEW_FILES])
            _write_views(plan, ledger, folder, view)
        except (MarkerFileError, OSError) as exc:
            logger.error("marker files not written: %s", exc)

    try:
        if artifacts:  # the files are written while the artifacts are on their way
            _publish(plan, ledger, summary, marker, view, states, page, logger, files)
        else:
            wait_sent()
    finally:
        files()  # if the artifacts' part did not get to them
    return marker


def _publish(
    plan: PlanSpec,
    ledger: Ledger,
    summary: dict[str, Any],
    marker: dict[str, Any],
    view: PlanView,
    states: Mapping[str, StepState],
    page: PlanPagePublisher | None,
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger],
    files: Callable[[], None],
) -> None:
    """The run's artifacts — the marker, the steps table, the metrics table, the plan page's
    last version (where the run left the plan) — rendered here from the ledger, then sent side
    by side (:mod:`.concurrent_sends`) while ``files()`` writes the run's files in this thread;
    a failure is logged, as it always was."""
    from .artifacts import run_artifact_sends
    from .concurrent_sends import send_all

    sends = []
    try:
        sends += run_artifact_sends(marker, view, ledger, states)
    except Exception as exc:  # noqa: BLE001 - the UI copy must not fail the run
        logger.error("marker artifacts not published: %s", exc)
    if summary.get("metrics"):  # the plan's metrics as a table (markers/metrics_artifact.py)
        from .metrics_artifact import metrics_table_send

        if (send := metrics_table_send(summary["metrics"], marker, ledger, logger)) is not None:
            sends.append(send)
    meanwhile: Callable[[], Any] = files
    if page is not None:
        page.forget_contract()  # a step or an answer may have changed it meanwhile
        page.created()  # its creation at run start, if still under way
        if page.artifact_id is not None:  # the version this run created: updated in place
            if (send := _page_update(page, states, view)) is not None:
                sends.append(send)
        else:  # not created at run start: looked up, or created, as the others go
            meanwhile = _then(
                files, partial(page.publish, live=False, states=states, find=True, view=view)
            )
    else:
        from .plan_page.publish import publish_plan_page

        meanwhile = _then(
            files,
            partial(
                publish_plan_page, plan, ledger, marker["workdir"], marker["run_id"], states, view
            ),
        )
    send_all(sends, logger, meanwhile)


def _then(first: Callable[[], Any], second: Callable[[], Any]) -> Callable[[], None]:
    def both() -> None:
        first()
        second()

    return both


def _page_update(
    page: PlanPagePublisher, states: Mapping[str, StepState], view: PlanView
) -> Send | None:
    """The update of the run's version of the plan page, rendered here; None (logged) if it
    cannot be rendered. Logged as :mod:`.plan_page.publish` logs it."""
    from prefect.client.schemas.actions import ArtifactUpdate

    from .concurrent_sends import Send

    page_log = logging.getLogger("prefect_waymark.markers")
    artifact_id = page.artifact_id
    assert artifact_id is not None
    try:
        markdown, description = page.render(live=False, states=states, view=view)
    except Exception as exc:  # noqa: BLE001 - the UI's page must not stop a run
        page_log.warning("plan page not published: %s", exc)
        return None
    update = ArtifactUpdate(data=markdown, description=description)
    return Send(
        "plan page not published",
        lambda client: client.update_artifact(artifact_id, update),
        logging.WARNING,
        page_log,
    )


def rebuild_marker_files(plan: PlanSpec, ledger: Ledger, folder: Path) -> int:
    """Rewrite waymark's files from the ledger (after a corrupt or hand-edited marker file).
    Only files waymark wrote are replaced — a truncated or hand-edited marker still starts with
    waymark's first line; a file someone else wrote is refused. Returns the number of runs the
    marker file holds (the newest :data:`MARKER_ENTRIES`)."""
    check_writable([folder / name for name in VIEW_FILES])
    history = marker_history(ledger, plan.plan_id, last=MARKER_ENTRIES)
    if not history:  # a marker file of runs this ledger never saw is not wiped
        try:
            found = read_marker_file(folder / MARKER_FILE)
        except MarkerFileError:
            found = None
        if found and found["execution_history"]:
            verify_marker_file(folder / MARKER_FILE, str(found.get("plan_id")), [])
    _write_views(plan, ledger, folder, None)
    return len(history)
