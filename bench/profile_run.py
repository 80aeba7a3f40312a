"""Profile a waymark run against the same work in plain Prefect (``make profile``).

Run: ``.venv/bin/python bench/profile_run.py [--steps 200] [--top 25] [--out DIR]``

Both sides run in this process against one local Prefect server (as ``bench_resume.py`` part 1:
a chain of ``--steps`` no-op steps, a plain flow of as many persisted tasks), each under
cProfile, after a warm-up. Printed:

1. where waymark's own time goes: the ``prefect_waymark`` functions by cumulative time;
2. what the waymark run spends more than the plain flow, function by function (own time,
   waymark minus plain): the ledger's SQLite calls, Prefect API round trips (``recv``), ...

The raw profiles are kept in ``--out`` (``waymark.prof``, ``plain.prof``) for ``snakeviz`` or
``python -m pstats``. cProfile sees the main thread only (a sync flow runs its tasks there).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench_resume import _chain_plan, _plain_flows, _server, _settle


def _label(key: tuple[str, int, str]) -> str:
    file, line, name = key
    return f"{file.split('site-packages/')[-1].split('/work/main/')[-1]}:{line}({name})"


def _differences(way: pstats.Stats, plain: pstats.Stats, top: int) -> None:
    a: dict[Any, Any] = way.stats  # type: ignore[attr-defined]
    b: dict[Any, Any] = plain.stats  # type: ignore[attr-defined]
    rows = []
    for key in set(a) | set(b):
        ta, tb = (a.get(key, (0, 0, 0.0))[2], b.get(key, (0, 0, 0.0))[2])
        na, nb = (a.get(key, (0, 0))[1], b.get(key, (0, 0))[1])
        rows.append((ta - tb, ta, tb, na, nb, _label(key)))
    rows.sort(reverse=True)
    print(f"\n== what the waymark run spends more than the plain flow (own time), top {top} ==")
    print(f"{'extra s':>8} {'waymark':>8} {'plain':>8} {'calls':>13}  function")
    for extra, ta, tb, na, nb, label in rows[:top]:
        print(f"{extra:>+8.3f} {ta:>8.3f} {tb:>8.3f} {f'{na}/{nb}':>13}  {label[:110]}")
    total_a = sum(v[2] for v in a.values())
    total_b = sum(v[2] for v in b.values())
    print(f"total profiled: waymark {total_a:.2f} s, plain {total_b:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--out", type=Path, default=None, help="where to keep the .prof files")
    args = ap.parse_args()
    stop = _server()
    root = Path(tempfile.mkdtemp(prefix="waymark-profile-"))
    out = args.out or root
    out.mkdir(parents=True, exist_ok=True)
    try:
        from prefect_waymark.flows import run_plan

        plain_chain, _ = _plain_flows(root / "plain-results")
        plain_chain(3)  # warm-up: imports, first-time server paths
        run_plan(plan=str(_chain_plan(root / "warm", "warm", 3)))
        plan = _chain_plan(root / "profiled", "profiled", args.steps)
        profiles = {}
        for side, fn in (
            ("plain", lambda: plain_chain(args.steps)),
            ("waymark", lambda: run_plan(plan=str(plan))),
        ):
            _settle()
            prof = cProfile.Profile()
            prof.runcall(fn)
            prof.dump_stats(out / f"{side}.prof")
            profiles[side] = pstats.Stats(prof)
        print(f"\n== waymark's own functions by cumulative time ({args.steps}-step chain) ==")
        profiles["waymark"].sort_stats("cumulative").print_stats("prefect_waymark", args.top)
        _differences(profiles["waymark"], profiles["plain"], args.top)
        print(f"profiles kept in {out}")
    finally:
        if args.out is None:
            shutil.rmtree(root, ignore_errors=True)
        stop()


if __name__ == "__main__":
    main()
