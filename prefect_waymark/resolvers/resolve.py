"""Read many refs for one decision: concurrently, with one async HTTP client."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Coroutine, Iterable
from pathlib import Path
from typing import Any, TypeVar

from .base import RefConfig, RefReading, ResolveContext, now_iso
from .registry import get_resolver

__all__ = ["aresolve_refs", "resolve_refs", "run_sync"]

T = TypeVar("T")


async def _read_one(config: RefConfig, ctx: ResolveContext) -> RefReading:
    at = now_iso()
    start = time.perf_counter()
    try:
        resolver = get_resolver(config.kind)
        version = await resolver.read_version(config, ctx)
        return RefReading(config.name, config.kind, version, None, at, time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - an unreadable ref is reported, never "unchanged"
        text = str(exc) or type(exc).__name__
        error = ctx.scrub(f"{type(exc).__name__}: {text}")
        return RefReading(config.name, config.kind, None, error, at, time.perf_counter() - start)


async def aresolve_refs(
    configs: Iterable[RefConfig], workdir: Path, *, ctx: ResolveContext | None = None
) -> dict[str, RefReading]:
    """Read every ref at once; an unreadable ref gives a reading with ``error`` set."""
    context = ctx or ResolveContext(workdir)
    try:
        readings = await asyncio.gather(*(_read_one(c, context) for c in configs))
        # Scrubbed once every secret of the decision is known (refs read concurrently).
        readings = [context.scrub_reading(r) for r in readings]
    finally:
        if ctx is None:
            await context.aclose()
    return {r.name: r for r in readings}


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code, also when this thread has a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def resolve_refs(configs: Iterable[RefConfig], workdir: Path) -> dict[str, RefReading]:
    """Sync form of :func:`aresolve_refs`."""
    return run_sync(aresolve_refs(list(configs), workdir))
