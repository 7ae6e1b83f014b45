"""Binary upgrade refusals and --force (issue 32 part 1; docs/operations.md, "Binary upgrade"):
rill-upgrade-incompatible is rill with another worker link version (CMakeLists.txt). With it at
the binary's path, `rill -s upgrade` is refused (the new master logs why and exits, the CLI exits
1) and the running service, its publisher and its player go on; `rill -s upgrade --force` then
restarts into it through the same listening sockets: a connect every 20 ms all along is never
refused (at most the odd request an old worker had accepted is cut by its fast stop), the new
version answers and a new publisher and player work. The daemon runs with NOTIFY_SOCKET naming a
datagram socket the test reads, as systemd's sd_notify protocol has it: after the upgrade it gets
MAINPID=<the new master> with READY=1 (docs/operations.md, "systemd").

Run:  cd tests/integration && RILL_BUILD_DIR=.../build/release python3 -m unittest -v test_upgrade_refusals
"""

import os
import re
import socket
import threading
import time
import unittest

import rilltest
from rilltest import BUILD_DIR, HOST, Rill, wait_until
from test_upgrade import UpgradeHarness, put_binary

INCOMPATIBLE_VERSION = '0.1.0+incompatible-link'


def incompatible_binary():
    path = os.path.join(BUILD_DIR or os.path.dirname(rilltest.rill_binary()), 'rill-upgrade-incompatible')
    if not os.access(path, os.X_OK):
        raise unittest.SkipTest('rill-upgrade-incompatible not built')
    return path


class FlvReader:
    """An HTTP-FLV player on a thread: counts the bytes it reads until the server closes."""

    def __init__(self, url_path, port):
        self.bytes = 0
        self.closed = False
        self.sock = socket.create_connection((HOST, port), timeout=5)
        self.sock.sendall(b'GET %s HTTP/1.1\r\nHost: x\r\n\r\n' % url_path.encode())
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                self.bytes += len(chunk)
        except OSError:
            pass
        self.closed = True

    def grows(self, within=3.0):
        before = self.bytes
        return wait_until(lambda: self.bytes > before + 1000, within)

    def close(self):
        self.sock.close()
        self.thread.join(5)


class Connector:
    """New connects to a port every 20 ms on a thread, each asking /healthz. `refused`: connects that
    failed (the service down for new clients); `cut`: connections accepted and closed unanswered (an
    old worker's fast stop took them, which a forced restart may do to what it has accepted)."""

    def __init__(self, port):
        self.port = port
        self.done = threading.Event()
        self.attempts = 0
        self.refused = []
        self.cut = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.done.is_set() and self.attempts < 2000:
            self.attempts += 1
            try:
                s = socket.create_connection((HOST, self.port), timeout=5)
            except OSError as e:
                self.refused.append(repr(e))
                continue
            try:
                s.settimeout(5)
                s.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
                head = s.recv(64)
                if not head.startswith(b'HTTP/1.1 200'):
                    self.cut.append('answered %r' % head[:20])
            except OSError as e:
                self.cut.append(repr(e))
            finally:
                s.close()
            time.sleep(0.02)

    def stop(self):
        self.done.set()
        self.thread.join(10)


class UpgradeRefusalTest(UpgradeHarness):
    def config(self):
        return {'workers': 2, 'shutdown_timeout': '2s'}

    def start_rill(self):
        self.notify_path = os.path.join(self.bindir, 'notify')
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        self.addCleanup(self.notify.close)
        return Rill(self.config(), env={'NOTIFY_SOCKET': self.notify_path})

    def notifications(self, timeout):
        """Every sd_notify datagram until `timeout` s pass without one, each as its fields (newline-
        separated VARIABLE=value assignments, sd_notify(3))."""
        got = []
        self.notify.settimeout(timeout)
        try:
            while len(got) < 100:
                text = self.notify.recv(4096).decode()
                got.append(dict(line.split('=', 1) for line in text.split('\n') if '=' in line))
        except socket.timeout:
            pass
        return got

    def publish(self, name):
        pub = rilltest.ffmpeg_publish(self.rill.rtmp_url(name), rilltest.make_test_media())
        self.addCleanup(rilltest.stop_process, pub)
        return pub

    def test_incompatible_binary_is_refused_then_forced(self):
        self.builds['incompatible'] = incompatible_binary()
        self.assertIn(('1', str(self.rill.pid)), [(f.get('READY'), f.get('MAINPID')) for f in self.notifications(0.5)])
        self.publish('a')
        self.assertTrue(self.rill.wait_for_log(r'publishing live/a', 15), self.rill.log_tail())
        player = FlvReader('/live/a.flv', self.rill.http_port)
        self.addCleanup(player.close)
        self.assertTrue(player.grows(), 'the player gets nothing')

        # (a) Refused: the CLI says it failed, the new master's log line says why, nothing moves.
        put_binary(self.builds['incompatible'], self.path)
        offset = self.rill.log_offset()
        p = self.cli_upgrade()
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn('binary upgrade failed', p.stderr)
        running = rilltest.run([self.builds['rill'], '-v']).stdout.split()[1]
        refusal = ('binary upgrade refused: the running rill %s speaks worker link version 1, this binary '
                   '(rill %s) version 1000; `rill -s upgrade --force` restarts into this binary instead, '
                   'dropping every client' % (running, INCOMPATIBLE_VERSION))
        self.assertTrue(wait_until(lambda: refusal in self.rill.log_since(offset), 5), self.rill.log_since(offset))
        self.assertTrue(self.rill.wait_for_log(r'binary upgrade failed: the new master \(pid \d+, \S+\) exited with '
                                               r'code 1 before it was ready', 5, since=offset),
                        self.rill.log_since(offset))
        self.assertEqual(self.master_pid(), self.rill.pid)
        self.assertEqual(self.server().get('version'), running)
        self.assertFalse(player.closed)
        self.assertTrue(player.grows(), 'the player stopped after the refused upgrade')
        self.notifications(0.2)  # the refusal's READY=1 STATUS=binary upgrade failed, still serving

        # (b) Forced: a restart through the same sockets; new connects are never refused.
        connector = Connector(self.rill.http_port)
        time.sleep(0.3)
        offset = self.rill.log_offset()
        t0 = time.monotonic()
        p = self.cli_upgrade(force=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn('rill: upgraded: the new master is pid', p.stdout)
        new = int(re.search(r'the new master is pid (\d+)', p.stdout).group(1))
        self.masters.append(new)
        self.assertTrue(self.rill.wait_for_log(r'binary upgrade forced: .* a restart', 5, since=offset),
                        self.rill.log_since(offset))
        self.assertTrue(wait_until(lambda: self.server().get('version') == INCOMPATIBLE_VERSION, 5),
                        self.rill.log_since(offset))
        self.assertTrue(wait_until(lambda: not rilltest.pid_alive(self.rill.pid), 10), 'the old master stays')
        time.sleep(0.5)
        connector.stop()
        print('\nforced upgrade: %.2f s to the answer; %d connects during it, %d refused, %d cut' % (
            time.monotonic() - t0, connector.attempts, len(connector.refused), len(connector.cut)))
        self.assertGreater(connector.attempts, 20)
        self.assertEqual(connector.refused, [], 'connects failed during the forced upgrade')
        self.assertLessEqual(len(connector.cut), 2, connector.cut)
        self.assertTrue(wait_until(lambda: player.closed, 5), 'the old generation kept its player')
        self.assertEqual(self.master_pid(), new)

        # A new publisher and a new player, on the new master's workers.
        self.publish('b')
        self.assertTrue(self.rill.wait_for_log(r'publishing live/b', 15, since=offset), self.rill.log_since(offset))
        fresh = FlvReader('/live/b.flv', self.rill.http_port)
        self.addCleanup(fresh.close)
        self.assertTrue(fresh.grows(5), 'the new player gets nothing')

        # (c) systemd: the old master told it the new main pid, and that it is ready.
        told = [f for f in self.notifications(0.5) if 'MAINPID' in f]
        self.assertTrue(told, 'no MAINPID= after the upgrade')
        self.assertEqual((told[0].get('MAINPID'), told[0].get('READY')), (str(new), '1'), told)


if __name__ == '__main__':
    unittest.main()
