"""A run's last artifacts go to Prefect side by side, not one after another.

At a run's end the progress bar, the marker, the steps table, the metrics table and the plan
page are independent requests (~25 ms each here). The caller renders each one in its own thread
(the ledger's connection stays there) and hands over the request only; each is sent from a
thread of its own, through the flow run's client (one connection pool, shared) with the
caller's context (the flow run's ids). A failed request is logged, never raised: the UI's copy
must not fail the run (the ledger holds the record).

:func:`send_soon` starts a request now and lets the next :func:`send_all` (or
:func:`wait_sent`) wait for it: the progress bar's and the plan page's first versions go out as
the first step runs, the progress bar's last update while the run writes its last records.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient

__all__ = ["Send", "send_all", "send_soon", "wait_sent"]

Logger = logging.Logger | logging.LoggerAdapter[logging.Logger]

#: Sends started by :func:`send_soon` and not waited for yet.
_pending: list[threading.Thread] = []
_pending_lock = threading.Lock()


@dataclass(frozen=True)
class Send:
    """One request: ``call(client)``; a failure is logged ``<what>: <error>`` at ``level``, to
    ``logger`` (else the one the sends were given)."""

    what: str
    call: Callable[[SyncPrefectClient], Any]
    level: int = logging.ERROR
    logger: Logger | None = None


def _start(send: Send, client: SyncPrefectClient, logger: Logger) -> threading.Thread:
    context = contextvars.copy_context()  # one copy per thread: a context is entered once

    def run() -> None:
        try:
            context.run(send.call, client)
        except Exception as exc:  # noqa: BLE001 - the UI's copy must not fail the run
            (send.logger or logger).log(send.level, "%s: %s", send.what, exc)

    thread = threading.Thread(target=run, name="waymark-send", daemon=True)
    thread.start()
    return thread


def _client() -> SyncPrefectClient:
    from prefect.client.orchestration import get_client

    return get_client(sync_client=True)  # in a flow run: its client, started already


def send_soon(send: Send, logger: Logger) -> threading.Thread:
    """Start ``send`` now; the next :func:`send_all` or :func:`wait_sent` waits for it (join
    the thread returned to wait for it sooner)."""
    thread = _start(send, _client(), logger)
    with _pending_lock:
        _pending.append(thread)
    return thread


def wait_sent() -> None:
    """Wait for the sends :func:`send_soon` started."""
    with _pending_lock:
        threads = list(_pending)
        _pending.clear()
    for thread in threads:
        thread.join()


def send_all(
    sends: Sequence[Send], logger: Logger, meanwhile: Callable[[], Any] | None = None
) -> None:
    """Send each request from a thread of its own (``meanwhile``, if given, runs in this
    thread as they go); return when all (and the sends started with :func:`send_soon`) are
    done. Failures are logged."""
    if not sends:
        if meanwhile is not None:
            meanwhile()
        wait_sent()
        return
    with _client() as client:  # outside a flow run: one client for these, closed after
        threads = [_start(send, client, logger) for send in sends]
        try:
            if meanwhile is not None:
                meanwhile()
        finally:
            for thread in threads:
                thread.join()
            wait_sent()
