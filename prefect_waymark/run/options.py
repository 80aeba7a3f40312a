"""What one run of ``run_plan`` goes by: its options, checked once before anything is recorded.

:func:`check_run` is the one place a run's inputs are checked, in this order: the plan (read
and validated), ``until``, the task runner, the wait settings, the ledger URL, every folder the
run writes (run/preflight.py), the ledger's rename and close records for the plan, the marker
files. It returns them as one frozen :class:`RunOptions`, which the flow and everything below it
read. Whoever starts a run calls it, once:

- ``waymark run``, before Prefect starts (``command_line``): a bad input is exit 2 with one line,
  and no flow run; the flow takes the result as its ``options``;
- a ``plan:`` step, for its sub-plan, before the subflow (``run_subplan`` in flows/run_plan.py);
- otherwise the flow itself, with its parameters (a deployment's run, a Python call).

Nothing but the errors at import (no Prefect, no pydantic): the command line imports this
before it points Prefect at a server.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LedgerNotFound, StateRefsBlockError, TaskRunnerError, WaymarkError

if TYPE_CHECKING:
    import logging

    from ..ledger import Ledger
    from ..plan.spec import PlanSpec
    from ..results.storage import StorageSpec

    Logger = logging.Logger | logging.LoggerAdapter[logging.Logger]

__all__ = [
    "AGENT_WAIT_ENV",
    "DASK_INSTALL",
    "LEASE_SECONDS",
    "REVIEW_WAIT_ENV",
    "RunOptions",
    "TASK_RUNNERS",
    "check_run",
    "check_task_runner",
    "load_plan_input",
]

#: The default of ``review_wait_seconds`` when the caller gives none (e.g. for `waymark run`).
REVIEW_WAIT_ENV = "WAYMARK_REVIEW_WAIT_SECONDS"
#: The default of ``agent_wait_seconds``.
AGENT_WAIT_ENV = "WAYMARK_AGENT_WAIT_SECONDS"
#: How long a step's in_progress hold lives without renewal (the scheduler renews its holds
#: every third of it while their steps run).
LEASE_SECONDS = 60.0
#: The task runners a run may name (runners/choice.py makes them).
TASK_RUNNERS = ("threads", "processes", "dask")
DASK_INSTALL = "pip install 'prefect-waymark[dask]'"


def check_task_runner(name: str | None, dask_address: str | None = None) -> None:
    """Raise :class:`TaskRunnerError` for a name that is not a runner, ``dask`` without
    prefect-dask installed, or a Dask address with another runner; nothing is started."""
    if name is None:
        if dask_address:
            raise TaskRunnerError("--dask-address needs --task-runner dask")
        return
    if name not in TASK_RUNNERS:
        raise TaskRunnerError(
            f"--task-runner: unknown task runner {name!r}; expected one of "
            + ", ".join(TASK_RUNNERS)
        )
    if dask_address and name != "dask":
        raise TaskRunnerError(f"--dask-address needs --task-runner dask, not {name!r}")
    if name == "dask" and (
        importlib.util.find_spec("prefect_dask") is None
        or importlib.util.find_spec("distributed") is None
    ):
        raise TaskRunnerError(
            f"--task-runner dask needs prefect-dask and distributed: {DASK_INSTALL}"
        )
    if dask_address is not None and not dask_address.strip():
        raise TaskRunnerError("--dask-address: expected a scheduler address, e.g. tcp://HOST:8786")


@dataclass(frozen=True)
class RunOptions:
    """One run's options as :func:`check_run` checked and resolved them.

    Built once as the run starts; the flow, its scheduler's setup and the run's record read
    them from here. The first fields are the ``run_plan`` parameters of the same names, resolved
    (the workdir, the ledger URL, the markers folder and the wait settings as the run uses them);
    the last three no parameter sets: only waymark itself (and tests) choose them."""

    #: The validated plan.
    spec: PlanSpec
    #: The working folder, absolute.
    workdir: Path
    #: The ledger's URL, resolved (the plan's pin, ``ledger_url``, ``$WAYMARK_LEDGER_URL`` or
    #: the default) and checked.
    ledger_url: str
    #: Where EXECUTION_MARKER.json and the views go, absolute.
    markers_folder: Path
    max_steps: int | None = None
    until: str | None = None
    #: Who runs the plan as given (``None``: the flow names it, ``ledger/identity.py``).
    executor: str | None = None
    result_storage: StorageSpec | None = None
    review_wait_seconds: float = 0.0
    agent_wait_seconds: float = 0.0
    task_runner: str | None = None
    dask_address: str | None = None
    #: How long a step's in_progress hold lives without renewal.
    lease_seconds: float = LEASE_SECONDS
    #: Create the marker, step-table and progress Prefect artifacts.
    publish_artifacts: bool = True
    #: A ``plan:`` step running this plan as its sub-plan: the parent's plan, step and run and
    #: their forbidden list (subplans/run_step.py).
    subplan_of: dict[str, Any] | None = None

    def as_parameter(self) -> Any:
        """These options as ``run_plan``'s ``options`` argument: in Prefect's ``quote``, so the
        flow engine does not walk through the plan looking for futures (1.4 s for a
        10,000-step plan); the flow receives the options themselves."""
        from prefect.utilities.annotations import quote

        return quote(self)

    def record(self) -> dict[str, Any]:
        """What the flow run's parameters keep of them (Prefect's API and UI show a run's
        parameters): what no other parameter says. Never the ledger URL."""
        return {
            "checked": True,
            "lease_seconds": self.lease_seconds,
            "publish_artifacts": self.publish_artifacts,
            "subplan_of": self.subplan_of,
        }


def load_plan_input(
    plan: str | Path | dict[str, Any] | PlanSpec, workdir: str | Path | None
) -> PlanSpec:
    """The validated plan, given as a file path, a plan document or a ``PlanSpec`` (a
    document's sub-plan files are found from ``workdir``)."""
    from ..plan.loader import load_plan, validate_plan_data
    from ..plan.spec import PlanSpec

    if isinstance(plan, PlanSpec):
        return plan
    if isinstance(plan, dict):
        base = Path(workdir) if workdir else Path.cwd()
        return validate_plan_data(plan, source="<plan parameter>", base_dir=base)
    return load_plan(plan)


def check_run(
    plan: str | Path | dict[str, Any] | PlanSpec,
    *,
    workdir: str | Path | None = None,
    ledger_url: str | None = None,
    max_steps: int | None = None,
    until: str | None = None,
    executor: str | None = None,
    result_storage: StorageSpec | None = None,
    markers_dir: str | Path | None = None,
    review_wait_seconds: float | None = None,
    agent_wait_seconds: float | None = None,
    task_runner: str | None = None,
    dask_address: str | None = None,
    lease_seconds: float = LEASE_SECONDS,
    publish_artifacts: bool = True,
    subplan_of: dict[str, Any] | None = None,
    command_line: Callable[[], object] | None = None,
    logger: Logger | None = None,
) -> RunOptions:
    """Check a run's inputs before anything is created or recorded; return its options.

    The arguments are ``run_plan``'s parameters (see there), and three no parameter sets:
    ``lease_seconds``, ``publish_artifacts`` and ``subplan_of``. Raises a
    :class:`~prefect_waymark.errors.WaymarkError` naming the first problem: a bad plan
    (``PlanError``), an unknown ``until`` step, a bad task runner or wait setting, a bad or
    contradicted ledger URL (``LedgerUrlError``), a folder the run cannot write
    (``UnwritablePathError``), a plan renamed away or closed, a marker file that is not
    waymark's (``MarkerFileError``, ``LedgerMismatch``).

    ``command_line``: ``waymark run``'s checks, given its ``configure_prefect``: the messages
    name its flags (``--until``, ``--ledger``), ``--max-steps`` must be at least 1,
    ``--workdir`` must exist, ``--dask-address`` needs ``--task-runner``, and the plan's
    StateRefs block must hold refs that fit their kinds; it is called before a check that asks
    the Prefect server (a pinned ledger's secret block, the StateRefs block). It creates
    nothing; without it (inside Prefect) the ledger is opened as the run opens it, made if new.

    ``logger``: the flow run's own, when the flow checks its parameters itself: a deployment's
    run of a closed plan pauses the deployment's schedules as it refuses it (closing/closed.py).
    """
    from ..ledger.lock_wait import lock_wait_seconds
    from .env_settings import probe_timeout, seconds_from_env

    flags = command_line is not None
    spec = load_plan_input(plan, workdir)
    if until is not None and until not in {s.id for s in spec.steps}:
        if flags:
            raise WaymarkError(f"--until: unknown step {until!r} in {spec.source}")
        raise WaymarkError(f"until: plan {spec.plan_id!r} has no step {until!r}")
    if flags and max_steps is not None and max_steps < 1:
        raise WaymarkError("--max-steps: expected a number >= 1")
    if flags and workdir is not None and not Path(workdir).is_dir():
        raise WaymarkError(f"--workdir {workdir}: no such folder")
    wd = Path(workdir).resolve() if workdir else (spec.base_dir or Path.cwd()).resolve()
    if flags or task_runner is not None:  # the flow takes a lone dask_address as it did
        check_task_runner(task_runner, dask_address)
    from ..plan.results_pin import chosen_storage

    result_storage = chosen_storage(result_storage, spec)  # --results, else the plan's pin
    if review_wait_seconds is None:
        review_wait_seconds = seconds_from_env(REVIEW_WAIT_ENV)
    if agent_wait_seconds is None:
        agent_wait_seconds = seconds_from_env(AGENT_WAIT_ENV)
    probe_timeout()  # a bad value is refused before the run, not at a probe
    lock_wait_seconds()  # ... nor at the ledger's first write
    url, folder = _check_folders(spec, wd, ledger_url, result_storage, markers_dir, command_line)
    reach = _Reach(wd, result_storage, command_line)
    _check_ledger(spec, url, folder, logger, create=command_line is None, reach=reach)
    return RunOptions(
        spec=spec,
        workdir=wd,
        ledger_url=url,
        markers_folder=folder,
        max_steps=max_steps,
        until=until,
        executor=executor,
        result_storage=result_storage,
        review_wait_seconds=review_wait_seconds,
        agent_wait_seconds=agent_wait_seconds,
        task_runner=task_runner,
        dask_address=dask_address,
        lease_seconds=lease_seconds,
        publish_artifacts=publish_artifacts,
        subplan_of=subplan_of,
    )


def _check_folders(
    spec: PlanSpec,
    wd: Path,
    ledger_url: str | None,
    result_storage: StorageSpec | None,
    markers_dir: str | Path | None,
    command_line: Callable[[], object] | None,
) -> tuple[str, Path]:
    """The ledger URL, checked, and the markers folder; every folder the run writes must be
    writable (nothing is created); on the command line, the plan's StateRefs block too."""
    from ..ledger import resolve_ledger_url
    from ..markers import markers_folder
    from .preflight import preflight_paths, results_folder

    if command_line is not None and spec.ledger is not None and spec.ledger.secret is not None:
        command_line()  # the pinned ledger's block is on the Prefect server
    url = resolve_ledger_url(
        ledger_url,
        wd,
        source="ledger_url" if command_line is None else "--ledger",
        pin=spec.ledger,
        pin_source=spec.source,
    )
    folder = markers_folder(spec, wd, markers_dir)
    preflight_paths(ledger_url=url, results=results_folder(result_storage, wd), markers=folder)
    if command_line is not None:
        _check_refs_block(spec, command_line)
    return url, folder


def _check_refs_block(spec: PlanSpec, command_line: Callable[[], object]) -> None:
    """Refuse a StateRefs block whose refs are bad input (a raw secret, fields that do not fit
    their kind): a person must fix the block, no run can. A block that cannot be read now
    (missing, the server is away) is left to the run, which stops for review."""
    from ..errors import RefConfigError
    from ..plan.spec import BlockRef

    if not isinstance(spec.state_refs, BlockRef):
        return
    from ..guards.sources import load_ref_configs

    command_line()
    try:
        load_ref_configs(spec)
    except (StateRefsBlockError, RefConfigError) as exc:
        raise StateRefsBlockError(
            f"{spec.source}: state_refs (block {spec.state_refs.block!r}): {exc}; nothing ran"
        ) from exc
    except Exception:  # noqa: BLE001 - unreadable now: the run records it as a conflict
        return


@dataclass(frozen=True)
class _Reach:
    """What the reach check needs: the workdir, the run's storage, the command line's hook."""

    workdir: Path
    storage: StorageSpec | None
    command_line: Callable[[], object] | None

    def check(self, spec: PlanSpec, led: Ledger, logger: Logger | None) -> None:
        """Refuse the run (``ResultsUnavailable``) if completed steps made in another folder left
        results or outputs this folder cannot reach; restore the outputs it can (run/reach.py)."""
        from ..text.commands import waymark_command
        from .reach import check_reach

        restored = check_reach(
            spec,
            led,
            self.workdir,
            self.storage,
            results=True,
            fix=lambda flag, value: waymark_command("run", spec.source, flag, value),
            prepare=self.command_line,
        )
        for sid, rel, sha in restored:  # said as the run's guard says it (guards/outputs.py)
            line = f"output {rel} of step {sid} restored from the result storage ({sha[:12]})"
            if logger is not None:
                logger.info("%s", line)
            else:
                print(f"waymark: {line}", file=sys.stderr)


def _check_ledger(
    spec: PlanSpec,
    url: str,
    folder: Path,
    logger: Logger | None,
    *,
    create: bool,
    reach: _Reach | None = None,
) -> None:
    """What the ledger says against this run: the plan was renamed away, or closed; the marker
    files are someone else's or name another ledger. Inside Prefect the ledger is opened as the
    run opens it (``create``: a new one is made, and a marker naming another ledger is refused
    by its identity); the command line creates nothing before the run starts (a ledger not
    there yet says nothing)."""
    from ..closing.closed import check_not_closed, refuse_closed_run
    from ..ledger import open_ledger
    from ..ledger.plan_rename import check_not_renamed
    from ..markers import preflight_markers

    led: Ledger | None
    try:
        led = open_ledger(url, create=create)
    except LedgerNotFound:
        led = None
    try:
        if led is not None:
            check_not_renamed(led, spec.plan_id, spec.source)
            if logger is not None:  # the flow's own run: a deployment's schedules pause too
                refuse_closed_run(led, spec, logger)
            else:
                check_not_closed(led, spec.plan_id, spec.source)
            if reach is not None:
                reach.check(spec, led, logger)
        preflight_markers(spec, led, folder)
    finally:
        if led is not None:
            led.close()
