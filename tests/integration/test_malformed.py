"""The malformed-session corpus (malformed_cases.py, 80 cases) against a live 2-worker server
while a healthy publisher and players run: every malformed session is closed (at once, or by
handshake_timeout / idle_timeout / http.timeout / the worker-link request timeout), the players
never stall and nobody else is disconnected, no worker dies, and the workers' RSS stays bounded.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... python3 -m unittest -v test_malformed
"""

import concurrent.futures
import socket
import sys
import time
import unittest

import malformed_cases
import rilltest
from healthy import start_healthy
from rilltest import Rill, require_tool
from test_memory import rss_kb

HOST = '127.0.0.1'
CLOSE_WITHIN_S = 10.0
BATCH = 10
MAX_GAP_S = 1.5
RSS_BOUND_KB = 64 * 1024


def wait_closed(sock, timeout):
    """Seconds until the server closed sock (EOF or reset), or None."""
    t0 = time.monotonic()
    sock.settimeout(0.5)
    while time.monotonic() - t0 < timeout:
        try:
            if not sock.recv(65536):
                return time.monotonic() - t0
        except socket.timeout:
            continue
        except OSError:
            return time.monotonic() - t0
    return None


def run_case(rill, name, fn):
    try:
        sock = fn(rill)
    except socket.timeout as e:
        return name, None, 'setup timed out: %r' % e
    except (OSError, EOFError, Exception) as e:  # the server closed during the setup: fine
        return name, 0.0, 'closed during setup (%s)' % type(e).__name__
    try:
        return name, wait_closed(sock, CLOSE_WITHIN_S), ''
    finally:
        sock.close()


class MalformedTest(unittest.TestCase):

    def test_corpus(self):
        require_tool('ffmpeg')
        cases = malformed_cases.all_cases()
        self.assertGreaterEqual(len(cases), 60)
        cfg = {'workers': 2, 'shutdown_timeout': '2s',
               'rtmp': {'handshake_timeout': '2s', 'idle_timeout': '3s', 'ping_interval': '1s',
                        'max_message_size': '%dB' % malformed_cases.MAX_MESSAGE},
               'http': {'timeout': '2s'}}
        with Rill(cfg) as rill:
            workers = rill.wait_workers(2)
            pub, players = start_healthy(self, rill, 4, settle_s=2)
            before = sum(rss_kb(p) for p in workers)
            results, peak = [], before
            t0 = time.monotonic()
            for i in range(0, len(cases), BATCH):
                with concurrent.futures.ThreadPoolExecutor(BATCH) as ex:
                    results += list(ex.map(lambda c: run_case(rill, *c), cases[i:i + BATCH]))
                peak = max(peak, sum(rss_kb(p) for p in workers if rilltest.pid_alive(p)))
            elapsed = time.monotonic() - t0
            snap = players.snapshot()
            after = sum(rss_kb(p) for p in workers if rilltest.pid_alive(p))
            open_ = [(n, why) for n, t, why in results if t is None]
            slowest = sorted(((t, n) for n, t, _ in results if t is not None), reverse=True)[:3]
            print('\nmalformed: %d cases in %.1f s; slowest close %s; RSS %d -> peak %d -> %d kB; worst player gap %.2f s'
                  % (len(results), elapsed, slowest, before, peak, after, max(p.max_gap for p in snap)))
            self.assertEqual(open_, [], 'sessions the server never closed')
            self.assertEqual(sorted(rill.worker_pids()), sorted(workers), 'a worker died\n' + rill.log_tail(40))
            self.assertIsNone(pub.poll(), 'the healthy publisher was cut')
            self.assertEqual([p for p in snap if p.closed], [], 'a healthy player was cut')
            self.assertLessEqual(max(p.max_gap for p in snap), MAX_GAP_S, 'a healthy player stalled')
            self.assertTrue(all(time.monotonic() - p.last_media < MAX_GAP_S for p in snap))
            self.assertLessEqual(peak, before + RSS_BOUND_KB, 'RSS not bounded')


if __name__ == '__main__':
    unittest.main()
