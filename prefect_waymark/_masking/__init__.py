"""Secrets masked before anything is stored or sent: :func:`mask` (text) and :func:`mask_data`
(a JSON-like value) replace every credential they recognise by ``***`` and keep the text around it.

Two kinds of secret are recognised:

1. **Known credential shapes**, from the regex rules of Yelp's ``detect-secrets`` (a maintained
   secret scanner, Apache-2.0), read from its plugins as it ships them (:mod:`.rules`): AWS access
   keys, GitHub, GitLab, Slack, Stripe, npm, PyPI, SendGrid, Twilio, Discord, Telegram, OpenAI,
   Mailchimp, Azure storage and IBM keys, JWTs, private key blocks, a URL's password
   (``scheme://user:PASSWORD@host``) and ``password=…`` / ``api_key: …`` / ``secret = "…"``
   assignments (its keyword rules for configuration files).
2. **This process's own secrets**, given to :func:`remember_secret`: the values of the plan's
   Prefect ``Secret`` blocks and StateRefs credentials as the resolvers read them, and the
   password of the ledger URL a run opens — with their percent-encoded, base64 and JSON-escaped
   forms.

Best effort: a secret of no known shape that this process never read (a token the step made up,
one in an unknown format) is not recognised. Every path that stores or sends text calls one of
these once: the ledger's append (every event's data), a command's captured output, the log
filter on Prefect's run loggers, the flow run's parameters (``ledger_url``).
"""

from __future__ import annotations

import base64
import json
import threading
from functools import lru_cache
from typing import Any
from urllib.parse import quote, quote_plus

__all__ = ["MASK", "mask", "mask_data", "remember_secret", "secret_forms"]

MASK = "***"
_MIN_SHAPE = 8  # no rule matches fewer characters (``://a:b@`` is 7 and masks 1)
_MIN_KNOWN = 4  # a shorter remembered value would mask ordinary words

_known: frozenset[str] = frozenset()
_known_sorted: tuple[str, ...] = ()
_lock = threading.Lock()


def secret_forms(value: str) -> set[str]:
    """``value`` and the forms it takes in a URL, a header or a JSON document: percent-encoded,
    base64 (as basic auth sends it, too) and JSON-escaped; those of at least 3 characters."""
    forms = {
        value,
        quote(value, safe=""),
        quote_plus(value),
        base64.b64encode(value.encode()).decode(),
        json.dumps(value)[1:-1],
    }
    return {f for f in forms if len(f) >= 3}


def remember_secret(value: str | None) -> None:
    """Mask ``value`` (and :func:`secret_forms` of it) in everything this process masks from now
    on. A value shorter than 4 characters is not remembered: it would mask ordinary words."""
    global _known, _known_sorted
    if not value or len(value) < _MIN_KNOWN:
        return
    forms = {f for f in secret_forms(value) if len(f) >= _MIN_KNOWN}
    if forms <= _known:
        return
    with _lock:
        _known = _known | forms
        _known_sorted = tuple(sorted(_known, key=len, reverse=True))


def mask(text: str) -> str:
    """``text`` with each secret it holds replaced by ``***``; the same object when it holds
    none (the common case costs two regex scans)."""
    if len(text) < _MIN_SHAPE and not _known_sorted:
        return text
    out = text
    for value in _known_sorted:  # longest first: a value inside another is masked with it
        if value in out:
            out = out.replace(value, MASK)
    if len(out) >= _MIN_SHAPE:
        out = _shapes_cached(out) if len(out) <= _CACHED_CHARS else _shapes(out)
    return out


def _shapes(text: str) -> str:
    from .rules import mask_shapes

    return mask_shapes(text)


# Events repeat their short strings (hosts, executors, step titles): each is scanned once.
_CACHED_CHARS = 512
_shapes_cached = lru_cache(maxsize=4096)(_shapes)


def mask_data(value: Any) -> Any:
    """``value`` (made of dicts, lists and scalars) with :func:`mask` applied to every string in
    it, keys aside; the same object when nothing was masked."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            masked = mask_data(item)
            changed = changed or masked is not item
            out[key] = masked
        return out if changed else value
    if isinstance(value, list | tuple):
        items = [mask_data(item) for item in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items) if isinstance(value, tuple) else items
    return value
