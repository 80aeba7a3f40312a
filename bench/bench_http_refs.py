"""State-ref benchmark: time to re-read 100 HTTP refs that each take 50 ms to answer.

Run: ``.venv/bin/python bench/bench_http_refs.py [--refs N] [--delay S] [--rounds N] [--json]``

A threaded HTTP server on 127.0.0.1 answers every GET after ``--delay`` seconds (ETag set).
Figures printed (best and median of ``--rounds``):

* concurrent: ``resolve_refs`` — what a re-anchor does: every ref of the decision at once, one
  ``httpx.AsyncClient``. Goal: <= 0.3 s for 100 refs at 50 ms.
* sequential, same resolver: the same refs awaited one after another (one shared client).
* sequential, plain httpx: ``httpx.Client().get`` in a loop — the naive alternative.

``--json``: the last line of stdout is one JSON object: ``refs_concurrent_best_seconds`` (the
goal's figure), ``refs_concurrent_seconds`` (median) and the same of both sequential sides.

The machine has 2 cores and is noisy: read the ratios, not the third digit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from prefect_waymark.resolvers import (
    RefConfig,
    ResolveContext,
    aresolve_refs,
    parse_ref_config,
    resolve_refs,
)


def start_server(delay: float) -> tuple[ThreadingHTTPServer, int]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            time.sleep(delay)
            body = b'{"rev": 1}'
            self.send_response(200)
            self.send_header("ETag", f'"{self.path}-1"')
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    ThreadingHTTPServer.request_queue_size = 256
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, int(server.server_address[1])


def timed(fn: Callable[[], object], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--refs", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--json", action="store_true", help="last line: the figures as one JSON object"
    )
    args = parser.parse_args()
    server, port = start_server(args.delay)
    workdir = Path(tempfile.mkdtemp(prefix="waymark-bench-refs-"))
    urls = [f"http://127.0.0.1:{port}/r{i}" for i in range(args.refs)]
    configs: list[RefConfig] = [
        parse_ref_config({"name": f"r{i}", "kind": "http", "url": u}) for i, u in enumerate(urls)
    ]

    def concurrent() -> None:
        got = resolve_refs(configs, workdir)
        assert all(r.ok for r in got.values()), [r.error for r in got.values() if not r.ok][:3]

    def sequential_resolver() -> None:
        async def go() -> None:
            ctx = ResolveContext(workdir)
            try:
                for cfg in configs:
                    got = await aresolve_refs([cfg], workdir, ctx=ctx)
                    assert got[cfg.name].ok
            finally:
                await ctx.aclose()

        asyncio.run(go())

    def sequential_httpx() -> None:
        with httpx.Client() as client:
            for u in urls:
                assert client.get(u).headers["etag"]

    concurrent()  # warm-up: imports, first connections
    results = {
        "concurrent (resolve_refs, one AsyncClient)": timed(concurrent, args.rounds),
        "sequential (same resolver, awaited one by one)": timed(sequential_resolver, args.rounds),
        "sequential (plain httpx.Client loop)": timed(sequential_httpx, max(1, args.rounds // 2)),
    }
    server.shutdown()
    print(f"{args.refs} HTTP refs, server answers each after {args.delay * 1000:.0f} ms")
    best = min(results["concurrent (resolve_refs, one AsyncClient)"])
    for name, times in results.items():
        print(
            f"  {name:<48} best {min(times):6.3f} s  median {statistics.median(times):6.3f} s"
            f"  ({min(times) / best:5.1f}x concurrent)"
        )
    goal = 0.3
    verdict = "meets" if best <= goal else "MISSES"
    print(f"  goal: concurrent <= {goal} s -> {verdict} (best {best:.3f} s)")
    if args.json:
        concurrent_t, sequential_t, httpx_t = results.values()
        figures = {
            "refs_concurrent_best_seconds": min(concurrent_t),
            "refs_concurrent_seconds": statistics.median(concurrent_t),
            "refs_sequential_best_seconds": min(sequential_t),
            "refs_sequential_seconds": statistics.median(sequential_t),
            "refs_sequential_httpx_best_seconds": min(httpx_t),
            "refs_sequential_httpx_seconds": statistics.median(httpx_t),
        }
        print(json.dumps({k: round(v, 4) for k, v in figures.items()}, sort_keys=True))


if __name__ == "__main__":
    main()
