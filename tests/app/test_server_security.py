"""The served app refuses a WebSocket whose Host is not ours (DNS rebinding), and binds to localhost."""

from __future__ import annotations

import base64
import http.client
import os

from tests.browser.test_browser import _free_port, _start_server, _stop


def _upgrade_status(port: int, host: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.putrequest("GET", "/_stcore/stream", skip_host=True)
        conn.putheader("Host", f"{host}:{port}")
        conn.putheader("Origin", f"http://{host}:{port}")
        conn.putheader("Upgrade", "websocket")
        conn.putheader("Connection", "Upgrade")
        conn.putheader("Sec-WebSocket-Key", base64.b64encode(os.urandom(16)).decode())
        conn.putheader("Sec-WebSocket-Version", "13")
        conn.endheaders()
        return conn.getresponse().status
    finally:
        conn.close()


def test_a_rebound_host_cannot_open_the_websocket(tmp_path):
    port = _free_port()
    proc = _start_server(port, tmp_path / "home", tmp_path / "server.log")
    try:
        assert _upgrade_status(port, "127.0.0.1") == 101  # our own page still connects
        assert _upgrade_status(port, "attacker.example") != 101  # Origin == Host, but not an allowed host
    finally:
        _stop(proc)
