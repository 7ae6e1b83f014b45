"""HEVC in HLS (docs/hls.md "HEVC"): H.265 published over Enhanced RTMP (`hvc1`, by the test's own
publisher, tests/integration/ertmp.py, and by rill-bench's E-RTMP mode, from a libx265 file) is carried in MPEG-TS segments
(stream_type 0x24) and in fMP4 segments (hvc1 + hvcC), with and without AAC audio: ffprobe finds
`hevc` in the segments and ffmpeg decodes them, neither printing a warning.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_hls_hevc
"""

import json
import os
import subprocess
import threading
import unittest

import ertmp
import rilltest
import test_bench
from hlsutil import close_rill, ended_playlist_media
from rilltest import Rill, require_tool, run

CASES = [('ts', True), ('ts', False), ('fmp4', True), ('fmp4', False)]  # (app, audio)
BENCH_CASES = ['ts', 'fmp4']  # rill-bench's E-RTMP publish mode (video only)


class HlsHevcTest(unittest.TestCase):

    def setUp(self):
        require_tool('ffmpeg')
        require_tool('ffprobe')
        if 'libx265' not in run(['ffmpeg', '-hide_banner', '-encoders'], timeout=30).stdout:
            self.skipTest('ffmpeg has no libx265')
        apps = {name: {'hls': {'enabled': True, 'fragment': '1s', 'window': 10, 'container': name}}
                for name in ('ts', 'fmp4')}
        self.rill = Rill({'apps': apps})
        self.addCleanup(lambda: close_rill(self, self.rill))

    def test_hevc_segments_probe_and_decode(self):
        video, aac = ertmp.make_hevc_media(seconds=4, audio=True)
        threads, benches = [], []
        bench = test_bench.bench_binary()
        for app in BENCH_CASES:
            benches.append(subprocess.Popen([bench, 'rtmp-publish', 'rtmp://%s:%d/%s/bench' % (
                rilltest.HOST, self.rill.rtmp_port, app), '-c', '1', '-i', video, '-d', '4', '--quiet'],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        for app, audio in CASES:
            name = 'a' if audio else 'v'
            t = threading.Thread(target=ertmp.publish_hevc, args=(rilltest.HOST, self.rill.rtmp_port, app, name,
                                                                  video, aac if audio else None))
            t.start()
            threads.append(t)
        for t in threads:
            t.join(60)
        for b in benches:
            _, err = b.communicate(timeout=60)
            self.assertEqual(b.returncode, 0, err)
        for app, audio in CASES:
            with self.subTest(container=app, audio=audio):
                self.check(app, 'a' if audio else 'v', audio)
        for app in BENCH_CASES:
            with self.subTest(container=app, publisher='rill-bench'):
                self.check(app, 'bench', False)

    def check(self, app, name, audio):
        _, data = ended_playlist_media(self, self.rill, app, name)
        f = os.path.join(self.rill.tmpdir, '%s-%s.%s' % (app, name, 'ts' if app == 'ts' else 'mp4'))
        with open(f, 'wb') as out:
            out.write(data)
        probe = run(['ffprobe', '-v', 'warning', '-print_format', 'json', '-show_streams', f], timeout=60)
        self.assertEqual(probe.returncode, 0, probe.stderr)
        self.assertEqual(probe.stderr.strip(), '', 'ffprobe warned on %s:\n%s' % (f, probe.stderr))
        codecs = sorted(s['codec_name'] for s in json.loads(probe.stdout)['streams'])
        self.assertEqual(codecs, ['aac', 'hevc'] if audio else ['hevc'])
        dec = run(['ffmpeg', '-hide_banner', '-nostdin', '-v', 'warning', '-i', f, '-f', 'null', '-'], timeout=120)
        self.assertEqual(dec.returncode, 0, dec.stderr)
        self.assertEqual(dec.stderr.strip(), '', 'ffmpeg warned decoding %s:\n%s' % (f, dec.stderr))


if __name__ == '__main__':
    unittest.main()
