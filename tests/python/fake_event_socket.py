"""A minimal fake of SnowLuma's OneBot WebSocket adapter for the python client tests: stdlib
only (RFC 6455 handshake and unfragmented text frames), one thread per connection. It records
each handshake's Authorization header, greets with a lifecycle event and a heartbeat like
SnowLuma, and pushes events to every open connection."""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import struct
import threading
import time
from typing import Any

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def _frame(opcode: int, payload: bytes) -> bytes:
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([n])
    elif n < 65536:
        head += bytes([126]) + struct.pack(">H", n)
    else:
        head += bytes([127]) + struct.pack(">Q", n)
    return head + payload


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


class FakeEventSocket:
    def __init__(self, self_id: int = 10001) -> None:
        self.self_id = self_id
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.url = f"ws://127.0.0.1:{self.port}/"
        self.authorizations: list[str | None] = []
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def open_connections(self) -> int:
        with self.lock:
            return len(self.conns)

    def push(self, event: dict[str, Any]) -> None:
        frame = _frame(1, json.dumps(event).encode())
        with self.lock:
            for conn in list(self.conns):
                try:
                    conn.sendall(frame)
                except OSError:
                    pass

    def wait_closed(self, limit_s: float = 10) -> int:
        deadline = time.monotonic() + limit_s
        while self.open_connections() and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.open_connections()

    def close(self) -> None:
        self.server.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = conn.recv(4096)
            if not chunk:
                conn.close()
                return
            request += chunk
        headers = {}
        for line in request.decode("latin-1").split("\r\n")[1:]:
            if ":" in line:
                key, value = line.split(":", 1)
                headers[key.strip().lower()] = value.strip()
        accept = base64.b64encode(hashlib.sha1((headers["sec-websocket-key"] + GUID).encode()).digest()).decode()
        conn.sendall(
            (
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Accept: {accept}\r\n\r\n"
            ).encode()
        )
        with self.lock:
            self.authorizations.append(headers.get("authorization"))
            self.conns.append(conn)
        now = int(time.time())
        base = {"time": now, "self_id": self.self_id, "post_type": "meta_event"}
        for extra in ({"meta_event_type": "lifecycle", "sub_type": "connect"}, {"meta_event_type": "heartbeat", "interval": 30000}):
            conn.sendall(_frame(1, json.dumps({**base, **extra}).encode()))
        try:
            while True:
                b1, b2 = _recv_exact(conn, 2)
                n = b2 & 0x7F
                if n == 126:
                    n = struct.unpack(">H", _recv_exact(conn, 2))[0]
                elif n == 127:
                    n = struct.unpack(">Q", _recv_exact(conn, 8))[0]
                mask = _recv_exact(conn, 4) if b2 & 0x80 else b"\0\0\0\0"
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(_recv_exact(conn, n)))
                if b1 & 0x0F == 8:
                    conn.sendall(_frame(8, payload[:2]))
                    break
        except (ConnectionError, OSError):
            pass
        with self.lock:
            if conn in self.conns:
                self.conns.remove(conn)
        conn.close()


def group_message(self_id: int, group_id: int, user_id: int, text: str) -> dict[str, Any]:
    return {
        "time": int(time.time()),
        "self_id": self_id,
        "post_type": "message",
        "message_type": "group",
        "sub_type": "normal",
        "message_id": 1,
        "group_id": group_id,
        "user_id": user_id,
        "message": [{"type": "text", "data": {"text": text}}],
        "raw_message": text,
        "font": 0,
        "sender": {"user_id": user_id, "nickname": "n"},
    }
