"""A wait for SQLite's write lock is visible, and has a limit.

A writer of a SQLite ledger begins with ``BEGIN IMMEDIATE``: while another process holds the
write lock, SQLite retries for the connection's busy timeout (``$WAYMARK_LEDGER_LOCK_SECONDS``,
default 60), then fails with "database is locked". Inside that call nothing can speak, so each
waiting writer is noted here (two dict operations), and one daemon thread, started with the
first wait, logs a line when a writer has waited :data:`FIRST_NOTICE` seconds and every
:data:`NOTICE_EVERY` after that: a run that waits for a lock says so, and for how long.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import LedgerError

__all__ = ["LOCK_WAIT_ENV", "lock_wait_seconds", "watched"]

#: How long a writer waits for another process's write lock on a SQLite ledger.
LOCK_WAIT_ENV = "WAYMARK_LEDGER_LOCK_SECONDS"
LOCK_WAIT_DEFAULT = 60.0
#: A writer waiting this long is announced; then every :data:`NOTICE_EVERY` seconds.
FIRST_NOTICE = 2.0
NOTICE_EVERY = 10.0

log = logging.getLogger("prefect_waymark.ledger")

_waiting: dict[int, tuple[float, str]] = {}  # thread id -> (since, the ledger's file)
_watcher: threading.Thread | None = None
_start = threading.Lock()


def lock_wait_seconds() -> float:
    """``$WAYMARK_LEDGER_LOCK_SECONDS`` (default 60): above 0, at most a day."""
    raw = os.environ.get(LOCK_WAIT_ENV) or ""
    if not raw:
        return LOCK_WAIT_DEFAULT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= 86400:
        raise LedgerError(
            f"${LOCK_WAIT_ENV}: expected seconds above 0 and at most a day (how long a write "
            f"waits for another process's lock on a SQLite ledger), got {raw[:40]!r}"
        )
    return value


@contextmanager
def watched(where: str) -> Iterator[None]:
    """This thread waits for the write lock of the ledger at ``where`` until the block ends."""
    key = threading.get_ident()
    _waiting[key] = (time.monotonic(), where)
    if _watcher is None or not _watcher.is_alive():
        _start_watcher()
    try:
        yield
    finally:
        del _waiting[key]


def _start_watcher() -> None:
    global _watcher
    with _start:
        if _watcher is None or not _watcher.is_alive():  # a forked child has none running
            _watcher = threading.Thread(target=_watch, name="waymark-lock-wait", daemon=True)
            _watcher.start()


def _watch() -> None:
    told: dict[tuple[int, float], float] = {}  # (thread, since) -> seconds announced
    limit = lock_wait_seconds()
    while True:
        time.sleep(0.5)
        now = time.monotonic()
        current = {(key, since): where for key, (since, where) in list(_waiting.items())}
        for ident in [k for k in told if k not in current]:
            del told[ident]
        for ident, where in current.items():
            waited = now - ident[1]
            last = told.get(ident)
            due = FIRST_NOTICE if last is None else last + NOTICE_EVERY
            if waited >= due:
                told[ident] = waited
                log.warning(
                    "waiting for the ledger %s: another process holds its write lock "
                    "(%.0f s so far; this gives up after %.0f s, $%s)",
                    where,
                    waited,
                    limit,
                    LOCK_WAIT_ENV,
                )
