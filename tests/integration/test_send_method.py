"""`send_method: io_uring` (docs/configuration.md, "Send method"): the same players, the same
bytes, with every flush batch handed to the kernel in one io_uring submission.

Two workers, so that players on the worker that does not own the stream are fed through the
worker link (a Unix socket, also written through the ring). Real clients: ffprobe over HTTP-FLV and
rtmpdump over RTMP decode the stream; rill-bench (env RILL_BENCH_BIN, else
RILL_BUILD_DIR/rill-bench) plays with 60 RTMP and 60 HTTP-FLV players and checks their bytes
(timestamps, tag sizes). Each client is bounded by its own duration and a subprocess timeout.
"""

import json
import os
import tempfile
import time
import unittest

from rilltest import Rill, http_get, make_test_media, require_tool, run, wait_until
from test_bench import bench_binary, finish_bench, run_bench, start_bench


def ring_refused_here():
    """Why this kernel refuses io_uring (None when it allows it): read from a one-worker Rill."""
    with Rill({'workers': 1, 'send_method': 'io_uring'}) as rill:
        status, _, body = http_get(rill.api_url('/api/v1/server'))
        if json.loads(body)['workers'][0]['send_method'] == 'io_uring':
            return None
        return [l for l in rill.log_text().splitlines() if 'io_uring unavailable' in l] or ['no reason logged']


class SendMethodTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        bench_binary()
        cls.media = make_test_media()

    def workers(self, rill):
        status, _, body = http_get(rill.api_url('/api/v1/server'))
        self.assertEqual(status, 200, body)
        return json.loads(body)['workers']

    def test_io_uring_serves_rtmp_and_http_flv_players_on_every_worker(self):
        refused = ring_refused_here()
        if refused:
            self.skipTest('this kernel refuses io_uring: %s' % refused)
        require_tool('ffprobe')
        require_tool('rtmpdump')
        with Rill({'workers': 2, 'send_method': 'io_uring'}) as rill:
            self.assertEqual([w['send_method'] for w in self.workers(rill)], ['io_uring', 'io_uring'])
            self.assertNotIn('io_uring unavailable', rill.log_text())
            url = rill.rtmp_url('ring')
            pub = start_bench('rtmp-publish', url, '-c', 1, '-i', self.media, '-d', 12)
            self.addCleanup(lambda: pub.poll() is None and pub.kill())
            time.sleep(1.5)
            rtmp = start_bench('rtmp-play', url, '-c', 60, '-d', 5)
            self.addCleanup(lambda: rtmp.poll() is None and rtmp.kill())
            # SO_REUSEPORT spreads the players: both workers send, one of them over the worker link.
            self.assertTrue(wait_until(lambda: all(w['sessions'] > 2 for w in self.workers(rill)), 4),
                            self.workers(rill))
            flv = run_bench('flv-play', rill.http_url('/live/ring.flv'), '-c', 60, '-d', 5)
            rtmp_report = finish_bench(rtmp)

            probe = run(['ffprobe', '-v', 'error', '-show_streams', '-of', 'json', rill.http_url('/live/ring.flv')],
                        timeout=30)
            self.assertEqual(probe.returncode, 0, probe.stderr)
            codecs = sorted(s['codec_name'] for s in json.loads(probe.stdout)['streams'])
            self.assertEqual(codecs, ['aac', 'h264'])

            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, 'dump.flv')
                dump = run(['rtmpdump', '-q', '-v', '-r', url, '-B', '2', '-o', out], timeout=30)
                self.assertTrue(os.path.exists(out), dump.stderr)
                probe = run(['ffprobe', '-v', 'error', '-count_frames', '-select_streams', 'v:0', '-show_entries',
                             'stream=codec_name,nb_read_frames', '-of', 'json', out], timeout=30)
                stream = json.loads(probe.stdout)['streams'][0]
                self.assertEqual(stream['codec_name'], 'h264')
                self.assertGreater(int(stream['nb_read_frames']), 25, probe.stdout)
            finish_bench(pub)

            for report, name in ((rtmp_report, 'rtmp'), (flv, 'flv')):
                self.assertEqual(report['connections']['ok'], 60, (name, report))
                self.assertEqual(report['connections']['with_video'], 60, (name, report))
                self.assertEqual(report['errors'], {}, (name, report))
                self.assertGreater(report['frames']['video'], 60 * 50, (name, report))

    def test_io_uring_is_the_default_and_sendmsg_an_option(self):
        refused = ring_refused_here()
        with Rill({'workers': 1}) as rill:
            self.assertEqual([w['send_method'] for w in self.workers(rill)], ['sendmsg' if refused else 'io_uring'])
        with Rill({'workers': 1, 'send_method': 'sendmsg'}) as rill:
            self.assertEqual([w['send_method'] for w in self.workers(rill)], ['sendmsg'])
            self.assertNotIn('io_uring', rill.log_text())


if __name__ == '__main__':
    unittest.main()
