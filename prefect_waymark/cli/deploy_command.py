"""``waymark deploy`` (a work-pool deployment of a plan), ``waymark serve`` (the same, served
from this process) and ``waymark worker`` (Prefect's worker, on the server ``waymark run``
finds)."""

from __future__ import annotations

import inspect
import os
import shlex
import sys
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Annotated, Any

import typer

from ._common import fail, load_or_exit, workdir_for
from .options import LedgerOpt, MaxStepsOpt, PlanArg, ResultsOpt, WorkdirOpt

__all__ = ["deploy", "serve", "worker", "worker_commands"]

CronOpt = Annotated[
    str | None, typer.Option("--cron", help="Cron schedule, e.g. '0 9 * * 1-5' (weekdays 9:00).")
]
RRuleOpt = Annotated[str | None, typer.Option("--rrule", help="iCal RRULE schedule.")]
IntervalOpt = Annotated[
    float | None, typer.Option("--interval", help="Run every this many seconds.")
]
TimezoneOpt = Annotated[
    str | None, typer.Option("--timezone", help="Time zone of --cron / --rrule (e.g. Asia/Tokyo).")
]
NameOpt = Annotated[
    str | None, typer.Option("--name", help="Deployment name (default: the plan id).")
]
SourceOpt = Annotated[
    str | None,
    typer.Option(
        "--source",
        help="Git URL each run clones afresh (the repository PLAN is in; its root needs the "
        "waymark_flow.py that `waymark init` writes).",
    ),
]
ReviewWaitOpt = Annotated[
    float | None,
    typer.Option(
        "--review-wait",
        help="On a stop for review, a run suspends up to this many seconds for an answer (the "
        "Prefect UI form, or `waymark review`, resumes it) and its worker is free meanwhile; "
        "default: it stops at once.",
    ),
]
AgentWaitOpt = Annotated[
    float | None,
    typer.Option(
        "--agent-wait",
        help="When only agent or manual steps are left to do, a run suspends up to this many "
        "seconds for their check-in (`waymark done` resumes it) and its worker is free "
        "meanwhile; default: it ends at once, waiting for the check-in.",
    ),
]
BranchOpt = Annotated[
    str | None,
    typer.Option("--branch", help="Branch of --source to clone (default: the remote's default)."),
]


@dataclass(frozen=True)
class DeployOptions:
    """The argument and options ``deploy`` and ``serve`` share, declared once:
    :func:`_shared_options` makes each field a parameter of both commands."""

    plan: PlanArg
    cron: CronOpt = None
    rrule: RRuleOpt = None
    interval: IntervalOpt = None
    timezone: TimezoneOpt = None
    max_steps: MaxStepsOpt = None
    name: NameOpt = None
    workdir: WorkdirOpt = None
    ledger: LedgerOpt = None
    results: ResultsOpt = None
    review_wait: ReviewWaitOpt = None
    agent_wait: AgentWaitOpt = None


def _shared_options(command: Callable[..., None]) -> Callable[..., None]:
    """Typer's view of ``command(..., opts: DeployOptions, ...)``: its ``opts`` parameter
    becomes :class:`DeployOptions`' fields, as typer options in the field order; typer's values
    for them reach ``command`` as one ``DeployOptions``."""
    hints = typing.get_type_hints(DeployOptions, include_extras=True)
    required = inspect.Parameter.empty  # typer's mark of a parameter without a default
    shared = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=required if f.default is MISSING else f.default,
            annotation=hints[f.name],
        )
        for f in fields(DeployOptions)
    ]
    params: list[inspect.Parameter] = []
    for p in inspect.signature(command, eval_str=True).parameters.values():
        params += shared if p.name == "opts" else [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)]

    def typer_command(**values: Any) -> None:
        opts = DeployOptions(**{f.name: values.pop(f.name) for f in fields(DeployOptions)})
        command(opts=opts, **values)

    typer_command.__name__ = command.__name__
    typer_command.__doc__ = command.__doc__
    typer_command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    typer_command.__annotations__ = {p.name: p.annotation for p in params}
    return typer_command


def _prepare(
    opts: DeployOptions, source: str | None = None, branch: str | None = None
) -> tuple[Any, str, str]:
    """Check everything a deployment takes (exit 2 on bad input); return the deployment, its
    schedule's description and the Prefect server's.

    The server is chosen as ``waymark run`` chooses it (:func:`configure_prefect`) once the
    options that need no Prefect are checked, and before anything imports Prefect (``flows``
    does): Prefect reads ``PREFECT_API_URL`` as it is imported, and without it would start a
    temporary server of its own for the deployment."""
    from ..errors import LedgerUrlError
    from ..ledger.urls import check_ledger_url, has_password
    from .run_command import configure_prefect

    plan, workdir, ledger, results = opts.plan, opts.workdir, opts.ledger, opts.results
    cron, rrule, interval, timezone = opts.cron, opts.rrule, opts.interval, opts.timezone
    spec = load_or_exit(plan)
    if sum(x is not None for x in (cron, rrule, interval)) > 1:
        fail("--cron, --rrule and --interval exclude each other: give one")
    if interval is not None and not 1 <= interval <= 366 * 86400:
        fail("--interval: expected seconds from 1 to 31,622,400 (a year)")
    if timezone is not None and cron is None and rrule is None:
        fail("--timezone goes with --cron or --rrule")
    if opts.max_steps is not None and opts.max_steps < 1:
        fail("--max-steps: expected a number >= 1")
    if opts.review_wait is not None and not 1 <= opts.review_wait <= 366 * 86400:
        fail("--review-wait: expected seconds from 1 to 31,622,400 (a year)")
    if opts.agent_wait is not None and not 1 <= opts.agent_wait <= 366 * 86400:
        fail("--agent-wait: expected seconds from 1 to 31,622,400 (a year)")
    if timezone is not None:
        import zoneinfo

        try:
            zoneinfo.ZoneInfo(timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            fail(f"--timezone: {timezone[:80]!r} is not an IANA time zone (e.g. Europe/Berlin)")
    if ledger is not None:
        try:
            check_ledger_url(ledger, source="--ledger")
        except LedgerUrlError as exc:
            fail(str(exc))
        if has_password(ledger):
            fail(
                "--ledger: the URL holds a password, which a deployment would show as a "
                "parameter in the Prefect UI; pin the ledger in the plan file instead "
                "(`ledger: {secret: BLOCK-NAME}`, a Prefect Secret block holding the URL)"
            )
    if opts.name is not None and not opts.name.strip():
        fail("--name: expected a deployment name")
    where = configure_prefect()
    from ..flows.deployment import DeploySchedule, build_deployment

    git = _git_source(plan, spec, source, branch, ledger, results, workdir)
    from ..closing.closed import deploy_refusal

    if (closed := deploy_refusal(spec, ledger, workdir_for(spec, workdir))) is not None:
        fail(closed)  # a closed plan runs nothing: nothing is deployed
    wd = workdir_for(spec, workdir) if workdir is not None else None
    schedule = DeploySchedule(cron=cron, rrule=rrule, interval=interval, timezone=timezone)
    try:
        schedule.schedules()  # Prefect checks the expression and the time zone
    except ValueError as exc:
        first = str(exc).strip().splitlines()[0][:200]
        fail(f"schedule: {first}")
    try:
        deployment = build_deployment(
            spec,
            plan.resolve(),
            schedule=schedule,
            name=opts.name,
            workdir=wd,
            max_steps=opts.max_steps,
            ledger_url=ledger,
            result_storage=results,
            source=git,
            review_wait_seconds=opts.review_wait,
            agent_wait_seconds=opts.agent_wait,
        )
    except Exception as exc:  # noqa: BLE001 - only a source is loaded here: say why, in one line
        if git is None:
            raise
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        fail(
            f"--source {source}: cannot load waymark_flow.py:run_plan from a clone of it "
            f"({first}); is waymark_flow.py committed and pushed to that branch?"
        )
    return deployment, schedule.describe(), where


def _git_source(
    plan: Path,
    spec: Any,
    url: str | None,
    branch: str | None,
    ledger: str | None,
    results: str | None,
    workdir: Path | None,
) -> Any:
    """The git source a ``--source`` deployment clones (``None`` without ``--source``); exit 2
    unless the plan is in a git checkout with ``waymark_flow.py`` at its root and its ledger
    lives outside the clone."""
    from urllib.parse import urlparse

    from ..flows.deployment import ENTRY_FILE, GitSource
    from ..ledger.urls import is_relative_sqlite
    from .init_command import git_root

    if url is None:
        if branch is not None:
            fail("--branch goes with --source")
        return None
    if not url.strip():
        fail("--source: expected a git URL")
    parsed = urlparse(url)
    if parsed.password or (parsed.scheme in ("http", "https") and parsed.username):
        fail(
            "--source: the URL holds credentials, which the deployment would show in its pull "
            "step; give it without them (each worker's git finds its own: SSH keys, a "
            "credential helper)"
        )
    if branch is not None and (not branch.strip() or branch.startswith("-")):
        fail(f"--branch: {branch[:80]!r} is not a branch name")
    if workdir is not None:
        fail(
            "--workdir does not go with --source: each run's workdir is the plan's folder in "
            "its clone"
        )
    path = plan.resolve()
    root = git_root(path.parent)
    if root is None:
        fail(
            f"{plan}: not inside a git checkout; --source runs the plan from a clone of its "
            "repository, so the plan file must be in one (its path there is the plan parameter)"
        )
    if not (root / ENTRY_FILE).is_file():
        fail(
            f"{root} has no {ENTRY_FILE} at its root: run `waymark init {root}`, commit and "
            "push it (it is the entrypoint each run loads from the clone)"
        )
    if spec.ledger is None and ledger is None:
        fail(
            f"{plan}: --source starts each run in a fresh clone, so the ledger must live outside "
            "it: pin it in the plan file (ledger: {url: sqlite:////ABSOLUTE/ledger.db} | {env: "
            "VARIABLE} | {secret: BLOCK}) or give --ledger (an absolute SQLite path or a server "
            "URL)"
        )
    if ledger is None and not spec.ledger.required:
        fail(
            f"{plan}: the plan's ledger pin has `required: false`, so a run whose variable or "
            "block is missing would fall back to a new ledger inside its clone and run every "
            "step again; set `required: true` in the plan file's `ledger:` or give --ledger"
        )
    if ledger is not None and is_relative_sqlite(ledger):
        fail(
            "--ledger: a relative SQLite path would be a new ledger in each run's clone; "
            "give an absolute one (sqlite:////ABSOLUTE/PATH/ledger.db) or a server URL"
        )
    rel = path.relative_to(root).as_posix()
    if results is None and spec.results is None:
        warn(
            "no --results and no `results:` in the plan file: each run starts in a fresh clone, "
            "where completed steps' results and declared outputs are missing, so the run after "
            "a step's cannot go on; pin a shared folder or a file-system block (`results:` beside "
            "`ledger:`) or give --results to keep them"
        )
    _warn_uncommitted(root, [rel, ENTRY_FILE])
    return GitSource(url=url, plan=rel, branch=branch)


def warn(message: str) -> None:
    print(f"waymark: warning: {message}", file=sys.stderr)


def _warn_uncommitted(root: Path, paths: list[str]) -> None:
    """Warn if ``paths`` (relative to ``root``) have changes not committed: runs see the
    repository as pushed."""
    import subprocess

    proc = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--", *paths],
        capture_output=True,
        text=True,
        timeout=60,
    )
    changed = sorted({line[3:].strip() for line in proc.stdout.splitlines() if line.strip()})
    if proc.returncode == 0 and changed:
        warn(
            f"not committed in {root}: {', '.join(changed)}; each run clones the repository as "
            "pushed, so commit and push them first"
        )


@_shared_options
def deploy(
    pool: Annotated[str, typer.Option("--pool", help="Work pool the runs go to.")],
    opts: DeployOptions,
    source: SourceOpt = None,
    branch: BranchOpt = None,
) -> None:
    """Create (or update) a work-pool deployment of the plan; print how to start a worker.

    Each run continues where the last stopped; one run at a time (later ones wait their turn).
    A missing work pool is created as a process pool. With --source each run clones the git
    repository afresh and runs the plan from the clone.
    """
    deployment, when, where = _prepare(opts, source, branch)
    if opts.results is not None:  # every scheduled run would crash on it: refuse it now
        from .run_command import storage_problem

        if (problem := storage_problem(opts.results)) is not None:
            fail(f"--results {opts.results}: {problem}; nothing was deployed")
    created_pool = _ensure_pool(pool)
    try:
        deployment_id = deployment.apply(work_pool_name=pool)
    except Exception as exc:  # noqa: BLE001 - the server refused it: say why, in one line
        fail(f"Prefect refused the deployment: {type(exc).__name__}: {exc}", 1)
    full = f"waymark-run-plan/{deployment.name}"
    if created_pool:
        print(f"created work pool {pool!r} (type process)")
    print(f"deployed {full} ({deployment_id}) to work pool {pool!r} on {where}")
    print(f"  schedule: {when}; one run at a time, later runs wait their turn")
    from ..run.prefect_ui import deployment_url

    if (page := deployment_url(deployment_id)) is not None:
        print(f"  deployment page (after each run it says where the plan stands): {page}")
    if opts.review_wait is not None:
        print(
            f"  a stop for review suspends the run up to {opts.review_wait:g} s (its worker is "
            "free); answer in the Prefect UI or with `waymark review`"
        )
    if opts.agent_wait is not None:
        print(
            f"  a run left with agent or manual steps suspends up to {opts.agent_wait:g} s for "
            "their check-in (its worker is free); `waymark done` resumes it"
        )
    if source is not None:
        rel = deployment.parameters["plan"]
        print(f"  each run clones {source}" + (f" (branch {branch})" if branch else ""))
        print(f"  and runs {rel} from the clone")
    where_workers = (
        "any machine with waymark installed that can clone it"
        if source is not None
        else f"any machine that has the plan at {opts.plan.resolve()}"
    )
    for line in worker_commands(pool, where_workers):
        print(line)
    api = shlex.quote(os.environ.get("PREFECT_API_URL", ""))
    print(f"  run it now: PREFECT_API_URL={api} prefect deployment run {shlex.quote(full)}")


def worker_commands(pool: str, machines: str) -> list[str]:
    """The lines ``deploy`` prints about starting a worker: whole commands that work as
    printed, on the server this process chose (``PREFECT_API_URL`` is set by now)."""
    from ..prefect_server.local import find_local_server

    api = os.environ.get("PREFECT_API_URL", "")
    explicit = f"PREFECT_API_URL={shlex.quote(api)} prefect worker start --pool {shlex.quote(pool)}"
    local = find_local_server()
    if local is None or local.api_url.rstrip("/") != api.rstrip("/"):  # a server of the team's
        return [f"  start a worker (on {machines}):", f"    {explicit}"]
    return [  # waymark's local server: 127.0.0.1 only, and its port may change on a restart
        "  start a worker on this machine (it finds the local server as `waymark run` does):",
        f"    waymark worker --pool {shlex.quote(pool)}",
        f"  or, while this server runs: {explicit}",
    ]


def worker(
    pool: Annotated[str, typer.Option("--pool", help="Work pool to take runs from.")],
    limit: Annotated[
        int | None,
        typer.Option("--limit", help="Run at most this many flow runs at once (default: any)."),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="The worker's name.")] = None,
) -> None:
    """Start a Prefect worker (`prefect worker start`) on the server `waymark run` uses:
    PREFECT_API_URL, else the local server (started again if it was stopped). Ctrl-C stops it."""
    import os

    from ..prefect_server.local import prefect_command
    from .run_command import configure_prefect

    if limit is not None and limit < 1:
        fail("--limit: expected a number >= 1")
    where = configure_prefect()
    if not os.environ.get("PREFECT_API_URL"):  # WAYMARK_PREFECT_SERVER=ephemeral
        fail(
            "a worker needs a Prefect server that outlives it, not Prefect's ephemeral one: "
            "unset WAYMARK_PREFECT_SERVER or set PREFECT_API_URL"
        )
    args = [*prefect_command(), "worker", "start", "--pool", pool]  # the pool's type decides
    args += ["--limit", str(limit)] if limit is not None else []
    args += ["--name", name] if name is not None else []
    print(f"waymark: starting a worker on pool {pool!r}, {where}", file=sys.stderr)
    sys.stderr.flush()
    os.execv(args[0], args)  # the worker in this process: Ctrl-C and SIGTERM reach it


def _ensure_pool(pool: str) -> bool:
    """Create ``pool`` as a process work pool unless it exists; True if created."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectNotFound
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def ensure() -> bool:
        async with get_client() as client:
            try:
                await client.read_work_pool(pool)
                return False
            except ObjectNotFound:
                await client.create_work_pool(WorkPoolCreate(name=pool, type="process"))
                return True

    result = run_coro_as_sync(ensure())
    return bool(result)


@_shared_options
def serve(opts: DeployOptions) -> None:
    """Serve a deployment of the plan from this process (no work pool); Ctrl-C stops it."""
    deployment, when, where = _prepare(opts)
    print(f"serving waymark-run-plan/{deployment.name} on {where}: {when} (Ctrl-C stops)")
    from prefect import serve as prefect_serve

    prefect_serve(deployment)
