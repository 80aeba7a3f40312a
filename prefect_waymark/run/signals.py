"""Every catchable terminating signal ends a run on record.

Prefect turns SIGTERM into :class:`~prefect.exceptions.TerminationSignal` inside a flow run, and
the run records its end (``run_finished``, the marker, the views; the step interrupted and its
commands stopped) before the process ends by the signal. SIGHUP (a closed terminal, a dropped
ssh), SIGQUIT, SIGUSR1/2, SIGXCPU, SIGXFSZ and SIGPWR would end the process at once, the step left
``in_progress`` and its command orphaned: :func:`end_on_record` gives them the same path.
SIGALRM, SIGVTALRM and SIGPROF are left alone (timers and profilers use them).
"""

from __future__ import annotations

import signal
import threading
from typing import NoReturn

__all__ = ["TERMINATING", "end_on_record"]

#: The terminating signals a run takes like SIGTERM (those this platform has).
TERMINATING: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name)
    for name in ("SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGXCPU", "SIGXFSZ", "SIGPWR")
    if hasattr(signal, name)
)


def _terminate(signum: int, _frame: object) -> NoReturn:
    from prefect.exceptions import TerminationSignal

    raise TerminationSignal(signal=signum)


def end_on_record() -> None:
    """Route :data:`TERMINATING` to the run's SIGTERM path (main thread only; a signal someone
    ignores on purpose — ``nohup`` ignores SIGHUP — stays ignored)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in TERMINATING:
        if signal.getsignal(sig) == signal.SIG_IGN:
            continue
        signal.signal(sig, _terminate)
