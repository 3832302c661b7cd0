"""A loopback TCP proxy in front of one instance that cuts connections mid-call on demand.

While ``cutting`` is on, each request a client sends is, with probability ``rate``, either
dropped before it reaches the server or passed on and the connection cut before the answer
comes back (the call may then have applied: its outcome is unknown to the client). Threads,
one pair per connection; for tests only.
"""

from __future__ import annotations

import random
import socket
import threading
import time


class CuttingProxy:
    """Listens on a free port of 127.0.0.1 and forwards to ``127.0.0.1:target_port``."""

    def __init__(self, target_port: int, rate: float = 0.2, seed: int = 0) -> None:
        self.target_port = target_port
        self.rate = rate
        self.cutting = False
        self.cuts = 0
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(128)
        self.port = int(self._listener.getsockname()[1])
        self._stopped = False
        threading.Thread(target=self._accept, name="check-proxy", daemon=True).start()

    def stop(self) -> None:
        self._stopped = True
        try:
            self._listener.close()
        except OSError:
            pass

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _decide(self) -> str:
        """'' (pass on), 'before' (drop the request) or 'after' (pass it on, then cut)."""
        if not self.cutting:
            return ""
        with self._lock:
            if self._rng.random() >= self.rate:
                return ""
            self.cuts += 1
            return "before" if self._rng.random() < 0.5 else "after"

    def _pump(self, src: socket.socket, dst: socket.socket, requests: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                cut = self._decide() if requests else ""
                if cut == "before":
                    break
                dst.sendall(data)
                if cut == "after":
                    time.sleep(0.002)
                    break
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
