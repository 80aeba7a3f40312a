"""A run's last artifacts go to Prefect side by side, not one after another.

At a run's end the progress bar, the marker, the steps table, the metrics table and the plan
page are independent requests (~25 ms each here). The caller renders each one in its own thread
(the ledger's connection stays there) and hands over the request only; each is sent from the
run's thread pool (:class:`RunSends`, one per run, waited for as the run ends), through the flow
run's client (one connection pool, shared) with the caller's context (the flow run's ids). A
failed request is logged, never raised: the UI's copy must not fail the run (the ledger holds
the record).

:func:`send_soon` starts a request now and lets the next :func:`send_all` (or
:func:`wait_sent`) wait for it: the progress bar's and the plan page's first versions go out as
the first step runs, the progress bar's last update while the run writes its last records.
Outside a run's :class:`RunSends`, :func:`send_soon` sends at once and :func:`send_all` uses a
pool of its own.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient

__all__ = ["RunSends", "Send", "send_all", "send_soon", "wait_sent"]

Logger = logging.Logger | logging.LoggerAdapter[logging.Logger]

#: More than a run has under way at once (its end's five, the progress bar's, the page's).
_WORKERS = 8


@dataclass(frozen=True)
class Send:
    """One request: ``call(client)``; a failure is logged ``<what>: <error>`` at ``level``, to
    ``logger`` (else the one the sends were given)."""

    what: str
    call: Callable[[SyncPrefectClient], Any]
    level: int = logging.ERROR
    logger: Logger | None = None


class RunSends:
    """The thread pool of one run's sends (a sub-plan's run has its own), this context's from
    its creation as the run starts to :meth:`end` (which waits for every send); or ``with``."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(_WORKERS, thread_name_prefix="waymark-send")
        self.soon: list[Future[None]] = []  # send_soon's, not waited for yet
        self._token = _current.set(self)

    def end(self) -> None:
        _current.reset(self._token)
        self.pool.shutdown(wait=True)

    def __enter__(self) -> RunSends:
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()


_current: contextvars.ContextVar[RunSends | None] = contextvars.ContextVar("waymark_sends")


def _logged(send: Send, client: SyncPrefectClient, logger: Logger) -> Callable[[], None]:
    context = contextvars.copy_context()  # one copy per send: a context is entered once

    def run() -> None:
        try:
            context.run(send.call, client)
        except Exception as exc:  # noqa: BLE001 - the UI's copy must not fail the run
            (send.logger or logger).log(send.level, "%s: %s", send.what, exc)

    return run


def _client() -> SyncPrefectClient:
    from prefect.client.orchestration import get_client

    return get_client(sync_client=True)  # in a flow run: its client, started already


def send_soon(send: Send, logger: Logger) -> Future[None]:
    """Start ``send`` now; the next :func:`send_all` or :func:`wait_sent` waits for it (or the
    future returned, sooner). Outside a run's :class:`RunSends`: sent before this returns."""
    call = _logged(send, _client(), logger)
    sends = _current.get(None)
    if sends is None:
        done: Future[None] = Future()
        call()
        done.set_result(None)
        return done
    future = sends.pool.submit(call)
    sends.soon.append(future)
    return future


def wait_sent() -> None:
    """Wait for the sends :func:`send_soon` started in this run."""
    sends = _current.get(None)
    if sends is not None:
        started, sends.soon = sends.soon, []
        wait(started)


def send_all(
    sends: Sequence[Send], logger: Logger, meanwhile: Callable[[], Any] | None = None
) -> None:
    """Send the requests side by side (``meanwhile``, if given, runs in this thread as they
    go); return when all (and the sends started with :func:`send_soon`) are done. Failures are
    logged."""
    if not sends:
        if meanwhile is not None:
            meanwhile()
        wait_sent()
        return
    run = _current.get(None)
    scope = contextlib.nullcontext(run) if run is not None else RunSends()
    with scope as own, _client() as client:  # outside a flow run: one client, closed after
        futures = [own.pool.submit(_logged(send, client, logger)) for send in sends]
        try:
            if meanwhile is not None:
                meanwhile()
        finally:
            wait(futures)
            wait_sent()
