"""An edge's upstream closes `idle_close` after the last player of the stream on ANY worker left,
whatever the worker link's idle grace (docs/cluster.md, docs/workers.md).

Before the WATCHING note, the pulling worker counted another worker's link as a player until that
link closed (worker_link.idle_grace after its own last player), then lingered its own idle_close:
with idle_close 3 s the upstream closed 7.3-8.0 s after the last player left.

Run:  cd tests/integration && RILL_BIN=.../rill python3 -m unittest -v test_edge_idle_close
"""

import time
import unittest

from muxplayers import MuxPlayers
from rilltest import HOST, Rill, ffmpeg_publish, stop_process, wait_until
from test_worker_link import make_relay_media

IDLE_CLOSE_S = 3


class EdgeIdleCloseTest(unittest.TestCase):
    def setUp(self):
        self.origin = Rill({'apps': {'live': {}}, 'log': {'level': 'info'}}, name='origin')
        self.addCleanup(self.origin.close)
        p = ffmpeg_publish(self.origin.rtmp_url('cam'), media=make_relay_media())
        self.addCleanup(stop_process, p)
        self.assertTrue(self.origin.wait_for_log(r'publishing live/cam', 15))
        # The worker link keeps its default idle grace (5 s), longer than idle_close.
        self.edge = Rill({'workers': 2, 'log': {'level': 'info'},
                          'apps': {'live': {'edge': {'origins': [self.origin.rtmp_url('', 'live').rstrip('/')],
                                                     'connect_timeout': '1s',
                                                     'idle_close': '%ds' % IDLE_CLOSE_S}}}}, name='edge')
        self.addCleanup(self.edge.close)

    def test_upstream_closes_idle_close_after_the_last_player_on_any_worker(self):
        players = MuxPlayers(HOST, self.edge.rtmp_port, self.edge.http_port, max_frames=500)
        self.addCleanup(players.stop)
        players.add_rtmp('live', 'cam', 16)  # SO_REUSEPORT spreads them over both workers
        players.start()
        ok = wait_until(lambda: all(len(s.frames) >= 10 for s in players.snapshot()), 20)
        self.assertTrue(ok, 'frames per player: %s' % [len(s.frames) for s in players.snapshot()])
        self.assertTrue(self.edge.wait_for_log(r'worker link: sending live/cam to another worker', 5),
                        'players did not land on both workers:\n' + self.edge.log_text()[-2000:])
        off = self.edge.log_offset()
        t0 = time.monotonic()
        players.stop()
        self.assertTrue(self.edge.wait_for_log(r'edge-pull live/cam closed: closed by idle', IDLE_CLOSE_S + 10, off),
                        self.edge.log_since(off)[-3000:])
        closed_after = time.monotonic() - t0
        print('\n[edge] upstream closed %.2f s after the last player left (idle_close %d s, link grace 5 s)'
              % (closed_after, IDLE_CLOSE_S))
        # idle_close +- 0.5 s (two 200 ms ticks), + 0.3 s for the test's own log polling.
        self.assertGreaterEqual(closed_after, IDLE_CLOSE_S - 0.5)
        self.assertLessEqual(closed_after, IDLE_CLOSE_S + 0.5 + 0.3)


if __name__ == '__main__':
    unittest.main()
