"""A real TCP proxy for tests that need a connection to drop mid-way."""

from __future__ import annotations

import socket
import threading


class TcpProxy:
    """Forwards 127.0.0.1:<port> to (host, target_port) until ``cut()``
    closes every connection and stops accepting new ones; ``drop()`` closes
    the open connections only. ``accepted`` counts the connections made."""

    def __init__(self, host: str, target_port: int) -> None:
        self.target = (host, target_port)
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        self.open = True
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while self.open:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self.lock:
                if not self.open:
                    client.close()
                    upstream.close()
                    return
                self.sockets += [client, upstream]
                self.accepted += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def drop(self) -> None:
        with self.lock:
            self._close_all()

    def cut(self) -> None:
        with self.lock:
            self.open = False
            self._close_all()
        self.server.close()

    def _close_all(self) -> None:
        for s in self.sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        self.sockets.clear()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc) -> None:
        if self.open:
            self.cut()
