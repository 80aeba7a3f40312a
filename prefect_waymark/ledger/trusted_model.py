"""Pydantic models built from trusted values, without validation or ``model_construct``'s loop.

The ledger folds every event of a plan into step states (rebuilds, replays) and builds a view of
every step twice per run; their values come from a validated plan and the ledger's own rows.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["trusted_model"]

M = TypeVar("M", bound=BaseModel)

_new_object = object.__new__
_set = object.__setattr__


def trusted_model(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of ``cls`` whose fields are ``values`` (every field given, kept as they are):
    what ``model_construct`` does without its per-field loop (~30 µs for a step's view)."""
    model = _new_object(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model
