"""E-RTMP v2 multitrack: rill-bench publishes 3 H.264 renditions of one lavfi source (same GOP) as
ManyTracks video tags, with AAC audio as track 0's. A legacy RTMP player (ffmpeg) gets track 0
and decodes it; "?track=2" gives the third rendition over RTMP and HTTP-FLV, with track 0's audio (it has none of its own); a player whose
connect declares capsEx Multitrack gets the published tags byte-identical; HLS: mt_track0.m3u8 is track 0.
The expected multitrack tags are built here (multitrack_tag), independently of Rill's code."""

import http.client
import json
import os
import subprocess
import unittest

import flvutil
import rtmpclient as rc
from hlsutil import hls_config
from rilltest import HOST, Rill, http_get, require_tool, run, stop_process, wait_until
from test_bench import bench_binary, start_bench

SIZES = [(320, 240), (256, 144), (160, 96)]
SECONDS = 3
COPY_SECONDS = 1


def make_renditions(tmpdir):
    """Three FLV files of one testsrc at the SIZES, 25 fps, a keyframe every 25 frames, no B
    frames (so the files' video tags pair up); AAC audio in the first only."""
    paths = []
    for i, (w, h) in enumerate(SIZES):
        path = os.path.join(tmpdir, 'track%d.flv' % i)
        cmd = ['ffmpeg', '-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=%dx%d:rate=25' % (w, h)]
        if i == 0:
            cmd += ['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100', '-c:a', 'aac', '-b:a', '64k']
        cmd += ['-t', str(SECONDS), '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '25', '-keyint_min', '25',
                '-sc_threshold', '0', '-bf', '0', '-pix_fmt', 'yuv420p', '-f', 'flv', path]
        r = run(cmd, timeout=60)
        assert r.returncode == 0, r.stderr
        paths.append(path)
    return paths


def multitrack_tag(bodies):
    """E-RTMP v2 ManyTracks video tag of legacy AVC tag bodies (track i = bodies[i]): ExHeader |
    frame type | Multitrack (6); ManyTracks (1) << 4 | packet type; "avc1"; per track: id, UI24
    size, body (CodedFrames keeps its SI24 composition time; SequenceStart drops it)."""
    frame_type, pt = bodies[0][0] >> 4, bodies[0][1]
    out = bytes([0x80 | (frame_type << 4) | 6, 0x10 | pt]) + b'avc1'
    for i, b in enumerate(bodies):
        track = b[2:] if pt == 1 else b[5:]
        out += bytes([i]) + len(track).to_bytes(3, 'big') + track
    return out


def probe(test, path_or_url, extra=()):
    r = run(['ffprobe', '-v', 'error', *extra, '-count_frames', '-select_streams', 'v:0', '-show_entries',
             'stream=width,height,nb_read_frames', '-of', 'json', path_or_url], timeout=30)
    test.assertEqual(r.returncode, 0, r.stderr)
    return json.loads(r.stdout)['streams'][0]


class MultitrackTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_tool('ffmpeg')
        bench_binary()
        cls.rill = Rill(hls_config())
        cls.paths = make_renditions(cls.rill.tmpdir)
        files = [flvutil.parse_file(p) for p in cls.paths]
        videos = [[t.data for t in f.tags if t.type == flvutil.TAG_VIDEO] for f in files]
        n = min(len(v) for v in videos)
        cls.expected = {multitrack_tag([v[k] for v in videos]) for k in range(n)}
        url = 'rtmp://%s:%d/live/mt' % (HOST, cls.rill.rtmp_port)
        cls.bench = start_bench('rtmp-publish', url, '-i', cls.paths[0], '--track', cls.paths[1], '--track',
                                cls.paths[2], '-d', '40')  # stopped by tearDownClass
        cls.m3u8 = 'http://%s:%d/live/mt.m3u8' % (HOST, cls.rill.http_port)
        if not wait_until(lambda: http_get(cls.m3u8)[0] == 200, timeout=10):
            stop_process(cls.bench)
            cls.rill.stop()
            raise AssertionError('the multitrack publish did not start (no HLS playlist)')

    @classmethod
    def tearDownClass(cls):
        stop_process(cls.bench)
        cls.rill.stop()

    def rtmp(self, name):
        return 'rtmp://%s:%d/live/%s' % (HOST, self.rill.rtmp_port, name)

    def flv(self, query):
        return 'http://%s:%d/live/mt.flv%s' % (HOST, self.rill.http_port, query)

    def copy_all(self, sources):
        """Copies COPY_SECONDS of each (url, file name) with ffmpeg, all at once; the files' paths."""
        outs, procs = [], []
        for url, name in sources:
            outs.append(os.path.join(self.rill.tmpdir, name))
            procs.append(subprocess.Popen(['ffmpeg', '-v', 'error', '-y', '-rw_timeout', '5000000', '-i', url, '-t',
                                           str(COPY_SECONDS), '-c', 'copy', outs[-1]],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        for (url, _), p in zip(sources, procs):
            try:
                _, err = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
            self.assertEqual(p.returncode, 0, '%s: %s' % (url, err.decode(errors='replace')))
        return outs

    def test_legacy_player_gets_track0_and_track2_over_rtmp_and_http_flv(self):
        urls = [(self.rtmp('mt'), 'legacy.flv'), (self.rtmp('mt?track=2'), 'rtmp2.flv'),
                (self.flv('?track=2'), 'http2.flv')]
        for (url, _), path, size in zip(urls, self.copy_all(urls), (SIZES[0], SIZES[2], SIZES[2])):
            r = run(['ffprobe', '-v', 'error', '-count_frames', '-show_entries',
                     'stream=codec_type,codec_name,width,height,nb_read_frames', '-of', 'json', path], timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            streams = {s['codec_type']: s for s in json.loads(r.stdout)['streams']}
            v = streams['video']
            self.assertEqual((v['width'], v['height']), size, url)
            self.assertGreaterEqual(int(v['nb_read_frames']), 20, url)  # 1 s at 25 fps, decoded
            # Track 2 has no audio of its own: its players get track 0's.
            self.assertEqual(streams.get('audio', {}).get('codec_name'), 'aac', url)
        c = http.client.HTTPConnection(HOST, self.rill.http_port, timeout=5)
        try:
            c.request('GET', '/live/mt.flv?track=7')
            self.assertEqual(c.getresponse().status, 404)  # status line only: a 200 would never end
        finally:
            c.close()

    def test_multitrack_client_gets_tags_as_sent(self):
        conn, sid = rc.connect_and_play(HOST, self.rill.rtmp_port, 'live', 'mt',
                                        connect_extra={'capsEx': 2.0, 'fourCcList': ['avc1', 'mp4a']})
        try:
            videos = []
            for _ in range(400):
                m = conn.read_message(timeout=5)
                if m.type == 9:
                    videos.append(bytes(m.payload))
                if len(videos) >= 30:
                    break
        finally:
            conn.close()
        self.assertGreaterEqual(len(videos), 30)
        self.assertEqual(videos[0][:2], b'\x96\x10')  # key frame, Multitrack; ManyTracks, SequenceStart
        for v in videos:
            self.assertIn(v, self.expected)

    def test_hls_track0_rendition_plays_track0(self):
        # mt.m3u8 is the tracks' multivariant playlist (test_multitrack_hls.py); mt_track0.m3u8 is
        # track 0's media playlist.
        s = probe(self, self.m3u8.replace('/mt.m3u8', '/mt_track0.m3u8'), ('-read_intervals', '%+1'))
        self.assertEqual((s['width'], s['height']), SIZES[0])


if __name__ == '__main__':
    unittest.main()
