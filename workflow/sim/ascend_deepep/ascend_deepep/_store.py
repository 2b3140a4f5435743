"""A tiny TCP key-value store: the stand-in for the SHMEM/TCP store that node 0 serves.

Protocol: one JSON object per line. Requests {"op": "set"|"get"|"add", "key": str, "value": ...};
"get" blocks until the key exists (or the client's timeout passes). Ranks use it to exchange the
tokens they dispatch and to meet at barriers, so a dead or late node blocks the others as the real
kernel's cross-rank waits would.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from typing import Any


class _State:
    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.cond = threading.Condition()
        self.clients = 0  # connections open now


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        state: _State = self.server.state  # type: ignore[attr-defined]
        with state.cond:
            state.clients += 1
        try:
            self._serve(state)
        finally:
            with state.cond:
                state.clients -= 1
                state.cond.notify_all()

    def _serve(self, state: _State) -> None:
        for raw in self.rfile:
            req = json.loads(raw)
            op, key = req["op"], req["key"]
            with state.cond:
                if op == "set":
                    state.data[key] = req["value"]
                    state.cond.notify_all()
                    reply: Any = True
                elif op == "add":
                    state.data[key] = state.data.get(key, 0) + int(req["value"])
                    state.cond.notify_all()
                    reply = state.data[key]
                elif op == "mset":
                    state.data.update(req["value"])
                    state.cond.notify_all()
                    reply = True
                elif op == "mget":
                    keys = req["keys"]
                    present = state.cond.wait_for(
                        lambda keys=keys: all(k in state.data for k in keys), float(req.get("timeout", 3600))
                    )
                    reply = [state.data[k] for k in keys] if present else {"__timeout__": True}
                elif op == "get":
                    present = state.cond.wait_for(lambda key=key: key in state.data, float(req.get("timeout", 3600)))
                    reply = state.data[key] if present else {"__timeout__": True}
                else:
                    reply = {"__error__": f"unknown op {op}"}
            self.wfile.write((json.dumps(reply) + "\n").encode())
            self.wfile.flush()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def wait_until_clients_left(self, timeout_s: float) -> bool:
        """Block until every connection has closed (each rank hangs up when its process ends), at most timeout_s:
        shutting down earlier would cut off a rank on another node still reading its last reply."""
        state: _State = self.state  # type: ignore[attr-defined]
        with state.cond:
            return state.cond.wait_for(lambda: state.clients == 0, timeout_s)


def serve(host: str, port: int) -> _Server:
    server = _Server((host, port), _Handler)
    server.state = _State()  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class StoreTimeout(RuntimeError):
    pass


class StoreClient:
    def __init__(self, host: str, port: int, connect_timeout_s: float = 120.0, op_timeout_s: float = 3600.0):
        deadline = time.monotonic() + connect_timeout_s
        while True:
            try:
                self.sock = socket.create_connection((host, port), timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise StoreTimeout(
                        f"could not reach the store at {host}:{port} within {connect_timeout_s:g} s"
                    ) from None
                time.sleep(0.2)
        self.sock.settimeout(None)
        self.reader = self.sock.makefile("rb")
        self.op_timeout_s = op_timeout_s

    def _call(self, **req: Any) -> Any:
        self.sock.sendall((json.dumps(req) + "\n").encode())
        line = self.reader.readline()
        if not line:
            raise ConnectionError("store closed the connection")
        reply = json.loads(line)
        if isinstance(reply, dict) and reply.get("__timeout__"):
            raise StoreTimeout(f"timed out waiting for {req['key']!r}")
        return reply

    def set(self, key: str, value: Any) -> None:
        self._call(op="set", key=key, value=value)

    def get(self, key: str) -> Any:
        return self._call(op="get", key=key, timeout=self.op_timeout_s)

    def mset(self, items: dict[str, Any]) -> None:
        self._call(op="mset", key="*", value=items)

    def mget(self, keys: list[str]) -> list[Any]:
        """Block until every key exists; one round trip for all of them."""
        return self._call(op="mget", key=",".join(keys[:3]), keys=keys, timeout=self.op_timeout_s)

    def add(self, key: str, value: int = 1) -> int:
        return self._call(op="add", key=key, value=value)

    def barrier(self, name: str, world: int) -> None:
        """Every rank adds itself; the last one releases everybody."""
        if self.add(f"barrier/{name}") == world:
            self.set(f"barrier/{name}/open", True)
        self.get(f"barrier/{name}/open")
