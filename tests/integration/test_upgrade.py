"""Binary upgrade without a drop (issue 32 part 1; docs/operations.md, "Binary upgrade"):
`rill -s upgrade` execs the binary at its path again with the listening sockets and the shared
areas; the old generation retires as in a reload. Two builds that differ only in their version
string (rill and rill-upgrade-peer, both copied into a temp dir and swapped at one path as a
package upgrade would) are upgraded into each other twice under rill-bench load: 50 RTMP, 20
HTTP-FLV and 5 HLS players on 2 streams with 2 workers. Between the two, a broken binary (a script
that exits 1) at the path leaves the running service serving, and the retry works.

Run:  cd tests/integration && RILL_BUILD_DIR=.../build/release python3 -m unittest -v test_upgrade
"""

import os
import shutil
import signal
import sys
import time
import unittest

import rilltest
import test_api
from hlsutil import hls_config
from rilltest import BUILD_DIR, Rill, require_tool, wait_until
from test_bench import bench_binary, finish_bench, start_bench
from test_memory import sanitized

HOST = '127.0.0.1'
WORKERS = 2
STREAMS = ('a', 'b')
RTMP_PER_STREAM, FLV_PER_STREAM, HLS_PLAYERS = 25, 10, 5
RUN_S = 32  # the players' run: both upgrades and the failed one happen inside it
MAX_GAP_MS = 200  # the bound, for the plain build
MAX_GAP_SANITIZED_MS = 600  # ASan+UBSan slow every worker down; that pass checks correctness


def peer_binary():
    path = os.path.join(BUILD_DIR or os.path.dirname(rilltest.rill_binary()), 'rill-upgrade-peer')
    if not os.access(path, os.X_OK):
        raise unittest.SkipTest('rill-upgrade-peer not built')
    return path


def put_binary(src, dst):
    """Replace the file at dst the way dpkg does: write a new file, rename it over the old one
    (the running master's inode stays, the path names the new file)."""
    tmp = dst + '.new'
    shutil.copyfile(src, tmp)
    os.chmod(tmp, 0o755)
    os.replace(tmp, dst)


class UpgradeHarness(unittest.TestCase):
    """A daemon run from a path of its own (self.path) that tests swap binaries at; the cleanup
    stops every master generation. Subclasses give config() and may extend setUp."""

    def config(self):
        raise NotImplementedError

    def setUp(self):
        require_tool('ffmpeg')
        self.bindir = os.path.join(rilltest._short_tmp_base(), 'rill-upgrade-bin-%d' % os.getpid())
        os.makedirs(self.bindir, exist_ok=True)
        self.addCleanup(shutil.rmtree, self.bindir, True)
        self.builds = {'rill': rilltest.rill_binary(), 'peer': peer_binary()}
        self.path = os.path.join(self.bindir, 'rill')
        put_binary(self.builds['rill'], self.path)
        saved = os.environ.get('RILL_BIN')
        os.environ['RILL_BIN'] = self.path  # the daemon runs from the swapped path
        self.addCleanup(lambda: os.environ.__setitem__('RILL_BIN', saved) if saved else os.environ.pop('RILL_BIN'))
        self.rill = self.start_rill()
        self.masters = [self.rill.pid]
        self.addCleanup(self._stop_all)

    def start_rill(self):
        return Rill(self.config())

    def _stop_all(self):
        """The current master stops its workers; each older master follows its successor."""
        failed = not getattr(self._outcome, 'success', True)
        current = None
        try:
            with open(self.rill.pid_file) as f:
                current = int(f.read().strip())
        except (OSError, ValueError):
            pass
        if current and rilltest.pid_alive(current):
            os.kill(current, signal.SIGTERM)
        wait_until(lambda: not any(rilltest.pid_alive(p) and rilltest.proc_cmdline(p).startswith('rill: master')
                                   for p in self.masters), 10)
        for p in self.masters:  # whatever is left (a failed run)
            if rilltest.pid_alive(p) and rilltest.proc_cmdline(p).startswith('rill: '):
                for d in rilltest.descendants(p) + [p]:
                    try:
                        os.kill(d, signal.SIGKILL)
                    except OSError:
                        pass
        if failed:
            sys.stderr.write('\n--- rill log ---\n%s\n' % self.rill.log_tail(80))
        self.rill.close(failed=failed)

    def master_pid(self):
        with open(self.rill.pid_file) as f:
            return int(f.read().strip())

    def server(self):
        status, _h, body = test_api.api(self.rill, 'GET', '/api/v1/server', token=None)
        self.assertEqual(status, 200, body)
        return body

    def cli_upgrade(self, force=False):
        """`rill -s upgrade [--force]`, run from the build (the file at the path may be the broken one)."""
        force_flag = ['--force'] if force else []
        return rilltest.run([self.builds['rill'], '-s', 'upgrade', '-p', self.rill.pid_file] + force_flag, timeout=10)

    def upgrade(self, build, force=False):
        """Swap the binary at the path for BUILD, `rill -s upgrade`, wait for the hand-over."""
        put_binary(self.builds[build], self.path)
        before = self.master_pid()
        offset = self.rill.log_offset()
        p = self.cli_upgrade(force)
        self.assertEqual(p.returncode, 0, p.stderr)  # it waits for the master's answer
        self.assertIn('rill: upgraded: the new master is pid', p.stdout)
        self.assertTrue(self.rill.wait_for_log(r'binary upgrade: the new master \(pid \d+\) is ready', 15, since=offset),
                        'no hand-over\n' + self.rill.log_since(offset))
        self.assertTrue(wait_until(lambda: self.master_pid() != before, 5), 'the pid file did not move')
        new = self.master_pid()
        self.masters.append(new)
        self.assertTrue(os.path.exists(self.rill.pid_file + '.oldbin'))
        version = rilltest.run([self.builds[build], '-v']).stdout.split()[1]
        self.assertTrue(wait_until(lambda: self.server().get('version') == version, 5),
                        'the API does not report %s' % version)
        return new, version


class UpgradeTest(UpgradeHarness):
    def config(self):
        cfg = hls_config()
        cfg.update({'workers': WORKERS, 'shutdown_timeout': '2s'})
        return cfg

    def setUp(self):
        bench_binary()
        self.media = rilltest.make_test_media(seconds=10, gop=25)
        super().setUp()

    def new_players_play(self, new_master, version):
        """Players that come after an upgrade play, served by the new master's workers."""
        probe = start_bench(*['rtmp-play', self.rill.rtmp_url('a'), '-c', '2', '-d', '4'])
        new_workers = set(rilltest.proc_children(new_master))

        def on_new_workers():
            status, _h, clients = test_api.api(self.rill, 'GET', '/api/v1/clients', token=None)
            rows = clients.get('items', []) if status == 200 else []
            return sum(1 for c in rows if c.get('worker_pid') in new_workers) >= 2
        self.assertTrue(wait_until(on_new_workers, 4, 0.2), 'no player on the new workers')
        report = finish_bench(probe, 15)
        self.assertEqual((report['connections']['ok'], report['connections']['with_video']), (2, 2), report)
        _s, _h, text = test_api.api(self.rill, 'GET', '/metrics', token=None)
        self.assertIn('rill_build_info{version="%s"} 1' % version, text)

    def test_two_upgrades_drop_nobody_and_a_broken_binary_changes_nothing(self):
        for name in STREAMS:
            pub = rilltest.ffmpeg_publish(self.rill.rtmp_url(name), self.media)
            self.addCleanup(rilltest.stop_process, pub)
        for name in STREAMS:
            self.assertTrue(self.rill.wait_for_log(r'publishing live/%s' % name, 15), self.rill.diagnostics())
        self.assertTrue(wait_until(lambda: rilltest.http_get(self.rill.http_url('/live/a.m3u8'))[0] == 200, 15, 0.3),
                        'no HLS playlist')
        benches = []
        for name in STREAMS:
            benches.append(('rtmp ' + name, start_bench(*['rtmp-play', self.rill.rtmp_url(name),
                                                         '-c', str(RTMP_PER_STREAM), '-d', str(RUN_S)])))
            benches.append(('flv ' + name, start_bench(*['flv-play', self.rill.http_url('/live/%s.flv' % name),
                                                        '-c', str(FLV_PER_STREAM), '-d', str(RUN_S)])))
        benches.append(('hls a', start_bench(*['hls-play', self.rill.http_url('/live/a.m3u8'),
                                              '-c', str(HLS_PLAYERS), '-d', str(RUN_S)])))
        started = time.monotonic()
        time.sleep(5)

        # 1. To the other build.
        first, version = self.upgrade('peer')
        self.assertEqual(version, '0.1.0+upgrade-test')
        self.new_players_play(first, version)

        # 2. A broken binary at the path: the running service keeps serving, nothing moves.
        with open(self.path + '.new', 'w') as f:
            f.write('#!/bin/sh\nexit 1\n')
        os.chmod(self.path + '.new', 0o755)
        os.replace(self.path + '.new', self.path)
        offset = self.rill.log_offset()
        p = self.cli_upgrade()
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn('binary upgrade failed', p.stderr)
        self.assertTrue(self.rill.wait_for_log(r'binary upgrade failed: the new master \(pid \d+, \S+\) exited with '
                                               r'code 1 before it was ready', 10, since=offset),
                        self.rill.log_since(offset))
        self.assertEqual(self.master_pid(), first)
        self.assertFalse(os.path.exists(self.rill.pid_file + '.oldbin'))
        self.assertEqual(self.server().get('version'), version)
        time.sleep(2)

        # 3. The retry, back to the first build.
        second, version = self.upgrade('rill')
        self.assertNotEqual(version, '0.1.0+upgrade-test')
        self.new_players_play(second, version)

        reports = [(label, finish_bench(b, RUN_S + 30)) for label, b in benches]
        print('\nupgrade: %.1f s of load; %s' % (time.monotonic() - started, '; '.join(
            '%s: ok %d, dropped %d, longest gap %s ms' % (label, r['connections']['ok'], r['connections']['dropped'],
                                                         r['longest_gap_ms']) for label, r in reports)))
        for label, r in reports:
            c = r['connections']
            self.assertEqual((c['failed'], c['dropped']), (0, 0), '%s: %s' % (label, r))
            self.assertEqual(c['ok'], c['target'], '%s: %s' % (label, r))
            self.assertNotIn('hls_seq_backwards', r['errors'], '%s: %s' % (label, r))
            if not label.startswith('hls'):
                bound = MAX_GAP_SANITIZED_MS if sanitized(self.builds['rill']) else MAX_GAP_MS
                self.assertLessEqual(r['longest_gap_ms'], bound, '%s: %s' % (label, r))


if __name__ == '__main__':
    unittest.main()
