"""recording.mp4 (docs/recording.md, "Playback") with the real daemon: ffmpeg publishes 10 s of
lavfi media in real time (keyframe every second) to apps that record it as fMP4 in 4 s files (and
one as FLV); GET /{app}/{name}/recording.mp4?start=&duration= of a window that spans two files
is one MP4, moov before mdat, whose frames (ffprobe -count_frames) are those of the keyframe cut
(2.5 s..6.5 s after the first file's start -> the keyframes at 2 s and 7 s: 5 s, 125 video
frames), that ffmpeg decodes without an error and whose tracks start together; Range resumes it
(the bytes of the same slice of a whole download), HEAD says its length, the token rule of
recording.m3u8 applies, and bad queries, empty windows and FLV recordings are refused.

Run:  cd tests/integration && RILL_BIN=.../rill python3 -m unittest -v test_record_mp4
"""

import calendar
import json
import os
import struct
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

import rilltest
from rilltest import Rill, http_get, require_tool
import test_record_playback as playback  # its token(), SECRET and wait; not its tests (a module)

SECONDS = 10


def probe(path):
    p = rilltest.run(['ffprobe', '-v', 'error', '-count_frames', '-show_entries',
                      'stream=codec_type,nb_read_frames,start_time:format=duration', '-of', 'json', path], timeout=60)
    out = json.loads(p.stdout)
    streams = {st['codec_type']: st for st in out['streams']}
    return streams, float(out['format']['duration'])


def top_boxes(data):
    boxes, at = [], 0
    while at + 8 <= len(data):
        size, kind = struct.unpack('>I4s', data[at:at + 8])
        if size == 1:
            size = struct.unpack('>Q', data[at + 8:at + 16])[0]
        boxes.append(kind.decode())
        if size < 8:
            break
        at += size
    return boxes, at


def utc(t):
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(int(t))) + ('%.3fZ' % (t - int(t)))[1:]


class RecordMp4Test(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        require_tool('ffmpeg')
        require_tool('ffprobe')
        cls.media = rilltest.make_test_media(seconds=SECONDS, gop=25)
        cls.dir = tempfile.mkdtemp(prefix='rill-mp4-')

        def app(play='open', fmt='fmp4'):
            return {'record': {'mode': 'all', 'segment': '4s', 'serve': True, 'format': fmt,
                               'path': os.path.join(cls.dir, '{app}', '{name}-{start:%H-%M-%S}')},
                    'auth': {'secret': playback.SECRET, 'publish': 'open', 'play': play}}
        cls.rill = Rill({'apps': {'rec': app(), 'sec': app(play='token'), 'flv': app(fmt='flv')}})
        try:
            pubs = [rilltest.ffmpeg_publish(cls.rill.rtmp_url('cam', app=a), cls.media, loop=False)
                    for a in ('rec', 'sec', 'flv')]
            for p in pubs:
                p.wait(timeout=60)
            # Listed once 3 are complete (RecordPlaybackTest's wait), oldest first.
            listed = playback.RecordPlaybackTest.complete_files.__func__(cls, 'rec')
            cls.files = sorted(listed, key=lambda i: i['start'])
        except BaseException:
            cls.rill.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.rill.close()

    def start_of(self, item):
        v = item['start']
        return v if isinstance(v, (int, float)) else rilltest_parse(v)

    def url(self, app='rec', **query):
        return self.rill.http_url('/%s/cam/recording.mp4?%s' % (app, urllib.parse.urlencode(query)))

    def window_url(self, app='rec', **extra):
        t0 = self.start_of(self.files[0])
        return self.url(app, start=utc(t0 + 2.5), duration='4', **extra)

    def test_cut_at_keyframes_across_files(self):
        status, headers, body = http_get(self.window_url(), timeout=20)
        self.assertEqual(status, 200, body[:200])
        self.assertEqual(headers['Content-Type'], 'video/mp4')
        self.assertEqual(int(headers['Content-Length']), len(body))
        self.assertRegex(headers['Content-Disposition'], r'^attachment; filename="cam-\d{8}T\d{6}Z\.mp4"$')
        boxes, end = top_boxes(body)
        self.assertEqual(boxes, ['ftyp', 'moov', 'mdat'])
        self.assertEqual(end, len(body))
        path = os.path.join(self.dir, 'cut.mp4')
        with open(path, 'wb') as f:
            f.write(body)
        streams, duration = probe(path)
        self.assertEqual(int(streams['video']['nb_read_frames']), 125)
        self.assertAlmostEqual(duration, 5.0, delta=0.045)
        audio = int(streams['audio']['nb_read_frames'])
        self.assertLessEqual(abs(audio - 5.0 * 44100 / 1024), 3, audio)
        # The tracks start together: the audio from its first frame at or after the keyframe (the
        # recorder's millisecond clock rounds a frame at it to up to 1 ms before it).
        lead = float(streams['audio']['start_time']) - float(streams['video']['start_time'])
        self.assertGreaterEqual(lead, -1.5e-3, streams)
        self.assertLess(lead, 1024 / 44100, streams)
        p = rilltest.run(['ffmpeg', '-v', 'error', '-i', path, '-f', 'null', '-'], timeout=60)
        self.assertEqual((p.returncode, p.stderr.strip()), (0, ''))

    def test_range_resumes_and_head_says_the_length(self):
        status, _, whole = http_get(self.window_url(), timeout=20)
        self.assertEqual(status, 200)
        size = len(whole)
        for first, last in ((0, 99), (size // 2, size - 1), (size - 10, size - 1), (5000, 300000)):
            status, headers, body = http_get(self.window_url(), headers={'Range': 'bytes=%d-%d' % (first, last)},
                                             timeout=20)
            self.assertEqual(status, 206)
            self.assertEqual(headers['Content-Range'], 'bytes %d-%d/%d' % (first, last, size))
            self.assertEqual(body, whole[first:last + 1], (first, last))
        status, headers, _ = http_get(self.window_url(), headers={'Range': 'bytes=%d-' % size})
        self.assertEqual(status, 416)
        req = urllib.request.Request(self.window_url(), method='HEAD')
        with urllib.request.urlopen(req, timeout=5) as resp:
            self.assertEqual(resp.status, 200)
            self.assertEqual(int(resp.headers['Content-Length']), size)
            self.assertEqual(resp.read(), b'')

    def test_whole_recording_without_start(self):
        status, _, body = http_get(self.url(), timeout=20)
        self.assertEqual(status, 200, body[:200])
        path = os.path.join(self.dir, 'all.mp4')
        with open(path, 'wb') as f:
            f.write(body)
        streams, duration = probe(path)
        frames = int(streams['video']['nb_read_frames'])
        recorded = sum(int(probe(i['path'])[0]['video']['nb_read_frames']) for i in self.files)
        self.assertEqual(frames, recorded)

    def test_token_rule_of_the_stream(self):
        self.assertEqual(http_get(self.url('sec', duration='2'))[0], 403)
        path = '/sec/cam/recording.mp4?duration=2&'
        self.assertEqual(http_get(self.rill.http_url(path + playback.token('sec/other')))[0], 403)
        status, _, body = http_get(self.rill.http_url(path + playback.token('sec/cam')), timeout=20)
        self.assertEqual(status, 200, body[:200])
        self.assertEqual(top_boxes(body)[0], ['ftyp', 'moov', 'mdat'])

    def test_refusals(self):
        for query in ({'duration': '0'}, {'duration': '3601'}, {'duration': 'ten'}, {'start': 'yesterday'},
                      {'start': '2026-01-01T00:00:00Z', 'end': '2025-01-01T00:00:00Z'}):
            status, _, body = http_get(self.url(**query))
            self.assertEqual(status, 400, (query, body))
        status, _, body = http_get(self.url(start='2001-01-01T00:00:00Z', duration='60'))
        self.assertEqual(status, 404, body)
        status, _, body = http_get(self.url('flv'))
        self.assertEqual(status, 404, body)
        self.assertIn(b'record.format fmp4', body)
        self.assertEqual(http_get(self.rill.http_url('/rec/other/recording.mp4'))[0], 404)


def rilltest_parse(text):
    """Unix seconds of an RFC 3339 UTC date-time as the API writes it."""
    main, _, frac = text.rstrip('Z').partition('.')
    t = calendar.timegm(time.strptime(main, '%Y-%m-%dT%H:%M:%S'))
    return t + (float('0.' + frac) if frac else 0.0)


if __name__ == '__main__':
    unittest.main()
