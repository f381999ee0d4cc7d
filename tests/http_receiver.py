"""Real HTTP servers on 127.0.0.1 for tests: a plain one, a JSON webhook on
it (the notification channels post to it), and an OTLP/HTTP collector on it
that decodes requests with opentelemetry-proto, as a real collector would.

Both run in a daemon thread on a free port and close on ``close()`` or at the
end of a ``with`` block::

    with OtlpReceiver() as rx:                     # POST /v1/metrics, /v1/logs
        settings = resolve({"telemetry": {"otlp_endpoint": rx.url}}, "n")
        ...
    headers, req = rx.metrics[0]                   # lower-case headers, decoded request

    srv = HttpReceiver(lambda path, headers, body: (200, b"ok"))

    with WebhookReceiver() as hook:                # any path
        hook.status = 500                          # answer errors until set back
        ...
    hook.wait_for(1, timeout_s=20)                 # a detached sender posts later
    hook.requests[0]["path"], hook.bodies[0]       # lower-case headers, JSON body

opentelemetry-proto is imported only when an OTLP request arrives, so a test
module can ``pytest.importorskip`` it first and skip cleanly without it.
"""

from __future__ import annotations

import http.server
import threading
import json
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

# handle(path, lower-case headers, body) -> (status, response body), or None
# to never answer (a hung server), until the receiver is closed.
Handler = Callable[[str, Dict[str, str], bytes], Optional[Tuple[int, bytes]]]
HANG_MAX_S = 10.0  # a "hung" request still ends, so a failing test cannot hang


class HttpReceiver:
    """POSTs go to ``handle``; every path posted to is kept in ``paths``."""

    def __init__(self, handle: Handler, content_type: str = "application/x-protobuf") -> None:
        self.paths: List[str] = []
        self.release = threading.Event()
        receiver = self

        class _Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.paths.append(self.path)
                answer = handle(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                if answer is None:
                    receiver.release.wait(HANG_MAX_S)
                    return
                status, data = answer
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # serve_forever polls for shutdown every poll_interval (0.5 s by default), and
        # close() waits that out: every test starting a receiver paid half a second.
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.release.set()  # let a hung request end before shutdown waits for it
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "HttpReceiver":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class WebhookReceiver(HttpReceiver):
    """A webhook endpoint: every POST is kept in ``requests`` as
    ``{"path", "headers" (lower-case), "body" (decoded JSON, or the raw bytes
    when it is not JSON)}`` and answered with ``status``, which a test may
    change between requests to play a failing and then a recovered server.
    """

    def __init__(self, status: int = 200) -> None:
        self.requests: List[Dict[str, Any]] = []
        self.status = status
        self._arrived = threading.Condition()
        super().__init__(self._hook, content_type="text/plain")

    def _hook(self, path: str, headers: Dict[str, str], body: bytes) -> Tuple[int, bytes]:
        try:
            decoded: Any = json.loads(body)
        except ValueError:
            decoded = body
        with self._arrived:
            self.requests.append({"path": path, "headers": headers, "body": decoded})
            self._arrived.notify_all()
        return self.status, b"ok"

    @property
    def bodies(self) -> List[Any]:
        return [r["body"] for r in self.requests]

    def wait_for(self, count: int, timeout_s: float) -> bool:
        """True once ``count`` requests have arrived, False after ``timeout_s``
        (for senders in another process that post after the call returns)."""
        end = time.monotonic() + timeout_s
        with self._arrived:
            while len(self.requests) < count:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._arrived.wait(left)
            return True


class OtlpReceiver(HttpReceiver):
    """Minimal OTLP/HTTP collector: ``<prefix>/v1/metrics`` and
    ``<prefix>/v1/logs``, protobuf; anything else is 404.

    Keeps ``(headers, decoded request)`` in ``metrics`` and ``logs``.
    ``on_logs(request)`` runs on each logs request before it is kept and
    answered (a pipeline step: change it, forward it). ``hang``: accept
    every request and never answer.
    """

    def __init__(self, *, prefix: str = "", hang: bool = False,
                 on_logs: Optional[Callable[[Any], None]] = None) -> None:
        self.metrics: List[Tuple[Dict[str, str], Any]] = []
        self.logs: List[Tuple[Dict[str, str], Any]] = []
        self.prefix = prefix
        self.hang = hang
        self.on_logs = on_logs
        super().__init__(self._otlp)

    def _otlp(self, path: str, headers: Dict[str, str], body: bytes) -> Optional[Tuple[int, bytes]]:
        from opentelemetry.proto.collector.logs.v1 import logs_service_pb2 as logs_pb2
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as metrics_pb2

        if self.hang:
            return None
        if path == self.prefix + "/v1/metrics":
            req = metrics_pb2.ExportMetricsServiceRequest()
            req.ParseFromString(body)
            self.metrics.append((headers, req))
            return 200, metrics_pb2.ExportMetricsServiceResponse().SerializeToString()
        if path == self.prefix + "/v1/logs":
            req = logs_pb2.ExportLogsServiceRequest()
            req.ParseFromString(body)
            if self.on_logs is not None:
                self.on_logs(req)
            self.logs.append((headers, req))
            return 200, logs_pb2.ExportLogsServiceResponse().SerializeToString()
        return 404, b""
