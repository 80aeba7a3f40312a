"""How a ``plan:`` step hands its ledger to the sub-plan's subflow without a password in the
subflow's parameters (Prefect stores a flow run's parameters; its API and UI show them).

A URL without a password is passed as the ``ledger_url`` parameter. One with a password is left
in this process (the subflow runs in the process of the step that calls it), under a token the
parent link names; the subflow takes it from there.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..ledger.urls import has_password

__all__ = ["handed_ledger", "ledger_for_subflow"]

_HANDED: dict[str, str] = {}
_LOCK = threading.Lock()
TOKEN_KEY = "ledger_token"


@contextmanager
def ledger_for_subflow(url: str, link: dict[str, Any]) -> Iterator[str | None]:
    """The ``ledger_url`` parameter to call the subflow with (None when the URL holds a
    password: ``link`` then carries a token for :func:`handed_ledger`) while the call lasts."""
    if not has_password(url):
        yield url
        return
    token = uuid.uuid4().hex
    with _LOCK:
        _HANDED[token] = url
    link[TOKEN_KEY] = token
    try:
        yield None
    finally:
        with _LOCK:
            _HANDED.pop(token, None)


def handed_ledger(subplan_of: dict[str, Any] | None) -> str | None:
    """The ledger URL a parent step handed over in this process, if any."""
    token = (subplan_of or {}).get(TOKEN_KEY)
    if not token:
        return None
    with _LOCK:
        return _HANDED.get(str(token))
