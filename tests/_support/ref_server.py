"""A real HTTP server on 127.0.0.1 for state-ref tests: resources with ETags, counted calls."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Resource:
    body: bytes
    etag: str | None
    last_modified: str | None
    content_type: str = "application/json"


class RefServer:
    """Serves ``set()`` resources; ``calls[path]`` counts GETs; ``auth[path]`` requires a header."""

    def __init__(self, delay_seconds: float = 0.0) -> None:
        self.resources: dict[str, Resource] = {}
        self.calls: Counter[str] = Counter()
        self.auth: dict[str, str] = {}
        self.seen_auth: dict[str, list[str]] = {}
        self.delay = delay_seconds
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                path = self.path.split("?", 1)[0]
                with server._lock:
                    server.calls[path] += 1
                    server.seen_auth.setdefault(path, []).append(
                        self.headers.get("Authorization", "")
                    )
                if server.delay:
                    time.sleep(server.delay)
                wanted = server.auth.get(path)
                if wanted is not None and self.headers.get("Authorization") != wanted:
                    self._send(401, b'{"error": "unauthorized"}', {})
                    return
                res = server.resources.get(path)
                if res is None:
                    self._send(404, b'{"error": "not found"}', {})
                    return
                headers = {"Content-Type": res.content_type}
                if res.etag:
                    headers["ETag"] = res.etag
                if res.last_modified:
                    headers["Last-Modified"] = res.last_modified
                self._send(200, res.body, headers)

            def _send(self, code: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(code)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self) -> RefServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def set(
        self,
        path: str,
        doc: Any,
        *,
        etag: str | None = "auto",
        last_modified: str | None = None,
    ) -> str | None:
        """Serve ``doc`` (JSON) at ``path``; the ETag defaults to a hash of the body."""
        body = json.dumps(doc).encode() if not isinstance(doc, bytes) else doc
        if etag == "auto":
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        self.resources[path] = Resource(body, etag, last_modified)
        return etag


def serve() -> Iterator[RefServer]:
    """Body of each test module's ``ref_server`` fixture: a fresh server, stopped afterwards."""
    server = RefServer().start()
    yield server
    server.stop()
