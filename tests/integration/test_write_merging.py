"""Write merging (`merge_writes`, docs/architecture.md "Write merging"): a new player's first burst
(protocol replies, metadata, sequence headers, GOP cache) is never held, whatever the hold; the
default `auto` mode starts without holding.

Uses rill-bench (env RILL_BENCH_BIN, else RILL_BUILD_DIR/rill-bench); skipped when it is missing.
Every bench run is bounded by its own -d and a subprocess timeout.
"""

import time
import unittest

from rilltest import Rill, make_test_media
from test_bench import bench_binary, finish_bench, run_bench, start_bench

# A fixed hold far longer than a first burst may take on a loaded machine: a held burst would
# arrive after at least this long (and every reply before it would wait too).
HOLD_MS = 1000


class WriteMergingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        bench_binary()
        cls.media = make_test_media()

    def play_first_keyframe(self, config):
        """Publishes, lets the GOP cache fill, then starts 5 RTMP players: their report."""
        with Rill(config) as rill:
            url = rill.rtmp_url('merge')
            pub = start_bench('rtmp-publish', url, '-c', 1, '-i', self.media, '-d', 7)
            self.addCleanup(lambda: pub.poll() is None and pub.kill())
            time.sleep(1.5)
            play = run_bench('rtmp-play', url, '-c', 5, '-d', 3)
            finish_bench(pub)
        self.assertEqual(play['connections']['ok'], 5, play)
        self.assertEqual(play['connections']['with_video'], 5, play)
        self.assertEqual(play['errors'], {}, play)
        return play

    def test_first_burst_is_not_held_by_a_fixed_merge(self):
        play = self.play_first_keyframe({'merge_writes': '%dms' % HOLD_MS})
        # Connect, handshake, commands and the GOP cache: all sent in the iteration they were made.
        self.assertLess(play['first_keyframe_ms']['max'], HOLD_MS * 0.8, play)
        # Live frames after the burst are held: the players still get them.
        self.assertGreater(play['frames']['video'], 5 * 20, play)

    def test_auto_is_the_default_and_plays(self):
        play = self.play_first_keyframe(None)
        self.assertLess(play['first_keyframe_ms']['max'], HOLD_MS * 0.8, play)


if __name__ == '__main__':
    unittest.main()
