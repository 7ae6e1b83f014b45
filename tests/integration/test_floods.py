"""Floods and idlers (docs/operations.md, "Connection floods"): many idle TCP connections on the
RTMP and HTTP ports and a burst of connects do not stop a publisher and its players, and every
idle connection is closed by rtmp.handshake_timeout / http.timeout.

CI opens RILL_FLOOD_CONNECTIONS (default 2,000: the test process and the server share the
machine's descriptor limit) idle connections, half per port; the issue's full figure is 20,000
(RILL_FLOOD_CONNECTIONS=20000 with `ulimit -n` above 45,000).

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... python3 -m unittest -v test_floods
"""

import os
import resource
import selectors
import socket
import time
import unittest

import rilltest
from healthy import start_healthy
from rilltest import Rill, require_tool

HOST = '127.0.0.1'
COUNT = int(os.environ.get('RILL_FLOOD_CONNECTIONS', '2000'))
TIMEOUT_S = 2
MAX_GAP_S = 1.5


def open_idle(port, n):
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex((HOST, port))
        socks.append(s)
    return socks


def wait_all_closed(socks, timeout):
    """Seconds until the server closed every socket (EOF or reset), or None; reads what comes."""
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    left, t0 = len(socks), time.monotonic()
    while left and time.monotonic() - t0 < timeout:
        for key, _ in sel.select(0.5):
            try:
                data = key.fileobj.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b''
            if not data:
                sel.unregister(key.fileobj)
                left -= 1
    sel.close()
    return None if left else time.monotonic() - t0


class FloodTest(unittest.TestCase):

    def test_idle_connections_and_connect_burst(self):
        require_tool('ffmpeg')
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard < 2 * COUNT + 1000:
            self.skipTest('descriptor limit %d too small for %d connections' % (hard, COUNT))
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        self.addCleanup(resource.setrlimit, resource.RLIMIT_NOFILE, (soft, hard))
        cfg = {'workers': 2, 'rtmp': {'handshake_timeout': '%ds' % TIMEOUT_S},
               'http': {'timeout': '%ds' % TIMEOUT_S}}
        with Rill(cfg) as rill:
            workers = rill.wait_workers(2)
            pub, players = start_healthy(self, rill, 5)

            t0 = time.monotonic()
            idle = open_idle(rill.rtmp_port, COUNT // 2) + open_idle(rill.http_port, COUNT // 2)
            burst_s = time.monotonic() - t0
            try:
                closed_after = wait_all_closed(idle, TIMEOUT_S * 4 + 10)
            finally:
                for s in idle:
                    s.close()
            # Players that join right after the flood play at once.
            before = len(players.players)
            players.add_rtmp('live', 'cam', 2)
            players.add_flv('live', 'cam', 2)
            self.assertTrue(rilltest.wait_until(lambda: all(p.last_media for p in players.snapshot()[before:]), 10),
                            'players after the flood got no media')
            snap = players.snapshot()
            worst = max(p.max_gap for p in snap)
            print('\nflood: %d idle connections opened in %.2f s, all closed after %s s; worst player gap %.2f s'
                  % (len(idle), burst_s, closed_after and round(closed_after, 2), worst))
            self.assertIsNotNone(closed_after, 'idle connections the server never closed')
            self.assertLessEqual(closed_after, TIMEOUT_S * 2 + 3)
            self.assertEqual([p for p in snap if p.closed], [], 'a player was cut')
            self.assertLessEqual(worst, MAX_GAP_S)
            self.assertIsNone(pub.poll(), 'the publisher was cut')
            self.assertEqual(sorted(rill.worker_pids()), sorted(workers))

    def test_slowloris_is_cut_at_the_header_timeout(self):
        with Rill({'workers': 1, 'http': {'timeout': '%ds' % TIMEOUT_S}}) as rill:
            s = socket.create_connection((HOST, rill.http_port), timeout=5)
            self.addCleanup(s.close)
            request = b'GET /live/cam.flv HTTP/1.1\r\nHost: x\r\nX-Slow: ' + b'a' * 100
            t0, cut = time.monotonic(), None
            for byte in request:  # one header byte every 0.25 s: evhttp's idle timeout never fires
                try:
                    s.sendall(bytes([byte]))
                    s.settimeout(0.25)
                    if s.recv(4096) == b'':
                        cut = time.monotonic() - t0
                        break
                except socket.timeout:
                    continue
                except OSError:
                    cut = time.monotonic() - t0
                    break
            print('\nslowloris: cut after %s s (http.timeout %d s)' % (cut and round(cut, 2), TIMEOUT_S))
            self.assertIsNotNone(cut, 'slowloris never cut')
            self.assertGreaterEqual(cut, TIMEOUT_S - 0.5)
            self.assertLessEqual(cut, TIMEOUT_S + 2)
            self.assertIn('no complete request within http.timeout', rill.log_text())


if __name__ == '__main__':
    unittest.main()
