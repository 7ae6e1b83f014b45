"""Playback of recordings over HTTP (docs/recording.md, "Playback") with the real daemon: ffmpeg
publishes 12 s of lavfi media (as fast as it sends) to apps that record it as fMP4 in 5 s files;
/recordings/{id}/{file} serves each file whole and by Range (206, 416), behind the same gate as
live HLS (a play token of the stream name), and not at all with record.serve false;
/{app}/{name}/recording.m3u8 is a VOD playlist whose maps and byte ranges, fetched with Range and
put together per file, hold every frame of the files (ffprobe -count_frames), and that ffmpeg
plays through without an error.

Run:  cd tests/integration && RILL_BIN=.../rill python3 -m unittest -v test_record_playback
"""

import json
import os
import re
import tempfile
import unittest

import rilltest
from rilltest import Rill, http_get, require_tool, wait_until

SECONDS = 12
SECRET = 'playback-s3cret'


def token(stream):
    res = rilltest.rill_cli('token', '--secret', SECRET, '--play', stream, '--ttl', '1h')
    if res.returncode != 0:
        raise AssertionError('rill token failed: %s' % res.stderr)
    return res.stdout.strip()


def count_frames(path):
    p = rilltest.run(['ffprobe', '-v', 'error', '-count_frames', '-show_entries', 'stream=codec_type,nb_read_frames',
                      '-of', 'json', path], timeout=60)
    return {st['codec_type']: int(st['nb_read_frames']) for st in json.loads(p.stdout)['streams']}


def playlist_files(text):
    """[(uri, [(offset, length)...])] per EXT-X-MAP, the map's range first."""
    files = []
    pending = None
    for line in text.splitlines():
        m = re.match(r'#EXT-X-MAP:URI="([^"]+)",BYTERANGE="(\d+)@(\d+)"$', line)
        if m:
            files.append((m.group(1), [(int(m.group(3)), int(m.group(2)))]))
        elif line.startswith('#EXT-X-BYTERANGE:'):
            n, at = line.split(':', 1)[1].split('@')
            pending = (int(at), int(n))
        elif line and not line.startswith('#'):
            assert line == files[-1][0], (line, files[-1][0])
            files[-1][1].append(pending)
    return files


class RecordPlaybackTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        require_tool('ffmpeg')
        require_tool('ffprobe')
        cls.media = rilltest.make_test_media(seconds=SECONDS, gop=25)
        cls.dir = tempfile.mkdtemp(prefix='rill-playback-')

        def app(serve=True, play='open'):
            return {'record': {'mode': 'all', 'segment': '5s', 'serve': serve,
                               'path': os.path.join(cls.dir, '{app}', '{name}-{start:%H-%M-%S}')},
                    'auth': {'secret': SECRET, 'publish': 'open', 'play': play}}
        cls.rill = Rill({'apps': {'rec': app(), 'sec': app(play='token'), 'off': app(serve=False)}})
        try:
            pubs = [rilltest.ffmpeg_publish(cls.rill.rtmp_url('cam', app=a), cls.media, loop=False,
                                            realtime=False) for a in ('rec', 'sec', 'off')]
            for p in pubs:
                p.wait(timeout=60)
            cls.files = {a: cls.complete_files(a) for a in ('rec', 'sec', 'off')}
        except BaseException:
            cls.rill.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.rill.close()

    @classmethod
    def complete_files(cls, app):
        """The app's recordings once at least 3 are listed and none is being written."""
        found = []

        def done():
            status, _, body = http_get(cls.rill.api_url('/api/v1/recordings?app=' + app))
            items = json.loads(body).get('items', []) if status == 200 else []
            found[:] = items
            return len(items) >= 3 and all(i['state'] == 'complete' for i in items)
        if not wait_until(done, 20, 0.2):
            raise AssertionError('recordings of %s: %r\n%s' % (app, found, cls.rill.log_tail()))
        return found

    def url(self, item, query=''):
        return self.rill.http_url('/recordings/%s/%s%s' % (item['id'], os.path.basename(item['path']), query))

    def test_whole_file_and_ranges(self):
        item = self.files['rec'][0]
        with open(item['path'], 'rb') as f:
            data = f.read()
        status, headers, body = http_get(self.url(item))
        self.assertEqual(status, 200)
        self.assertEqual(body, data)
        self.assertEqual(headers['Content-Type'], 'video/mp4')
        self.assertIn('ETag', headers)
        self.assertIn('Last-Modified', headers)
        for rng, first, last in (('bytes=10-19', 10, 19), ('bytes=-7', len(data) - 7, len(data) - 1),
                                 ('bytes=%d-' % (len(data) - 3), len(data) - 3, len(data) - 1),
                                 ('bytes=100-%d' % (len(data) + 50), 100, len(data) - 1)):
            status, headers, body = http_get(self.url(item), headers={'Range': rng})
            self.assertEqual(status, 206, rng)
            self.assertEqual(headers['Content-Range'], 'bytes %d-%d/%d' % (first, last, len(data)), rng)
            self.assertEqual(body, data[first:last + 1], rng)
        status, headers, _ = http_get(self.url(item), headers={'Range': 'bytes=%d-' % len(data)})
        self.assertEqual(status, 416)
        self.assertEqual(headers['Content-Range'], 'bytes */%d' % len(data))
        status, _, body = http_get(self.url(item), headers={'Range': 'bytes=0-1,5-6'})  # ignored
        self.assertEqual((status, body), (200, data))

    def test_unknown_names_are_404(self):
        item = self.files['rec'][0]
        self.assertEqual(http_get(self.rill.http_url('/recordings/%s/other.mp4' % item['id']))[0], 404)
        self.assertEqual(http_get(self.rill.http_url('/recordings/0123456789abcdef/x.mp4'))[0], 404)
        self.assertEqual(http_get(self.rill.http_url('/recordings/../etc/passwd'))[0] in (400, 404), True)
        self.assertEqual(http_get(self.url(self.files['off'][0]))[0], 404)  # record.serve: false

    def test_token_of_the_stream_name(self):
        item = self.files['sec'][0]
        self.assertEqual(http_get(self.url(item))[0], 403)
        status, _, body = http_get(self.url(item, '?' + token('sec/cam')))
        self.assertEqual(status, 200)
        self.assertEqual(len(body), item['bytes'])
        self.assertEqual(http_get(self.url(item, '?' + token('sec/other')))[0], 403)

    def fetch_ranges(self, uri, ranges):
        out = b''
        for at, n in ranges:
            status, headers, body = http_get(self.rill.http_url(uri), headers={'Range': 'bytes=%d-%d' % (at, at + n - 1)})
            self.assertEqual((status, len(body)), (206, n), uri)
            out += body
        return out

    def test_vod_playlist_holds_every_frame(self):
        status, headers, body = http_get(self.rill.http_url('/rec/cam/recording.m3u8'))
        self.assertEqual(status, 200, body)
        self.assertEqual(headers['Content-Type'], 'application/vnd.apple.mpegurl')
        text = body.decode()
        for tag in ('#EXT-X-VERSION:7', '#EXT-X-PLAYLIST-TYPE:VOD', '#EXT-X-INDEPENDENT-SEGMENTS', '#EXT-X-ENDLIST'):
            self.assertIn(tag, text)
        target = int(re.search(r'#EXT-X-TARGETDURATION:(\d+)', text).group(1))
        for d in re.findall(r'#EXTINF:([\d.]+),', text):
            self.assertLessEqual(round(float(d)), target)
        files = playlist_files(text)
        self.assertEqual(len(files), len(self.files['rec']))
        self.assertEqual(text.count('#EXT-X-DISCONTINUITY'), len(files) - 1)
        self.assertEqual(text.count('#EXT-X-PROGRAM-DATE-TIME:'), len(files))
        by_name = {os.path.basename(i['path']): i['path'] for i in self.files['rec']}
        work = tempfile.mkdtemp(prefix='rill-playback-ranges-')
        for uri, ranges in files:
            path = os.path.join(work, os.path.basename(uri))
            with open(path, 'wb') as f:
                f.write(self.fetch_ranges(uri, ranges))
            self.assertEqual(count_frames(path), count_frames(by_name[os.path.basename(uri)]), uri)
        p = rilltest.run(['ffmpeg', '-v', 'error', '-i', self.rill.http_url('/rec/cam/recording.m3u8'),
                          '-f', 'null', '-'], timeout=60)
        self.assertEqual((p.returncode, p.stderr.strip()), (0, ''))

    def test_playlist_window_auth_and_404(self):
        self.assertEqual(http_get(self.rill.http_url('/rec/other/recording.m3u8'))[0], 404)
        self.assertEqual(http_get(self.rill.http_url('/off/cam/recording.m3u8'))[0], 404)
        self.assertEqual(http_get(self.rill.http_url('/rec/cam/recording.m3u8?start=2001-01-01T00:00:00Z'
                                                     '&end=2001-01-02T00:00:00Z'))[0], 404)
        self.assertEqual(http_get(self.rill.http_url('/rec/cam/recording.m3u8?start=yesterday'))[0], 400)
        self.assertEqual(http_get(self.rill.http_url('/sec/cam/recording.m3u8'))[0], 403)
        query = token('sec/cam')
        status, _, body = http_get(self.rill.http_url('/sec/cam/recording.m3u8?' + query))
        self.assertEqual(status, 200, body)
        files = playlist_files(body.decode())
        self.assertTrue(files)
        for uri, ranges in files:
            self.assertTrue(uri.endswith('?' + query), uri)
            self.fetch_ranges(uri, ranges[:2])


if __name__ == '__main__':
    unittest.main()
