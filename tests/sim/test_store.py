"""The stand-in store's shutdown wait: node 0 serves until
every rank has hung up, bounded (the stand-in test's main)."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workflow" / "sim" / "ascend_deepep"))

from ascend_deepep._store import StoreClient, serve  # noqa: E402

from conftest import free_port  # noqa: E402


def test_the_store_waits_for_a_connected_rank_at_most_its_bound_and_not_after_it_hung_up():
    port = free_port()
    server = serve("127.0.0.1", port)
    try:
        assert server.wait_until_clients_left(0.05)  # nobody connected yet
        client = StoreClient("127.0.0.1", port)
        client.set("k", 1)  # the handler runs: the connection is counted
        started = time.monotonic()
        assert not server.wait_until_clients_left(0.2)  # still connected: the bound ends the wait
        assert 0.15 < time.monotonic() - started < 2.0
        client.reader.close()
        client.sock.close()
        started = time.monotonic()
        assert server.wait_until_clients_left(5.0)
        assert time.monotonic() - started < 2.0  # it returns when the rank hangs up, not at the bound
    finally:
        server.shutdown()
        server.server_close()
