"""`meetmem bench serve --webhook ok|hang`: a webhook endpoint in the bench process, registered for the run's
tenant, that answers at once or holds each delivery longer than the service waits."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .serve_process import free_port


class WebhookEndpoint:
    """A webhook receiver in the bench process: counts the deliveries; `hang` holds each for 60 s first."""

    def __init__(self, mode: str) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        endpoint = self
        self.mode = mode
        self.received = 0
        self.events: dict[str, int] = {}
        self._lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                import json

                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with endpoint._lock:  # counted as it arrives: a hanging endpoint answers after the run
                    endpoint.received += 1
                    kind = json.loads(body).get("type", "?")
                    endpoint.events[kind] = endpoint.events.get(kind, 0) + 1
                if endpoint.mode == "hang":
                    time.sleep(60)
                try:
                    self.send_response(204)
                    self.end_headers()
                except OSError:  # the service gave up waiting
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/webhook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def register(self, store: str | Path, tenant: str) -> None:
        from meetmem.store.backends import open_log
        from meetmem.store.webhooks import WebhookStore

        log = open_log(store, upgrade=False)
        try:
            WebhookStore(log).add(tenant, self.url, ["meeting.closed", "ledger.updated"])
        finally:
            log.close()

    def stop(self) -> dict[str, Any]:
        self.server.shutdown()
        self.server.server_close()
        return {"mode": self.mode, "url": self.url, "received": self.received, "by_event": self.events}
