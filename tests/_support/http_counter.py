"""A real HTTP "business system" on 127.0.0.1 that counts calls per idempotency key.

``POST /charge`` with an ``Idempotency-Key`` header is the irreversible effect: every call is
counted, duplicates included (a well-behaved client makes at most one per key).
``GET /applied?key=K`` is what probes ask: ``{"applied": true|false}``; probes are not counted.
``GET /counts`` returns the counts. Runs in a thread of the test process; runner subprocesses
reach it through its URL.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

__all__ = ["CounterService"]


class CounterService:
    """Start with ``with CounterService() as svc:``; ``svc.url`` is its base URL."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.probes = 0
        self._lock = threading.Lock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send(self, code: int, body: dict[str, Any]) -> None:
                raw = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                key = self.headers.get("Idempotency-Key")
                if urlparse(self.path).path != "/charge" or not key:
                    self._send(400, {"error": "POST /charge with an Idempotency-Key header"})
                    return
                with service._lock:
                    n = service.calls[key] = service.calls.get(key, 0) + 1
                self._send(200, {"id": f"ch-{abs(hash(key)) % 10**8}-{n}", "key": key, "n": n})

            def do_GET(self) -> None:
                url = urlparse(self.path)
                if url.path == "/applied":
                    key = parse_qs(url.query).get("key", [""])[0]
                    with service._lock:
                        service.probes += 1
                        applied = service.calls.get(key, 0) > 0
                    self._send(200, {"key": key, "applied": applied})
                elif url.path == "/counts":
                    self._send(200, service.counts())
                else:
                    self._send(404, {"error": "unknown path"})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self.calls)

    def duplicates(self) -> dict[str, int]:
        """Keys called more than once, with their counts (must stay empty)."""
        return {k: n for k, n in self.counts().items() if n > 1}

    def __enter__(self) -> CounterService:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
