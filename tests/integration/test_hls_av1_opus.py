"""AV1 + Opus over Enhanced RTMP (docs/hls.md "Codecs"): the test's own E-RTMP publisher
(tests/integration/ertmp.py) sends `av01` and `Opus` tags made from ffmpeg files (libaom-av1 in
IVF, libopus in Ogg, 160x90, 3 s). RTMP (declaring E-RTMP in connect) and HTTP-FLV players get
the tags byte-identical, an RTMP player that did not declare it gets NetStream.Play.Failed; the
stream's HLS is fMP4 (av01 + av1C, Opus + dOps) even under `container: ts`, and ffprobe reads
every published frame and packet from init + segments with the right codecs. A VP9 + Opus publish
gets the same, and so does rill-bench's AV1 + Opus publish (-i FILE.ivf --audio FILE.ogg). Two workers: players and HLS requests reach the stream's owner or the other
worker (over the worker link). hls.js in headless Chromium plays the AV1 stream when the browser test's tools are
there (skipped with the reason otherwise, or when this Chromium has no AV1 decoder).

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \\
          python3 -m unittest -v test_hls_av1_opus
"""

import hashlib
import http.client
import json
import os
import threading
import time
import unittest

import ertmp
import flvutil
import rilltest
import rtmpclient as rc
import test_bench
import test_browser_hls
from browserutil import play_page
from hlsutil import close_rill, ended_playlist_media, request
from rilltest import Rill, require_tool, run

FPS = 10
SECONDS = 3


def read_flv(port, path, out, stop):
    """Reads an HTTP-FLV body into out['data'] until the server ends it or `stop` is set (bounded
    by the socket timeout)."""
    conn = http.client.HTTPConnection(rilltest.HOST, port, timeout=5)
    try:
        conn.request('GET', path)
        resp = conn.getresponse()
        out['status'] = resp.status
        data = b''
        while not stop.is_set():
            try:
                chunk = resp.read1(65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        out['data'] = data
    finally:
        conn.close()


class HlsAv1OpusTest(unittest.TestCase):

    def setUp(self):
        require_tool('ffmpeg')
        require_tool('ffprobe')
        encoders = run(['ffmpeg', '-hide_banner', '-encoders'], timeout=30).stdout
        for enc in ('libaom-av1', 'libvpx-vp9', 'libopus'):
            if enc not in encoders:
                self.skipTest('ffmpeg has no %s' % enc)
        apps = {name: {'hls': {'enabled': True, 'fragment': '1s', 'window': 10, 'container': name}}
                for name in ('ts', 'fmp4')}
        self.rill = Rill({'apps': apps, 'workers': 2})  # HLS requests reach the owner or the other worker
        self.addCleanup(lambda: close_rill(self, self.rill))

    def publish_and_play(self, app, name, tags=None, publish=None):
        """Publishes `tags` at real time (or runs `publish()`) while an RTMP and an HTTP-FLV player
        watch; returns (RTMP media digests by type, FLV tags)."""
        publish = publish or (lambda: ertmp.publish_tags(rilltest.HOST, self.rill.rtmp_port, app, name, tags, 1.0))
        pub = threading.Thread(target=publish)
        pub.start()
        time.sleep(0.4)  # the stream exists; the players join in its first GOP (1 s)
        # E-RTMP v2: a player lists the FourCCs it reads in connect (fourCcList).
        player = rc.Player(rilltest.HOST, self.rill.rtmp_port, app, name,
                           connect_extra={'fourCcList': ['av01', 'vp09', 'Opus']})
        player.start()
        legacy = rc.Player(rilltest.HOST, self.rill.rtmp_port, app, name)  # declares nothing
        legacy.start()
        flv, stop = {}, threading.Event()
        reader = threading.Thread(target=read_flv, args=(self.rill.http_port, '/%s/%s.flv' % (app, name), flv, stop))
        reader.start()
        pub.join(30)
        self.assertFalse(pub.is_alive(), 'publisher hung')
        time.sleep(0.5)
        stop.set()
        player.stop()
        legacy.stop()
        reader.join(10)
        # A legacy player of AV1 gets a clear error and the connection closes, no AV1 tags.
        self.assertIn('NetStream.Play.Failed', legacy.statuses, self.rill.log_tail())
        failed = [i for i in legacy.status_infos if i.get('code') == 'NetStream.Play.Failed'][0]
        self.assertIn('Enhanced RTMP', failed.get('description', ''))
        self.assertTrue(legacy.closed, 'legacy player not closed')
        self.assertFalse([m for m in legacy.media if m.type == 9], 'legacy player got video')
        self.assertEqual(flv.get('status'), 200, self.rill.log_tail())
        return player.media, flvutil.parse_bytes(flv.get('data', b'')).tags

    def check_passthrough(self, tags, rtmp_media, flv_tags, sent_counts=None):
        """Each player got the sequence starts, then a contiguous run of the published coded tags
        of each kind up to the last one, every payload byte for byte. `sent_counts` {kind: n}:
        the publisher looped `tags`, sending the first n coded tags of the repeated sequence."""
        for kind in (9, 8):
            sent = [body for _, k, body in tags if k == kind]
            header, coded = sent[0], sent[1:]
            if sent_counts:
                coded = (coded * (sent_counts[kind] // len(coded) + 1))[:sent_counts[kind]]
            for label, got in (('RTMP', [m.digest for m in rtmp_media if m.type == kind]),
                               ('HTTP-FLV', [hashlib.sha1(t.data).hexdigest() for t in flv_tags
                                             if t.type == kind])):
                with self.subTest(player=label, kind=kind):
                    self.assertGreater(len(got), len(coded) // 2, '%s got %d of %d tags' % (label, len(got), len(sent)))
                    self.assertEqual(got[0], hashlib.sha1(header).hexdigest(), 'sequence start first')
                    digests = [hashlib.sha1(b).hexdigest() for b in coded]
                    self.assertEqual(got[1:], digests[len(digests) - len(got) + 1:], '%s: not byte-identical' % label)

    def check_hls(self, app, name, video_codec, tags, counts=None):
        """The ended HLS of APP/NAME is fMP4 that ffmpeg decodes without an error, with every coded
        tag of `tags` (or counts[9] video frames and counts[8] Opus packets)."""
        text, data = ended_playlist_media(self, self.rill, app, name)
        self.assertIn('#EXT-X-MAP:', text, 'not fMP4:\n' + text)
        f = os.path.join(self.rill.tmpdir, '%s-%s.mp4' % (app, name))
        with open(f, 'wb') as out:
            out.write(data)
        probe = run(['ffprobe', '-v', 'warning', '-print_format', 'json', '-count_packets', '-show_streams', f],
                    timeout=60)
        self.assertEqual(probe.returncode, 0, probe.stderr)
        streams = {s['codec_name']: s for s in json.loads(probe.stdout)['streams']}
        self.assertEqual(sorted(streams), sorted([video_codec, 'opus']), probe.stdout)
        video_frames = sum(1 for _, k, b in tags if k == 9 and b[0] & 0x0F == 1)
        opus_packets = sum(1 for _, k, b in tags if k == 8 and b[0] & 0x0F == 1)
        if counts:
            video_frames, opus_packets = counts[9], counts[8]
        self.assertEqual(int(streams[video_codec]['nb_read_packets']), video_frames)
        self.assertEqual(int(streams['opus']['nb_read_packets']), opus_packets)
        self.assertEqual((streams[video_codec]['width'], streams[video_codec]['height']), (160, 90))
        self.assertEqual(streams['opus']['sample_rate'], '48000')
        self.assertEqual(streams['opus']['channels'], 2)
        dec = run(['ffmpeg', '-hide_banner', '-nostdin', '-v', 'error', '-i', f, '-f', 'null', '-'], timeout=120)
        self.assertEqual(dec.returncode, 0, dec.stderr)
        self.assertEqual(dec.stderr.strip(), '', 'ffmpeg errors decoding %s:\n%s' % (f, dec.stderr))
        return f

    def test_av1_opus_passthrough_and_fmp4_hls(self):
        tags = ertmp.av1_opus_tags(*ertmp.make_av1_opus_media('av1', SECONDS, FPS), codec='av1', fps=FPS)
        rtmp_media, flv_tags = self.publish_and_play('ts', 'av1', tags)  # container ts: fMP4 regardless
        self.check_passthrough(tags, rtmp_media, flv_tags)
        self.check_hls('ts', 'av1', 'av1', tags)
        self.assertIn('this stream\'s HLS is fMP4', self.rill.log_tail())

    def test_rill_bench_av1_opus_publish(self):
        """rill-bench -i FILE.ivf --audio FILE.ogg (docs/rill-bench.md): its tags are the test
        publisher's byte for byte (its av1C, built from the sequence header, is the one ffmpeg
        writes in MP4), the players get them, and the HLS decodes with every frame it sent."""
        test_bench.bench_binary()  # skips the test when rill-bench is not built
        ivf, mp4, ogg = ertmp.make_av1_opus_media('av1', SECONDS, FPS)
        tags = ertmp.av1_opus_tags(ivf, mp4, ogg, codec='av1', fps=FPS)
        report = {}
        url = 'rtmp://%s:%d/fmp4/bench' % (rilltest.HOST, self.rill.rtmp_port)

        def publish():
            report.update(test_bench.run_bench('rtmp-publish', url, '-i', ivf, '--audio', ogg, '-d', SECONDS,
                                               timeout=30))
        rtmp_media, flv_tags = self.publish_and_play('fmp4', 'bench', publish=publish)
        self.assertEqual(report['connections']['ok'], 1, report)
        sent = {9: report['frames']['video'], 8: report['frames']['audio']}
        self.assertGreater(sent[9], FPS * (SECONDS - 1), report)
        self.check_passthrough(tags, rtmp_media, flv_tags, sent)
        self.check_hls('fmp4', 'bench', 'av1', tags, sent)

    def test_vp9_opus_fmp4_hls(self):
        tags = ertmp.av1_opus_tags(*ertmp.make_av1_opus_media('vp9', SECONDS, FPS), codec='vp9', fps=FPS)
        ertmp.publish_tags(rilltest.HOST, self.rill.rtmp_port, 'fmp4', 'vp9', tags, 4.0)
        self.check_hls('fmp4', 'vp9', 'vp9', tags)


# The browser test's page, logging first whether this Chromium's MSE takes AV1 and Opus in MP4.
AV1_PAGE = test_browser_hls.PAGE.replace(
    "const v = document.getElementById('v');",
    "const v = document.getElementById('v');\n"
    "log('av1 ' + MediaSource.isTypeSupported('video/mp4; codecs=\"av01.0.00M.08\"') +"
    " ' opus ' + MediaSource.isTypeSupported('audio/mp4; codecs=\"opus\"'));", 1)
BROWSER_SECONDS = 8


@unittest.skipIf(test_browser_hls._missing(), 'missing: %s' % ', '.join(test_browser_hls._missing()))
class BrowserAv1OpusTest(unittest.TestCase):
    serve_page = test_browser_hls.BrowserHlsTest.serve_page

    def test_chromium_plays_av1_opus_hls(self):
        tags = ertmp.av1_opus_tags(*ertmp.make_av1_opus_media('av1', 12, FPS), codec='av1', fps=FPS)
        cfg = {'apps': {'live': {'hls': {'enabled': True, 'fragment': '1s', 'window': 20, 'container': 'ts'}}}}
        with Rill(cfg) as rill:
            pub = threading.Thread(target=ertmp.publish_tags,
                                   args=(rilltest.HOST, rill.rtmp_port, 'live', 'test', tags, 1.0), daemon=True)
            pub.start()

            def three_segments():
                st, _, body = request(rill.http_port, 'GET', '/live/test.m3u8')
                return st == 200 and body.count(b'#EXTINF') >= 3
            self.assertTrue(rilltest.wait_until(three_segments, 15, 0.2), 'no playlist\n' + rill.log_tail())
            src = rill.http_url('/live/test.m3u8')
            page = self.serve_page(src, page=AV1_PAGE)
            out, diag = play_page(self, page, BROWSER_SECONDS)
            pub.join(30)
            support = [l for l in out['log'] if l.startswith('av1 ')]
            if support and 'av1 false' in support[0]:
                self.skipTest('this Chromium has no AV1 decoder for MSE (%s)' % support[0])
            samples = out['samples']
            frames = max(s.get('totalVideoFrames', 0) for s in samples)
            self.assertGreater(frames, 0, 'no video frame decoded\n' + diag)
            times = [s.get('currentTime', 0) for s in samples]
            self.assertGreaterEqual(max(times) - min(times), 3.0, 'currentTime did not advance 3 s\n' + diag)
            self.assertFalse([s for s in samples if s.get('error')], diag)
            self.assertFalse([l for l in out['log'] if 'FATAL' in l], diag)


if __name__ == '__main__':
    unittest.main()
