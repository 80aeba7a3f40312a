"""Resolvers read the current version of state refs; one protocol, several kinds.

Built-in kinds: ``http``, ``sql``, ``git``, ``file``, ``prefect-variable``. Add your own through
the ``prefect_waymark.resolvers`` entry-point group::

    [project.entry-points."prefect_waymark.resolvers"]
    ticket = "my_package.refs:TicketResolver"

Importing this package is cheap: each name loads its module on first use (checking a plan's
refs loads no asyncio), httpx, SQLAlchemy and Prefect only when a ref is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import _lazy_exports

if TYPE_CHECKING:
    from .base import (
        ABSENT,
        RefConfig,
        RefReading,
        ResolveContext,
        ResolverError,
        SecretRefConfig,
        StateResolver,
        value_version,
    )
    from .registry import (
        ENTRY_POINT_GROUP,
        UnknownRefKind,
        config_model_for,
        get_resolver,
        known_kinds,
        register_resolver,
    )
    from .resolve import aresolve_refs, resolve_refs, run_sync
    from .validation import RefConfigError, parse_ref_config, ref_field_problems

__all__ = [
    "ABSENT",
    "ENTRY_POINT_GROUP",
    "RefConfig",
    "RefConfigError",
    "RefReading",
    "ResolveContext",
    "ResolverError",
    "SecretRefConfig",
    "StateResolver",
    "UnknownRefKind",
    "aresolve_refs",
    "config_model_for",
    "get_resolver",
    "known_kinds",
    "parse_ref_config",
    "ref_field_problems",
    "register_resolver",
    "resolve_refs",
    "run_sync",
    "value_version",
]

__getattr__ = _lazy_exports(
    __name__,
    {
        **dict.fromkeys(
            [
                "ABSENT",
                "RefConfig",
                "RefReading",
                "ResolveContext",
                "ResolverError",
                "SecretRefConfig",
                "StateResolver",
                "value_version",
            ],
            ".base",
        ),
        **dict.fromkeys(
            [
                "ENTRY_POINT_GROUP",
                "UnknownRefKind",
                "config_model_for",
                "get_resolver",
                "known_kinds",
                "register_resolver",
            ],
            ".registry",
        ),
        **dict.fromkeys(["aresolve_refs", "resolve_refs", "run_sync"], ".resolve"),
        **dict.fromkeys(
            ["RefConfigError", "parse_ref_config", "ref_field_problems"], ".validation"
        ),
    },
)
