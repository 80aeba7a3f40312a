"""Publishing the plan page (its Markdown: :mod:`.render`) to Prefect while a run goes on.

Each run keeps **one version** of the page (key ``waymark-<plan>-<copy>-plan-page``, see
:mod:`prefect_waymark.markers.plan_copy`): created at run start (or at a pause that comes
first), updated in place as steps complete (at most every :attr:`PlanPage.min_interval`
seconds), when the run pauses for review and when the pause is answered, and a last time when
the run ends (:func:`publish_plan_page`, called with the run's markers). So the key's history in
the UI is one version per run, each ending at where that run left the plan. Once the version
exists, the flow run's log links it (:func:`_say_where`): one click from the flow run's page.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from ...guards.observers import RunObserver
from ..plan_copy import (
    PlanCopy,
    artifact_url,
    is_page_key,
    plan_copy,
    ui_base_url,
    ui_pages,
    version_url,
)

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient

    from ...guards.base import GuardContext
    from ...ledger.base import Ledger
    from ...ledger.progress_view import PlanView
    from ...ledger.step_state import StepState
    from ...models import GoalContract
    from ...plan.spec import PlanSpec, StepSpec
    from ...review.gate import ReviewGate

__all__ = ["PlanPage", "PlanPagePublisher", "created_page", "publish_plan_page"]

_log = logging.getLogger("prefect_waymark.markers")

#: The plan page versions flow runs of this process created: (flow run id, key) -> artifact
#: id, the latest ``_KEEP``. ``waymark run`` prints the page's link from here, without asking
#: the server.
_CREATED: dict[tuple[str, str], str] = {}
_KEEP = 64


_CREATED_LOCK = threading.Lock()  # flow runs in threads of one process (a worker, serve)


def created_page(flow_run_id: str, plan_id: str) -> tuple[str, str] | None:
    """(artifact id, key) of the plan's page version the flow run created in this process."""
    with _CREATED_LOCK:
        found = list(_CREATED.items())
    for (run, key), artifact_id in reversed(found):
        if run == flow_run_id and is_page_key(key, plan_id):
            return artifact_id, key
    return None


def _remember(flow_run_id: str, key: str, artifact_id: str) -> None:
    with _CREATED_LOCK:
        _CREATED.pop((flow_run_id, key), None)  # the newest last
        _CREATED[(flow_run_id, key)] = artifact_id
        while len(_CREATED) > _KEEP:  # a worker's long-lived process: the oldest go
            del _CREATED[next(iter(_CREATED))]


def _contract(plan: PlanSpec) -> GoalContract | None:
    from ...guards.sources import load_contract

    try:
        loaded = load_contract(plan)
    except Exception as exc:  # noqa: BLE001 - the page says less, the run goes on
        _log.warning("plan page: the goal contract cannot be read: %s", exc)
        return None
    return loaded[0] if loaded else None


class PlanPagePublisher:
    """Renders the page from the ledger and sends this run's version of it."""

    def __init__(self, plan: PlanSpec, ledger: Ledger, workdir: Path | str, run_id: str) -> None:
        self.plan = plan
        self.ledger = ledger
        self.run_id = run_id
        self.copy: PlanCopy = plan_copy(plan.plan_id, ledger, str(workdir))
        self.artifact_id: UUID | None = None
        self._creating: Future[None] | None = None  # publish(soon=True) under way
        self._contract: GoalContract | None = None
        self._contract_read = False
        #: The plan in one line as the last :meth:`render` said it.
        self.line = ""

    def forget_contract(self) -> None:
        """Read the goal contract again for the next version (the run's last one)."""
        self._contract_read = False

    def contract(self) -> GoalContract | None:
        if not self._contract_read:
            self._contract, self._contract_read = _contract(self.plan), True
        return self._contract

    def render(
        self,
        *,
        live: bool,
        states: Mapping[str, StepState] | None = None,
        view: PlanView | None = None,
        ui_url: str | None = None,
        checkin: str | None = None,
    ) -> tuple[str, str]:
        """The page's Markdown and its one-line description, from the ledger now (``view``: the
        view of the ``states`` given, if the caller built it; ``ui_url``: the UI's address, if
        the caller knows it — else Prefect's settings say it; ``checkin``: the check-in that
        publishes this version, in words). The description starts with "Plan page": the card
        a person looks for among a run's artifacts."""
        from ...ledger.events import EventKind
        from ...ledger.run_hashes import light_events
        from ...models import utcnow
        from .render import PAGE_EVENT_KINDS, PAGE_RUNS_READ, PageInput, page_line, render_plan_page

        plan_id = self.plan.plan_id
        if states is None:
            states, view = self.ledger.step_states(plan_id), None
        # The events of the newest runs only, without their step hashes: what the page shows
        # (its last runs, an open pause, the last answers) does not grow with the history.
        starts = light_events(self.ledger, plan_id, [EventKind.run_started], last=PAGE_RUNS_READ)
        after = (starts[0].seq or 1) - 1 if starts else 0
        events = light_events(self.ledger, plan_id, PAGE_EVENT_KINDS, after_seq=after)
        abort = [EventKind.plan_aborted, EventKind.plan_abort_lifted]
        if after and (older := self.ledger.last_event(plan_id, abort)) is not None:
            if (older.seq or 0) <= after:  # an abort (or its lifting) before the window
                events.insert(0, older)
        page = PageInput(
            plan=self.plan,
            states=states,
            events=events,
            copy=self.copy,
            now=utcnow(),
            contract=self.contract(),
            ui_url=ui_url or ui_base_url(),
            live_run=self.run_id if live else None,
            known_view=view,
            checkin=checkin,
        )
        line = self.line = page_line(page)
        by = f"check-in: {checkin} · " if checkin else ""
        return render_plan_page(page), f"Plan page · {by}{line} — {self.copy.label}"

    def publish(
        self,
        *,
        live: bool,
        states: Mapping[str, StepState] | None = None,
        find: bool = False,
        view: PlanView | None = None,
        soon: bool = False,
    ) -> None:
        """Create this run's version, or update it in place (``find``: look for a version this
        flow run made before, e.g. at the run's end); problems are logged, not raised.
        ``soon``: a version to create is sent from another thread (the run goes on meanwhile;
        the next publish, or :meth:`created`, waits for it)."""
        try:
            self.created()
            markdown, description = self.render(live=live, states=states, view=view)
            if self.artifact_id is None and find:
                self.artifact_id = _find_version(self.copy.page_key())
            if self.artifact_id is None and soon:
                self._create_soon(markdown, description)
            elif self.artifact_id is None:
                self.artifact_id = _create(self.copy.page_key(), markdown, description, self.copy)
            else:
                _update(self.artifact_id, markdown, description)
        except Exception as exc:  # noqa: BLE001 - the UI's page must not stop a run
            _log.warning("plan page not published: %s", exc)

    def _create_soon(self, markdown: str, description: str) -> None:
        from ..concurrent_sends import Send, send_soon

        key, copy = self.copy.page_key(), self.copy

        def create(client: SyncPrefectClient) -> None:
            self.artifact_id = _create(key, markdown, description, copy, client)

        send = Send("plan page not published", create, logging.WARNING, _log)
        self._creating = send_soon(send, _log)

    def created(self) -> None:
        """Wait for this run's version to be created, if that is under way."""
        if self._creating is not None:
            self._creating.result()
            self._creating = None


def _create(
    key: str,
    markdown: str,
    description: str,
    copy: PlanCopy,
    client: SyncPrefectClient | None = None,
) -> UUID:
    """Create the version (through ``client`` if given, else a client of its own)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import ArtifactCreate
    from prefect.utilities.context import get_task_and_flow_run_ids

    task_run_id, flow_run_id = get_task_and_flow_run_ids()
    artifact = ArtifactCreate(
        key=key,
        type="markdown",
        description=description,
        data=markdown,
        metadata_=copy.metadata(),
        flow_run_id=flow_run_id,
        task_run_id=task_run_id,
    )
    if client is not None:
        made = client.create_artifact(artifact=artifact)
    else:
        with get_client(sync_client=True) as own:
            made = own.create_artifact(artifact=artifact)
    if flow_run_id is not None:
        _remember(str(flow_run_id), key, str(made.id))
        _say_where(made.id)
    return made.id


def _say_where(artifact_id: UUID) -> None:
    """The flow run's log says where its plan page is, as soon as the page exists: the UI
    shows an address in a log line as a link, and the flow run's page opens on its logs — so
    the plan page is one click from the flow run. (Prefect's run header, state message and
    artifacts tab are all two clicks or more; the run graph draws no link.) Runs in the flow
    run's context (the send's copy of it): a check-in has none and logs nothing."""
    from prefect.exceptions import MissingContextError
    from prefect.logging import get_run_logger

    url = version_url(ui_base_url(), str(artifact_id))
    if url is None:
        return
    try:
        logger = get_run_logger()
    except MissingContextError:
        return
    logger.info("plan page — where the plan stands, with its graph: %s", url)


def _update(artifact_id: UUID, markdown: str, description: str) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import ArtifactUpdate

    with get_client(sync_client=True) as client:
        client.update_artifact(artifact_id, ArtifactUpdate(data=markdown, description=description))


def _find_version(key: str) -> UUID | None:
    """This flow run's version of ``key``, if it made one (e.g. before the run's end)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        ArtifactFilterKey,
    )
    from prefect.client.schemas.sorting import ArtifactSort
    from prefect.utilities.context import get_task_and_flow_run_ids

    _, flow_run_id = get_task_and_flow_run_ids()
    if flow_run_id is None:
        return None
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=[key]),
                flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]),
            ),
            sort=ArtifactSort.CREATED_DESC,
            limit=1,
        )
    return found[0].id if found else None


def publish_plan_page(
    plan: PlanSpec,
    ledger: Ledger,
    workdir: Path | str,
    run_id: str,
    states: Mapping[str, StepState] | None = None,
    view: PlanView | None = None,
) -> None:
    """The run's last version of the page (at its end: the run is over, ``live`` is off)."""
    PlanPagePublisher(plan, ledger, workdir, run_id).publish(
        live=False, states=states, find=True, view=view
    )


class PlanPage(RunObserver):
    """Keeps the run's version of the plan page current; registered with the review gate so a
    pause (also one at run start, before the steps start) shows on the page at once."""

    #: Each update renders the page from the ledger (~40 ms for 1,000 steps) and is an API call:
    #: at most one per this many seconds as steps complete.
    min_interval = 5.0

    def __init__(self, gate: ReviewGate, workdir: Path) -> None:
        self.publisher = PlanPagePublisher(gate.plan, gate.ledger, workdir, gate.run_id)
        self._sent_at = 0.0
        self._dirty = False
        self._failure_shown = False
        gate.on_pause.append(self._now)
        gate.on_answer.append(self._now)
        base = ui_base_url()  # in the UI the server serves by default, as the run's links
        pages = ui_pages(base) if base else None
        gate.page_url = artifact_url(pages, self.publisher.copy.page_key())

    def _now(self, *_: Any) -> None:
        self.publisher.publish(live=True)
        self._sent_at, self._dirty = time.monotonic(), False

    def run_started(self, ctx: GuardContext) -> None:
        """The run's version, created from another thread as the first step starts."""
        self.publisher.publish(live=True, states=ctx.states, view=ctx.view, soon=True)
        self._sent_at = time.monotonic()

    def step_completed(self, ctx: GuardContext, step: StepSpec) -> None:
        self._dirty = True
        if time.monotonic() - self._sent_at >= self.min_interval:
            self._now()

    def step_failed(self, ctx: GuardContext, step: StepSpec, error: str) -> None:
        """The run's first failure shows at once, with its error (the page a person opens
        first); later ones as completions do, at most every ``min_interval`` seconds."""
        if not self._failure_shown:
            self._failure_shown = True
            self._now()
        else:
            self.step_completed(ctx, step)

    def run_ended(self, ctx: GuardContext) -> None:
        """Nothing: the run's markers publish the last version right after
        (:func:`publish_plan_page`)."""
        return None
