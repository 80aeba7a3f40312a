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
``~/.cache/prefect-waymark/plans``; ``WAYMARK_PLAN_CACHE=off`` turns it off. The folder is the
user's own (mode 0700); one that another user owns or may write into is not read. A cache
entry that cannot be read is ignored and replaced; the cache never fails a command.
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .spec import PlanSpec

__all__ = ["CACHE_MIN_BYTES", "cache_folder", "cached_plan", "store_plan"]

#: Smaller files parse in milliseconds: the cache is not worth its disk reads below this size.
CACHE_MIN_BYTES = 64 * 1024
#: Entries kept; the oldest go first.
CACHE_MAX_ENTRIES = 32

_FINGERPRINT: str | None = None
_STARTED_NS = time.time_ns()  # when this module was imported: about when the process started


def cache_folder() -> Path | None:
    """The cache's folder, or None when ``WAYMARK_PLAN_CACHE=off``."""
    given = os.environ.get("WAYMARK_PLAN_CACHE", "")
    if given.lower() in ("off", "0", "no", "false"):
        return None
    if given:
        return Path(given).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "prefect-waymark" / "plans"


def _code_fingerprint() -> str | None:
    """What the validated plan was made by: this package's modules, Python, pydantic, PyYAML,
    SQLAlchemy (a ref URL's checks). None when a module changed on disk after this process
    started: the code in memory is not the code on disk, so no entry is read or written."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        import pydantic
        import yaml

        root = Path(__file__).resolve().parents[1]
        h = hashlib.sha256(f"{sys.version}\n{pydantic.VERSION}\n{yaml.__version__}".encode())
        h.update(f"{getattr(yaml, '__with_libyaml__', False)}\n{_version('sqlalchemy')}".encode())
        for path in sorted(root.rglob("*.py")):
            st = path.stat()
            if st.st_mtime_ns > _STARTED_NS:
                _FINGERPRINT = ""
                break
            h.update(f"\n{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}".encode())
        else:
            _FINGERPRINT = h.hexdigest()
    return _FINGERPRINT or None


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "-"


def _cacheable(spec: PlanSpec) -> bool:
    """No ``plan:`` step (its file may change under the same text), and every state ref read
    by a built-in resolver (a plug-in's checks may change without this package changing)."""
    from ..resolvers.registry import served_by_builtins

    if any(s.plan is not None for s in spec.steps):
        return False
    refs = spec.state_refs
    return not isinstance(refs, list) or served_by_builtins({r.kind for r in refs})


def _entry(folder: Path, fingerprint: str, source: str, resolved: str, text: str) -> Path:
    h = hashlib.sha256(fingerprint.encode())
    for part in (source, resolved, text):
        h.update(b"\0" + part.encode("utf-8", "surrogatepass"))
    return folder / f"{h.hexdigest()}.pickle"


def _own(folder: Path) -> bool:
    """The folder is this user's and nobody else may write into it (a pickle runs code)."""
    try:
        st = folder.stat()
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


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
        folder, fingerprint = cache_folder(), _code_fingerprint()
        if folder is None or fingerprint is None or not _own(folder):
            return None
        entry = _entry(folder, fingerprint, source, resolved, text)
        try:
            with open(entry, "rb") as fh, _collector_paused():
                spec = pickle.load(fh)
        except FileNotFoundError:
            return None
        except Exception:  # noqa: BLE001 - a torn or foreign entry: parse the file instead
            entry.unlink(missing_ok=True)
            return None
        return spec if isinstance(spec, PlanSpec) and _cacheable(spec) else None
    except Exception:  # noqa: BLE001 - no home folder, a module gone mid-walk: parse instead
        return None


def store_plan(source: str, resolved: str, text: str, spec: PlanSpec) -> None:
    """Keep ``spec`` (validated from ``text``) for the next process; never raises."""
    if len(text) < CACHE_MIN_BYTES:
        return
    try:
        folder, fingerprint = cache_folder(), _code_fingerprint()
        if folder is None or fingerprint is None or not _cacheable(spec):
            return
        spec.step_hashes()  # computed once and kept with it: every reader of the plan asks
        spec.topological_order()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not _own(folder):
            return
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(spec, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, _entry(folder, fingerprint, source, resolved, text))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        entries = sorted(folder.glob("*.pickle"), key=lambda p: p.stat().st_mtime_ns)
        for old in entries[:-CACHE_MAX_ENTRIES]:
            old.unlink(missing_ok=True)
    except Exception:  # noqa: BLE001 - a cache that cannot be written only costs time
        return
