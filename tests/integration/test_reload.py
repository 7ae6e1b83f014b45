"""Zero-drop reload (docs/operations.md, "Reload"): an old worker generation keeps its publishers
and the players of live streams after SIGHUP; new workers pull old-generation streams through
the worker link; a republish lands on the new generation and the players follow; old workers
exit once nothing they serve carries media.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... python3 -m unittest -v test_reload
"""

import os
import re
import sys
import threading
import time
import unittest

import rilltest
from hlsutil import Playlist, hls_config, request
from muxplayers import MuxPlayers
from rilltest import Rill, require_tool, wait_until
from test_worker_link import make_relay_media

HOST = '127.0.0.1'
WORKERS = 2
SHUTDOWN_S = 2
MAX_STALL_S = 1.0  # the bound; measured figures are printed
STALL_MARGIN_S = 0.5  # a loaded 2-core CI machine delays the Python reader itself


class HlsWatcher(threading.Thread):
    """Polls the playlist on a fresh connection every 0.5 s and fetches its newest segment;
    records failures and whether the media sequence ever went backwards."""

    def __init__(self, port, path):
        super().__init__(daemon=True)
        self.port, self.path = port, path
        self.stop_ev = threading.Event()
        self.errors = []
        self.sequences = []
        self.segments = 0

    def run(self):
        while not self.stop_ev.wait(0.5):
            try:
                status, h, body = request(self.port, 'GET', self.path, timeout=5)
                if status != 200:
                    self.errors.append('playlist %d at %.1f from worker %s: %r' % (
                        status, time.monotonic(), h.get('x-rill-worker'), body[:200]))
                    continue
                pl = Playlist(body.decode())
                if not pl.segments:
                    continue
                self.sequences.append(pl.media_sequence)
                uri = pl.segments[-1]['uri']
                path = uri if uri.startswith('/') else os.path.dirname(self.path) + '/' + uri
                status, _h, seg = request(self.port, 'GET', path, timeout=5)
                if status != 200 or not seg:
                    self.errors.append('segment %s: %d' % (path, status))
                else:
                    self.segments += 1
            except OSError as e:
                self.errors.append(repr(e))

    def backwards(self):
        return [(a, b) for a, b in zip(self.sequences, self.sequences[1:]) if b < a]


class ReloadTest(unittest.TestCase):
    workers = WORKERS

    def setUp(self):
        require_tool('ffmpeg')
        self.media = make_relay_media()
        cfg = hls_config()
        cfg.update({'workers': self.workers, 'shutdown_timeout': '%ds' % SHUTDOWN_S})
        self.rill = Rill(cfg)
        self.addCleanup(self._close_rill)
        self.gen0 = set(self.rill.wait_workers(self.workers))
        self.players = None

    def _close_rill(self):
        if self.players:
            self.players.stop()
        failed = not getattr(self._outcome, 'success', True)
        try:
            if self.rill.running():
                self.rill.stop()
        finally:
            if failed:
                sys.stderr.write('\n--- rill log ---\n%s\n' % self.rill.log_tail(80))
            self.rill.close(failed=failed)

    def publish(self, name='cam'):
        pub = rilltest.ffmpeg_publish(self.rill.rtmp_url(name), self.media)
        self.addCleanup(rilltest.stop_process, pub)
        self.assertTrue(self.rill.wait_for_log(r'rtmp: \S+ publishing live/%s' % name, 15),
                        'no publish logged\n' + self.rill.diagnostics())
        return pub

    def new_players_play(self, rtmp, flv, timeout=10):
        """Adds players; True once every one of them has had media."""
        before = len(self.players.players)
        self.players.add_rtmp('live', 'cam', rtmp)
        self.players.add_flv('live', 'cam', flv)

        def all_play():
            snap = self.players.snapshot()[before:]
            return all(s.last_media is not None for s in snap)
        return wait_until(all_play, timeout, 0.1)

    def test_three_reloads_drop_nothing(self):
        self.publish()
        self.players = MuxPlayers(HOST, self.rill.rtmp_port, self.rill.http_port, max_frames=10)
        self.players.start()
        self.assertTrue(self.new_players_play(24, 12, 15), 'players did not start\n' + self.rill.diagnostics())
        self.assertTrue(wait_until(lambda: request(self.rill.http_port, 'GET', '/live/cam.m3u8')[0] == 200, 15, 0.3),
                        'no HLS playlist\n' + self.rill.diagnostics())
        hls = HlsWatcher(self.rill.http_port, '/live/cam.m3u8')
        hls.start()
        self.addCleanup(hls.stop_ev.set)
        time.sleep(2)

        generations = [self.gen0]
        reload_times = []
        for i in range(3):
            reload_times.append(round(time.monotonic(), 1))
            self.assertTrue(self.rill.reload(), 'reload %d failed\n%s' % (i + 1, self.rill.diagnostics()))
            time.sleep(0.5)
            # New players of the old generation's stream play at once, on the new generation.
            self.assertTrue(self.new_players_play(4, 2), 'new players after reload %d got no media\n%s' % (
                i + 1, self.rill.diagnostics()))
            current = set(wait_until(lambda: self._generation_pids(i + 1), 5) or [])
            self.assertEqual(len(current), self.workers, 'generation %d: %s' % (i + 1, self.rill.workers()))
            generations.append(current)
            time.sleep(4.5)

        snap = self.players.snapshot()
        now = time.monotonic()
        closed = [s for s in snap if s.closed]
        worst = max(s.max_gap for s in snap)
        late = [now - s.last_media for s in snap if s.last_media is None or now - s.last_media > MAX_STALL_S]
        print('\nreload: %d players, worst gap between media messages %.3f s; HLS: %d segments, sequences %s' % (
            len(snap), worst, hls.segments, hls.sequences[-1:] and (hls.sequences[0], hls.sequences[-1])))
        self.assertEqual(closed, [], 'players disconnected by a reload\n' + self.rill.diagnostics())
        self.assertLessEqual(worst, MAX_STALL_S + STALL_MARGIN_S, 'a player stalled\n' + self.rill.log_tail(40))
        self.assertEqual(late, [], 'players without recent media')
        hls.stop_ev.set()
        hls.join(10)
        self.assertEqual(hls.errors, [], 'HLS requests failed across reloads (reloads at %s)' % reload_times)
        self.assertEqual(hls.backwards(), [], 'HLS media sequence went backwards')
        self.assertGreater(hls.segments, 5)

        # Old workers still serve their players; the owner (generation 0) still has the publisher.
        alive = set(self.rill.worker_pids())
        self.assertTrue(alive & self.gen0, 'the publisher\'s generation-0 worker is gone: %s' % self.rill.workers())
        self.assertNotIn('closed (worker shutting down)', self.rill.log_text())

    def _generation_pids(self, gen):
        pids = [int(p) for p in self._log_pids(gen)]
        live = set(self.rill.worker_pids())
        return [p for p in pids if p in live] if len(pids) == self.workers else None

    def _log_pids(self, gen):
        return re.findall(r'started worker \d+ \(pid (\d+), generation %d\)' % gen, self.rill.log_text())

    def test_republish_lands_on_new_generation_and_old_workers_exit(self):
        pub = self.publish()
        self.players = MuxPlayers(HOST, self.rill.rtmp_port, self.rill.http_port, max_frames=10)
        self.players.start()
        self.assertTrue(self.new_players_play(8, 4, 15), 'players did not start\n' + self.rill.diagnostics())
        self.assertTrue(self.rill.reload())
        gen1 = set(wait_until(lambda: self._generation_pids(1), 5) or [])
        self.assertEqual(len(gen1), self.workers)
        time.sleep(1)
        self.assertEqual(set(self.rill.worker_pids()), self.gen0 | gen1, 'old workers left with live players')

        def playlist():
            status, _h, body = request(self.rill.http_port, 'GET', '/live/cam.m3u8')
            return Playlist(body.decode()) if status == 200 else None
        self.assertTrue(wait_until(lambda: (playlist() or Playlist('')).segments, 15, 0.3), 'no HLS playlist')
        last_before = playlist().segments[-1]['seq']

        # The publisher reconnects: it can only land on generation 1; the players (on generation
        # 0) follow it through the worker link, without reconnecting.
        offset = self.rill.log_offset()
        rilltest.stop_process(pub)
        pub2 = rilltest.ffmpeg_publish(self.rill.rtmp_url('cam'), self.media)
        self.addCleanup(rilltest.stop_process, pub2)
        m = self.rill.wait_for_log(r'\[worker (\d+)\] rtmp: \S+ publishing live/cam', 15, since=offset)
        self.assertTrue(m, 'no republish\n' + self.rill.diagnostics())
        resumed_after = time.monotonic()
        self.assertTrue(wait_until(lambda: all(s.last_media and s.last_media > resumed_after + 0.2
                                               for s in self.players.snapshot()), 15, 0.2),
                        'players did not follow the republish\n' + self.rill.diagnostics())
        self.assertEqual([s for s in self.players.snapshot() if s.closed], [])
        # HLS continues the media sequence on the new owner (another process, another store).
        self.assertTrue(wait_until(lambda: (playlist() and playlist().segments
                                            and any(x['seq'] > last_before for x in playlist().segments)), 15, 0.3),
                        'no new HLS segment after the republish')
        pl = playlist()
        self.assertGreater(pl.media_sequence, 0, pl.text)
        new_segs = [x for x in pl.segments if x['seq'] > last_before]
        self.assertTrue(new_segs[0]['discontinuity'] or new_segs[0]['seq'] == last_before + 1, pl.text)
        m = re.search(r'continues at media sequence (\d+)', self.rill.log_text())
        self.assertTrue(m and int(m.group(1)) > last_before, 'HLS restarted its media sequence')

        # Old workers keep players that carry media; once the players leave they exit.
        self.players.stop()
        self.players = None
        self.assertTrue(wait_until(lambda: not (set(self.rill.worker_pids()) & self.gen0), SHUTDOWN_S + 10, 0.2),
                        'generation 0 did not exit once its players left: %s\n%s' % (
                            self.rill.workers(), self.rill.log_tail(30)))
        self.assertEqual(set(self.rill.worker_pids()), gen1)

    def test_old_worker_exits_when_its_last_publisher_leaves(self):
        pub = self.publish()
        self.assertTrue(self.rill.reload())
        gen1 = set(wait_until(lambda: self._generation_pids(1), 5) or [])
        time.sleep(1)
        # Only the owner of the publisher is left of generation 0 (the other one had nothing).
        left = set(self.rill.worker_pids()) & self.gen0
        self.assertEqual(len(left), 1, self.rill.workers())
        rilltest.stop_process(pub)
        self.assertTrue(wait_until(lambda: set(self.rill.worker_pids()) == gen1, SHUTDOWN_S + 10, 0.2),
                        'the old owner did not exit after its publisher left: %s' % self.rill.workers())



class SingleWorkerReloadTest(ReloadTest):
    """The same reloads with `workers: 1`: the new worker reaches the old one's stream through the
    worker link too (StreamLocator relays from the second generation on)."""
    workers = 1
    test_republish_lands_on_new_generation_and_old_workers_exit = None
    test_old_worker_exits_when_its_last_publisher_leaves = None


if __name__ == '__main__':
    unittest.main()
