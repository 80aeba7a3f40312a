"""A cache of validated plans on disk, for big plan files read again unchanged.

A 10,000-step plan file costs ~0.6 s of CPU to parse and validate, and a multi-week plan pays it
in every process that reads it: each ``waymark run``, ``status``, ``next``, check-in and hook.
The same bytes at the same path, read by the same code, give the same validated
:class:`~.spec.PlanSpec`, so a file of :data:`CACHE_MIN_BYTES` or more is kept here once valid
and loaded back (~2x faster) while nothing it was made from changed. The key is a sha256 over
the file's text, the path as given and resolved, and a fingerprint of the code (every module of
this package — size and modification time —, Python, pydantic and PyYAML); anything else
misses. The entry carries the steps' definition hashes and dependency order, computed once.
An invalid plan is never cached (its problems are reported as before), nor a plan with
``plan:`` steps (their files may change under the same text).

Where: ``$WAYMARK_PLAN_CACHE`` (a folder), else ``$XDG_CACHE_HOME/prefect-waymark/plans``, else
``~/.cache/prefect-waymark/plans``; ``WAYMARK_PLAN_CACHE=off`` turns it off (the folder, keys
and files: :mod:`.cache_files`). A cache entry that cannot be read is ignored and replaced; the
cache never fails a command.
"""

from __future__ import annotations

import gc
import pickle
from collections.abc import Iterator
from contextlib import contextmanager

from .cache_files import cache_folder, code_fingerprint, entry_name, owned, write_entry
from .spec import PlanSpec

__all__ = ["CACHE_MIN_BYTES", "cache_folder", "cacheable", "cached_plan", "store_plan"]

#: Smaller files parse in milliseconds: the cache is not worth its disk reads below this size.
CACHE_MIN_BYTES = 64 * 1024
_SUFFIX = ".pickle"


def cacheable(spec: PlanSpec) -> bool:
    """No ``plan:`` step (its file may change under the same text), and every state ref read
    by a built-in resolver (a plug-in's checks may change without this package changing)."""
    from ..resolvers.registry import served_by_builtins

    if any(s.plan is not None for s in spec.steps):
        return False
    refs = spec.state_refs
    return not isinstance(refs, list) or served_by_builtins({r.kind for r in refs})


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a plan is unpickled: its ~10^6 new objects (10,000
    steps) would otherwise set off pass after pass over the young and then the whole heap, to
    free nothing (~0.15 s of a 0.2 s load in a run). Left as it was found: a caller that
    turned it off keeps it off."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def cached_plan(source: str, resolved: str, text: str) -> PlanSpec | None:
    """The validated plan kept for these bytes at this path by this code, if any; never
    raises."""
    if len(text) < CACHE_MIN_BYTES:
        return None
    try:
        folder, fingerprint = cache_folder(), code_fingerprint()
        if folder is None or fingerprint is None or not owned(folder):  # a pickle runs code
            return None
        entry = folder / entry_name(fingerprint, source, resolved, text, _SUFFIX)
        try:
            with open(entry, "rb") as fh, _collector_paused():
                spec = pickle.load(fh)
        except FileNotFoundError:
            return None
        except Exception:  # noqa: BLE001 - a torn or foreign entry: parse the file instead
            entry.unlink(missing_ok=True)
            return None
        return spec if isinstance(spec, PlanSpec) and cacheable(spec) else None
    except Exception:  # noqa: BLE001 - no home folder, a module gone mid-walk: parse instead
        return None


def store_plan(source: str, resolved: str, text: str, spec: PlanSpec) -> None:
    """Keep ``spec`` (validated from ``text``) for the next process; never raises."""
    if len(text) < CACHE_MIN_BYTES:
        return
    try:
        folder, fingerprint = cache_folder(), code_fingerprint()
        if folder is None or fingerprint is None or not cacheable(spec):
            return
        spec.plan_hash()  # with the step hashes, computed once and kept with it: every reader
        spec.topological_order()  # of the plan asks
        data = pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL)
        write_entry(folder, entry_name(fingerprint, source, resolved, text, _SUFFIX), data)
    except Exception:  # noqa: BLE001 - a cache that cannot be written only costs time
        return
