"""Playback of recordings over HTTP (docs/recording.md, "Playback") with the real daemon: ffmpeg
publishes 12 s of lavfi media (as fast as it sends) to apps that record it as fMP4 in 5 s files;
/recordings/{id}/{file} serves each file whole and by Range (206, 416), behind the same gate as
live HLS (a play token of the stream name), and not at all with record.serve false;
/{app}/{name}/recording.m3u8 is a VOD playlist whose maps and byte ranges, fetched with Range and
put together per file, hold every frame of the files (ffprobe -count_frames), and that ffmpeg
plays through without an error; hls.js in headless Chromium (the driver of test_browser_hls) plays
it from the start, seeks to the middle, plays on there to the end, and plays the token-protected
app's playlist with the token in its URL.

Run:  cd tests/integration && RILL_BIN=.../rill python3 -m unittest -v test_record_playback
"""

import json
import os
import re
import tempfile
import unittest

import rilltest
import test_browser_hls as browser
from browserutil import play_page
from rilltest import Rill, http_get, require_tool, wait_until

SECONDS = 12
SECRET = 'playback-s3cret'
BROWSER_SECONDS = 11  # sampled: ~2 s to start, 1 s played, the seek to 6 s, 6 s to the end (~9 s in all)

# Two hls.js players of recording.m3u8, side by side (one browser start): `open` plays from the
# start, seeks to the middle once it has played 1 s, and plays on to the end; `token` plays the
# token-protected app's playlist. Each logs its state once a second as JSON ("state {...}"): the
# seek (from, to, where `seeked` landed), the longest stall after it (`waiting` to `playing`, or
# still waiting), whether the video ended.
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>rill recording</title></head>
<body>
<video id="open" muted autoplay playsinline></video>
<video id="token" muted autoplay playsinline></video>
<script src="hls.min.js"></script>
<script>
window.__log = [];
const log = (m) => { if (window.__log.length < 300) window.__log.push(String(m)); };
const SRC = %(src)s;
function player(id, seek) {
  const v = document.getElementById(id);
  const s = {id: id, seekFrom: null, seekTo: null, seeked: null, stallMs: 0, waitingSince: null, ended: false};
  v.addEventListener('error', () => log(id + ' video error ' + (v.error && v.error.code)));
  v.addEventListener('timeupdate', () => {
    if (seek && s.seekFrom === null && v.currentTime >= 1 && v.duration > 4) {
      s.seekFrom = v.currentTime;
      s.seekTo = v.duration / 2;
      v.currentTime = s.seekTo;
    }
  });
  v.addEventListener('seeked', () => { if (s.seekTo !== null && s.seeked === null) s.seeked = v.currentTime; });
  v.addEventListener('waiting', () => {
    if (s.seeked !== null && s.waitingSince === null) s.waitingSince = performance.now();
  });
  v.addEventListener('playing', () => {
    if (s.waitingSince !== null) s.stallMs = Math.max(s.stallMs, performance.now() - s.waitingSince);
    s.waitingSince = null;
  });
  v.addEventListener('ended', () => { s.ended = true; });
  // `open` buffers 2 s ahead (hls.js's default is 30 s, the whole recording): the middle is not yet
  // loaded when it seeks there, so the seek fetches it by its byte range.
  const hls = new Hls(seek ? {maxBufferLength: 2, maxMaxBufferLength: 2} : {});
  hls.on(Hls.Events.MANIFEST_PARSED, () => v.play().catch((err) => log(id + ' play(): ' + err)));
  hls.on(Hls.Events.FRAG_LOADED, (e, d) => log(id + ' fragment ' + d.frag.sn + ' at ' + v.currentTime.toFixed(2)));
  hls.on(Hls.Events.ERROR, (e, d) => log(id + ' error ' + d.type + ' ' + d.details + (d.fatal ? ' FATAL' : '')));
  hls.loadSource(SRC[id]);
  hls.attachMedia(v);
  setInterval(() => {
    const waiting = s.waitingSince === null ? 0 : performance.now() - s.waitingSince;
    log('state ' + JSON.stringify(Object.assign({}, s, {t: v.currentTime, duration: v.duration,
                                                      stallMs: Math.max(s.stallMs, waiting)})));
  }, 1000);
}
if (!window.Hls || !Hls.isSupported()) {
  log('hls.js not supported here');
} else {
  player('open', true);
  player('token', false);
}
</script>
</body></html>
"""


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

    @unittest.skipIf(browser._missing(), 'missing: %s' % ', '.join(browser._missing()))
    def test_hlsjs_plays_and_seeks_in_chromium(self):
        src = {'open': self.rill.http_url('/rec/cam/recording.m3u8'),
               'token': self.rill.http_url('/sec/cam/recording.m3u8?' + token('sec/cam'))}
        offset = self.rill.log_offset()
        out, diag = play_page(self, browser.BrowserHlsTest.serve_page(self, src, page=PAGE), BROWSER_SECONDS)
        self.assertFalse([l for l in out['log'] if 'FATAL' in l or 'video error' in l], diag)
        last = {}
        for line in out['log']:
            if line.startswith('state '):
                state = json.loads(line[len('state '):])
                last[state['id']] = state
        self.assertEqual(set(last), {'open', 'token'}, diag)
        played = last['open']
        self.assertAlmostEqual(played['duration'], SECONDS, delta=1.0, msg=diag)
        # Played 1 s from the start, then jumped to the middle and landed there.
        self.assertIsNotNone(played['seekTo'], 'never played 1 s from the start\n' + diag)
        self.assertLess(played['seekFrom'], 3.0, diag)
        self.assertIsNotNone(played['seeked'], 'the seek did not complete\n' + diag)
        self.assertAlmostEqual(played['seeked'], SECONDS / 2, delta=1.0, msg=diag)
        # Played on from there without a stall over 1 s, to the end of the playlist.
        self.assertGreaterEqual(played['t'] - played['seeked'], 1.0, diag)
        self.assertLess(played['stallMs'], 1000, diag)
        self.assertTrue(played['ended'] or played['t'] >= played['duration'] - 1.0, diag)
        # The token in the playlist's URL reached every file request hls.js made.
        self.assertGreaterEqual(last['token']['t'], 2.0, diag)
        self.assertNotIn('refused by token', self.rill.log_since(offset))


if __name__ == '__main__':
    unittest.main()
