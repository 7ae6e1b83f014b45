"""http.max_connections, against the real daemon: the worker counts its open HTTP connections
(idle keep-alive ones, ones that never sent a request, HTTP-FLV players alike); one past the
limit is closed at once with a log line naming the peer and the limit, the others keep working,
and a slot freed by a client that leaves is used by the next one.

One worker (so that every connection lands on the same counter), http.max_connections 5, one
stream published with ffmpeg. The count is read from /healthz ("http_connections=N", the
asking connection included).
"""

import re
import socket
import sys
import time
import unittest

from rilltest import HOST, Rill, ffmpeg_publish, make_test_media, process_log, require_tool, stop_process, wait_until
from test_http_flv import FlvClient, http_exchange, request_bytes

LIMIT = 5


class KeepAlive:
    """An HTTP/1.1 connection that made a request and stays open (keep-alive) for more."""

    def __init__(self, port):
        self.sock = socket.create_connection((HOST, port), timeout=5)
        self.local_port = self.sock.getsockname()[1]

    def get(self, path='/healthz'):
        """One GET on this connection: (status, body) of the response."""
        self.sock.sendall(request_bytes('GET', path))
        raw = b''
        while b'\r\n\r\n' not in raw:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError('closed by the server after %r' % raw[:200])
            raw += chunk
        head, _, body = raw.partition(b'\r\n\r\n')
        status = int(head.split(b' ', 2)[1])
        length = int(re.search(rb'(?im)^content-length:\s*(\d+)', head).group(1))
        while len(body) < length:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError('closed by the server in the middle of a body')
            body += chunk
        return status, body.decode('latin-1')

    def close(self):
        self.sock.close()


def refused(port, timeout=3.0):
    """Connects, sends a request and reports how the server answered: ('refused', local port)
    when it closed the connection without a byte, else ('answered', first bytes)."""
    s = socket.create_connection((HOST, port), timeout=timeout)
    local = s.getsockname()[1]
    try:
        try:
            s.sendall(request_bytes('GET', '/healthz'))
            data = s.recv(4096)
        except (ConnectionResetError, BrokenPipeError):
            data = b''
        except socket.timeout:
            return ('hung', local)
        return ('refused', local) if not data else ('answered', data[:60])
    finally:
        s.close()


class HttpConnectionLimitTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        require_tool('ffmpeg')
        cls.media = make_test_media()
        cls.rill = Rill({'http': {'max_connections': LIMIT, 'timeout': '30s'}}, name='rill-limits')
        cls.addClassCleanup(cls.rill.close)
        cls.port = cls.rill.http_port

    def diag(self, *extra):
        return '\n'.join([str(e) for e in extra] + ['--- rill log ---', self.rill.log_tail(40)])

    def open_count(self):
        """Open HTTP connections of the worker, this one included (None when refused)."""
        try:
            k = KeepAlive(self.port)
            try:
                status, body = k.get()
            finally:
                k.close()
        except OSError:
            return None
        m = re.search(r'http_connections=(\d+)', body)
        return int(m.group(1)) if status == 200 and m else None

    def keep(self, obj):
        self.addCleanup(obj.close)
        return obj

    def test_limit(self):
        pub = ffmpeg_publish(self.rill.rtmp_url('cap'), self.media)
        self.addCleanup(stop_process, pub)
        ok = wait_until(lambda: pub.poll() is None and
                        http_exchange(self.port, request_bytes('HEAD', '/live/cap.flv'), head=True).status == 200, 10, 0.1)
        self.assertTrue(ok, self.diag('the stream never became playable', process_log(pub)))
        # Only the asking connection is left once the server saw the probes go.
        self.assertTrue(wait_until(lambda: self.open_count() == 1, 5), self.diag('count %s' % self.open_count()))

        # Five: two keep-alive connections after a request, one that never sent anything, two players.
        idle = [self.keep(KeepAlive(self.port)) for _ in range(2)]
        for k in idle:
            self.assertEqual(k.get()[0], 200)
        silent = self.keep(socket.create_connection((HOST, self.port)))
        players = [self.keep(FlvClient(self.port, '/live/cap.flv')) for _ in range(2)]
        for c in players:
            self.assertTrue(c.pump_until(lambda: c.resp.video_tags >= 5, 5), self.diag(c.describe()))
        status, body = idle[0].get()
        self.assertEqual(status, 200)
        self.assertIn('http_connections=%d' % LIMIT, body)

        # The sixth is closed at once, with a log line naming the peer and the limit.
        offset = self.rill.log_offset()
        t0 = time.monotonic()
        outcome, local = refused(self.port)
        took = time.monotonic() - t0
        self.assertEqual(outcome, 'refused', self.diag('the 6th connection: %s %r' % (outcome, local)))
        self.assertLess(took, 1.0, 'the 6th connection was closed only after %.2f s' % took)
        m = self.rill.wait_for_log(r'http: 127\.0\.0\.1:%d refused: worker connection limit %d reached'
                                   % (local, LIMIT), 5, since=offset)
        self.assertTrue(m, self.diag('no log line for the refused connection from port %d' % local))

        # The five keep working: the keep-alive connections answer, the players keep playing.
        marks = [c.resp.video_tags for c in players]
        for k in idle:
            status, body = k.get()
            self.assertEqual(status, 200)
            self.assertIn('http_connections=%d' % LIMIT, body)
        for c, mark in zip(players, marks):
            self.assertTrue(c.pump_until(lambda: c.resp.video_tags >= mark + 10, 5),
                            self.diag('a player stalled after the refusal', c.describe()))
            self.assertIsNone(c.resp.error, c.describe())
            self.assertFalse(c.eof, c.describe())

        # A client leaves (the silent one): the next connection is accepted.
        silent.close()
        accepted = wait_until(lambda: self.open_count() == LIMIT, 5)
        self.assertTrue(accepted, self.diag('no connection accepted after one of %d closed' % LIMIT))
        # And a player leaving frees a slot for a new player.
        players[0].close()
        new_player = None

        def play():
            nonlocal new_player
            c = FlvClient(self.port, '/live/cap.flv')
            if c.pump_until(lambda: c.resp.video_tags >= 5, 2):
                new_player = self.keep(c)
                return True
            c.close()
            return False
        self.assertTrue(wait_until(play, 5), self.diag('no new player accepted after a player left'))
        self.assertIsNone(new_player.resp.error, new_player.describe())
        sys.stderr.write('\nhttp.max_connections %d: 6th refused in %.3f s\n' % (LIMIT, took))


if __name__ == '__main__':
    unittest.main()
