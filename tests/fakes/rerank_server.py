"""A real HTTP server on 127.0.0.1 speaking the common `/rerank` API shape."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def rerank_server(score: Callable[[str, str], float] | None, status: int = 200) -> Iterator[str]:
    """Serve /rerank, scoring each document with score(query, document); yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if status != 200 or score is None:
                payload = b'{"error": "overloaded"}'
                self.send_response(status if status != 200 else 500)
            else:
                results = [
                    {"index": i, "relevance_score": score(body["query"], doc)}
                    for i, doc in enumerate(body["documents"])
                ]
                results.sort(key=lambda r: -r["relevance_score"])  # real APIs return best first
                payload = json.dumps({"results": results}).encode()
                self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
