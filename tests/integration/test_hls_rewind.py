"""Live rewind (apps.NAME.hls.rewind, docs/hls.md "Rewind") with the real daemon, 2 workers:
ffmpeg publishes in real time (a keyframe every 0.4 s) to an app with 0.4 s fMP4 segments, a
2-segment in-memory window, rewind 7 s and an fMP4 recording: what memory holds (the window and
the segments it keeps for RFC 8216 §6.2.2, at most 8 segments, 3.2 s) is passed a few seconds
after the publish starts. The live playlist then lists the segments that left the window too,
under the URIs they had in it (cam/SEQ.m4s: a URI never changes, RFC 8216 §6.2.1), with
consecutive sequence numbers and one EXT-X-MAP; the oldest ones, long gone from memory, answer
200 with bytes read back from the recording file (a moof first, found verbatim in the file), from
either worker; ffmpeg decodes the playlist from its oldest segment without an error; the
non-owner worker serves the same playlist; hls.js in headless Chromium seeks back past what
memory holds, plays there, and returns to the live edge; and a segment that leaves the front of
the history still answers 200 right after and shortly before its duration plus that of the
longest playlist that listed it has passed, then 404 (§6.2.2; watched in the background from the
moment the history is full, while the other cases run). cam_hi and cam_lo, a rendition group
(hls.variants, docs/abr.md) of the same media published twice, rewind with the same media
sequences and ffmpeg decodes each from its oldest segment. Every HTTP request goes to an access
log whose non-2xx lines a browser failure shows.

RILL_TEST_REWIND_LONG=1: 1 s segments, a 3-segment window, rewind 2 min; publishes about 90 s and
the browser seeks 60 s back, plays, and returns to live (no stall over 1 s).

Run:  cd tests/integration && RILL_BIN=.../rill python3 -m unittest -v test_hls_rewind
"""

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import rilltest
from browserutil import CHROMIUM, play_page
from hlsutil import request
from rilltest import Rill, wait_until

LONG = os.environ.get('RILL_TEST_REWIND_LONG') == '1'
GOP = 25 if LONG else 10             # frames at 25 fps: a keyframe every 1 s, or every 0.4 s
SEGMENT_S = GOP / 25.0               # each keyframe starts a segment (hls.fragment below it)
FRAGMENT = '1s' if LONG else '400ms'  # = the GOP: every keyframe on a slot boundary
WINDOW = 3 if LONG else 2            # hls.window: the in-memory playlist
REWIND_S = 120 if LONG else 7
BACK_S = 60 if LONG else 3.5         # how far the browser seeks back from hls.js's live edge
# Memory holds the window, then at most 2 x window + 2 retained segments (HlsStore::max_retained,
# in practice those of the last window + 1 segment durations: RFC 8216 §6.2.2): older segments can
# only come from the recording.
IN_MEMORY = WINDOW + 2 * WINDOW + 2
# Segments the playlist holds before the checks: the browser's seek lands BACK_S before hls.js's
# live edge (3 average segment durations before the end), in segments read back from the recording.
LISTED = 87 + WINDOW if LONG else int((3 * SEGMENT_S + BACK_S + 0.5) / SEGMENT_S) + 1
HLS_JS = os.path.join(rilltest.SOURCE_DIR, 'tests', 'browser', 'node_modules', 'hls.js', 'dist', 'hls.min.js')

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>rill rewind</title></head>
<body>
<video id="v" muted autoplay playsinline></video>
<script src="hls.min.js"></script>
<script>
window.__log = [];
const log = (m) => { if (window.__log.length < 400) window.__log.push(String(m)); };
const v = document.getElementById('v');
const t0 = Date.now();
const at = () => ((Date.now() - t0) / 1000).toFixed(1);
const hls = new Hls({liveDurationInfinity: true});
hls.on(Hls.Events.MANIFEST_PARSED, () => v.play().catch((err) => log('play(): ' + err)));
hls.on(Hls.Events.FRAG_LOADED, (e, d) => log('fragment ' + d.frag.sn + ' ' + d.frag.url.split('?')[0]));
hls.on(Hls.Events.ERROR, (e, d) => log('error ' + d.type + ' ' + d.details + (d.fatal ? ' FATAL' : '') +
                                       (d.reason ? ' ' + String(d.reason).slice(0, 1500) : '')));
hls.loadSource(%(src)s);
hls.attachMedia(v);
// Once playing: seek BACK s behind the live edge, play there, then return to the live edge.
let phase = 'live';
setInterval(() => {
  const edge = hls.liveSyncPosition || 0;
  log('tick ' + at() + ' ' + phase + ' t=' + v.currentTime.toFixed(2) + ' edge=' + edge.toFixed(2));
  if (phase === 'live' && v.currentTime > 1) {
    phase = 'back';
    window.__seekTo = Math.max(0, edge - %(back)s);
    // The newest segment the last playlist listed: memory holds the last ones before it.
    const level = hls.levels[hls.currentLevel] || hls.levels[0];
    log('seek back to ' + window.__seekTo.toFixed(2) + ' end ' + (level && level.details ? level.details.endSN : -1));
    v.currentTime = window.__seekTo;
    window.__backAt = Date.now();
  } else if (phase === 'back' && Date.now() - window.__backAt > %(stay_ms)d) {
    phase = 'return';
    log('return to ' + edge.toFixed(2));
    v.currentTime = edge;
  }
}, 250);
</script>
</body></html>
"""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def parse(text):
    """(media sequence, [(seq, uri)]) of a media playlist."""
    m = re.search(r'#EXT-X-MEDIA-SEQUENCE:(\d+)', text)
    seq = int(m.group(1))
    out = []
    for line in text.splitlines():
        if line and not line.startswith('#'):
            out.append((seq, line))
            seq += 1
    return int(m.group(1)), out


def listed_duration(text):
    return sum(float(d) for d in re.findall(r'#EXTINF:([\d.]+)', text))


# Playlist reloads of the watch below: often enough to see a removal within 0.1 s.
REMOVAL_POLL_S = 0.1
# The watch's bound: the history fills to rewind, then a segment is removed and kept about as long.
REMOVAL_WATCH_S = 2 * REWIND_S + 15


class RemovalWatch(threading.Thread):
    """RFC 8216 §6.2.2 from outside, in the background while the other cases run: once the
    history is full (the playlist about rewind long), the segment at its front is watched until a
    reload no longer lists it; it must answer 200 then, and again 1 s before its duration plus
    that of the longest playlist seen listing it has passed since it was last seen listed, and 404
    within 3 s after that. `steps` and `error` say what happened."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.steps = []
        self.error = None
        self.uri = None

    def get(self, uri):
        st, _, body = request(self.port, 'GET', '/live/' + uri)
        return st, body

    def run(self):
        try:
            self.watch(time.monotonic() + REMOVAL_WATCH_S)
        except Exception as e:  # noqa: BLE001 -- reported by the test case
            self.error = 'watch failed: %r' % e

    def watch(self, deadline):
        text = ''
        while time.monotonic() < deadline:  # the history full: its front goes next
            st, _, body = request(self.port, 'GET', '/live/cam.m3u8')
            text = body.decode() if st == 200 else ''
            if text and listed_duration(text) >= REWIND_S - SEGMENT_S:
                break
            time.sleep(REMOVAL_POLL_S)
        else:
            self.error = 'the history never filled to %s s:\n%s' % (REWIND_S, text)
            return
        (seq, self.uri), duration = parse(text)[1][0], float(re.search(r'#EXTINF:([\d.]+)', text).group(1))
        uri = self.uri
        longest, last_listed = 0.0, time.monotonic()
        while time.monotonic() < deadline:
            st, _, body = request(self.port, 'GET', '/live/cam.m3u8')
            text = body.decode() if st == 200 else ''
            if text and parse(text)[0] > seq:
                break
            if text:
                longest, last_listed = max(longest, listed_duration(text)), time.monotonic()
            time.sleep(REMOVAL_POLL_S)
        else:
            self.error = 'segment %d was never removed' % seq
            return
        kept_until = last_listed + duration + longest  # at the earliest (RFC 8216 §6.2.2)
        st, body = self.get(uri)
        self.steps.append(('right after its removal', st, body[4:8]))
        time.sleep(max(0.0, kept_until - 1.0 - time.monotonic()))
        st, body = self.get(uri)
        self.steps.append(('1 s before its time is up (%.2f s + %.2f s)' % (duration, longest), st, body[4:8]))
        # Another worker may answer from its copy for the segment's max-age (2 s here) after that.
        while time.monotonic() < kept_until + 3.0:
            st, body = self.get(uri)
            if st == 404:
                break
            time.sleep(REMOVAL_POLL_S)
        self.steps.append(('3 s after its time is up', st, b''))


class HlsRewindTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rilltest.require_tool('ffmpeg')
        cls.dir = tempfile.mkdtemp(prefix='rill-rewind-')
        cls.access_log = os.path.join(cls.dir, 'access.log')
        cls.rill = Rill({'workers': 2, 'log': {'access_format': 'json', 'access_log': cls.access_log},
                         'apps': {'live': {
            # cam_hi and cam_lo are a rendition group (docs/abr.md): cut at the group's slots.
            'hls': {'enabled': True, 'fragment': FRAGMENT, 'window': WINDOW, 'container': 'fmp4',
                    'rewind': '%ds' % REWIND_S, 'variants': [{'suffix': '_hi'}, {'suffix': '_lo'}]},
            'record': {'mode': 'all', 'flush': '500ms', 'path': os.path.join(cls.dir, '{app}', '{name}-{start:%H-%M-%S}')}}}})
        cls.started = time.monotonic()
        try:
            media = rilltest.make_test_media(seconds=10, gop=GOP)
            cls.pubs = [rilltest.ffmpeg_publish(cls.rill.rtmp_url(name), media)  # looped
                        for name in ('cam', 'cam_hi', 'cam_lo')]
            cls.text = ''

            def enough():
                st, _, body = request(cls.rill.http_port, 'GET', '/live/cam.m3u8')
                cls.text = body.decode() if st == 200 else ''
                return st == 200 and len(parse(cls.text)[1]) >= LISTED
            if not wait_until(enough, LISTED * SEGMENT_S + 15, 0.1):
                raise AssertionError('no playlist with %d segments:\n%s\n%s'
                                     % (LISTED, cls.text, cls.rill.log_tail()))
            cls.removal = RemovalWatch(cls.rill.http_port)
            cls.removal.start()
        except BaseException:
            cls.rill.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.removal.join(REMOVAL_WATCH_S)
        for p in cls.pubs:
            rilltest.stop_process(p)
        cls.rill.close()
        shutil.rmtree(cls.dir, True)
        sys.stderr.write('\ntest_hls_rewind: %.1f s\n' % (time.monotonic() - cls.started))

    def playlist(self, name='cam'):
        st, headers, body = request(self.rill.http_port, 'GET', '/live/%s.m3u8' % name)
        self.assertEqual(st, 200)
        return body.decode(), headers

    def failed_requests(self):
        """The access log's HTTP requests that were not answered 2xx (for failure messages)."""
        out = []
        try:
            with open(self.access_log) as f:
                for line in f:
                    try:
                        e = json.loads(line)
                    except ValueError:
                        continue
                    if 'status' in e and not 200 <= int(e['status']) < 300:
                        out.append(line.strip())
        except OSError as e:
            out.append(str(e))
        return out[-40:]

    def recording(self):
        files = [os.path.join(d, f) for d, _, fs in os.walk(self.dir) for f in fs
                 if f.startswith('cam-') and f.endswith('.mp4')]
        self.assertTrue(files, self.dir)
        data = b''
        for path in sorted(files):
            with open(path, 'rb') as f:
                data += f.read()
        return data

    def test_playlist_keeps_each_segment_uri_and_sequence(self):
        text, _ = self.playlist()
        first, segs = parse(text)
        self.assertGreaterEqual(len(segs), LISTED, text)
        self.assertEqual(segs, [(first + i, 'cam/%d.m4s' % (first + i)) for i in range(len(segs))], text)
        self.assertEqual(text.count('#EXT-X-MAP'), 1, text)
        self.assertNotIn('#EXT-X-DISCONTINUITY', text)
        self.assertNotIn('PLAYLIST-TYPE', text)
        self.assertNotIn('BYTERANGE', text)
        seen = dict(segs)
        for _ in range(2):
            time.sleep(SEGMENT_S + 0.1)
            first2, segs2 = parse(self.playlist()[0])
            self.assertGreaterEqual(first2, first, 'the media sequence went back')
            self.assertLessEqual(first2, segs[-1][0], 'the history was lost')
            for seq, uri in segs2:
                self.assertEqual(seen.setdefault(seq, uri), uri, 'segment %d changed its URI' % seq)
            first = first2

    def test_segments_gone_from_memory_come_from_the_recording(self):
        _, segs = parse(self.playlist()[0])
        old = segs[:len(segs) - IN_MEMORY]
        self.assertGreaterEqual(len(old), 2)
        # The newer half of them: the oldest may leave the history (past rewind) meanwhile.
        old = old[len(old) // 2:][:3]
        recording = self.recording()
        owners = set()
        for seq, uri in old * 4:  # each a few times: both workers answer some
            st, headers, body = request(self.rill.http_port, 'GET', '/live/' + uri)
            self.assertEqual(st, 200, (seq, uri, body[:200]))
            self.assertEqual(body[4:8], b'moof', seq)
            self.assertIn(body, recording, 'segment %d: not the recording\'s bytes' % seq)
            owners.add('x-rill-hls-owner' in headers)
        self.assertEqual(owners, {True, False}, 'one worker answered every request')
        # Not produced: 404 (one before the history may still answer from the last ones read back).
        self.assertEqual(request(self.rill.http_port, 'GET', '/live/cam/%d.m4s' % (segs[-1][0] + 10 ** 6))[0], 404)

    def assert_decode_from_the_oldest_segment(self, *names):
        """ffmpeg decodes 3 s of each playlist from its oldest segment (read back from the
        recording) without an error; the playlists side by side.

        The decoded frames keep their own timestamps (-enc_time_base:v -1, the demuxer's 1/90000):
        by default ffmpeg gives them a time base of 1 / the frame rate it guessed from the first
        packets, and the publisher's loop seam (ffmpeg -stream_loop -c copy offsets each loop by
        the last audio timestamp + 1 ms: video steps 49 ms once, audio overlaps a frame) read near
        the start makes that guess 24.58 fps, which puts two 40 ms frames in one tick about 1.7 s
        in ("non monotonically increasing dts to muxer ... 43 >= 43"), the same with the
        publisher's own file and no Rill. In 1/90000 a frame served twice still fails."""
        procs = {}
        for name in names:
            procs[name] = subprocess.Popen(
                ['ffmpeg', '-hide_banner', '-nostdin', '-v', 'error', '-live_start_index', '0',
                 '-i', self.rill.http_url('/live/%s.m3u8' % name), '-t', '3',
                 '-enc_time_base:v', '-1', '-f', 'null', '-'],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for name, p in procs.items():
            try:
                _, err = p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
            self.assertEqual(p.returncode, 0, '%s: %s' % (name, err))
            if err.strip():
                self.fail('%s: %s\n%s' % (name, err, self.segment_timestamps(name)))

    def segment_timestamps(self, name, count=12):
        """What a decode failure needs to be told apart: the playlist, and each of its oldest
        segments' video packets (dts, pts) as ffprobe reads them behind the playlist's init."""
        text = self.playlist(name)[0]
        init_uri = re.search(r'#EXT-X-MAP:URI="([^"]+)"', text).group(1)
        init = request(self.rill.http_port, 'GET', '/live/' + init_uri)[2]
        out = [text]
        for seq, uri in parse(text)[1][:count]:
            st, _, body = request(self.rill.http_port, 'GET', '/live/' + uri)
            with tempfile.NamedTemporaryFile(suffix='.mp4') as f:
                f.write(init + body)
                f.flush()
                probe = subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'v', '-show_entries',
                                        'packet=dts,pts', '-of', 'csv=p=0', f.name],
                                       capture_output=True, text=True, timeout=30)
            stamps = probe.stdout.split()
            out.append('%d %s: %d, %d packets, first %s, last %s %s' % (
                seq, uri, st, len(stamps), stamps[:1], stamps[-1:], probe.stderr.strip()[:200]))
        return '\n'.join(out)

    def test_ffmpeg_decodes_from_the_oldest_segment(self):
        self.assert_decode_from_the_oldest_segment('cam')

    def test_removed_segment_stays_available_then_404(self):
        """The watch runs from setUpClass (named so that it ends while others run first)."""
        self.removal.join(REMOVAL_WATCH_S)
        self.assertFalse(self.removal.is_alive(), 'the watch did not end')
        self.assertIsNone(self.removal.error, self.removal.error)
        steps = self.removal.steps
        self.assertEqual([(s[1], s[2]) for s in steps], [(200, b'moof'), (200, b'moof'), (404, b'')],
                         '%s: %s\n%s' % (self.removal.uri, steps, self.failed_requests()))
        sys.stderr.write('\n%s: %s\n' % (self.removal.uri, '; '.join('%s: %d' % (s[0], s[1]) for s in steps)))

    def test_renditions_rewind_with_the_same_sequences(self):
        # The same media published twice: cut at the same slots, so the same sequence numbers
        # and durations in the recorded part as in the window (docs/abr.md, "Aligned segments").
        # Both playlists read at the same point: the history's front slides once rewind is full,
        # so two reads a segment apart start one apart (a misnumbered rendition stays apart).
        durations = {}
        for _ in range(40):
            texts = {name: self.playlist(name)[0] for name in ('cam_hi', 'cam_lo')}
            ends = [(parse(t)[1][0][0], parse(t)[1][-1][0]) for t in texts.values()]
            if ends[0] == ends[1]:
                break
            time.sleep(0.1)
        for name, text in texts.items():
            first, segs = parse(text)
            self.assertGreaterEqual(len(segs), LISTED - 2, text)
            self.assertEqual(segs, [(first + i, '%s/%d.m4s' % (name, first + i)) for i in range(len(segs))], text)
            self.assertEqual(text.count('#EXT-X-MAP'), 1, text)
            self.assertNotIn('#EXT-X-DISCONTINUITY', text)
            durations[name] = dict(zip((s[0] for s in segs), map(float, re.findall(r'#EXTINF:([\d.]+)', text))))
        hi, lo = durations['cam_hi'], durations['cam_lo']
        self.assertEqual(min(hi), min(lo), 'the oldest segments: %s %s' % (sorted(hi), sorted(lo)))
        for seq in set(hi) & set(lo):
            self.assertAlmostEqual(hi[seq], lo[seq], delta=0.041, msg='segment %d' % seq)
        self.assert_decode_from_the_oldest_segment('cam_hi', 'cam_lo')

    def test_non_owner_serves_the_same_playlist(self):
        answers = {}
        for _ in range(40):
            st, headers, body = request(self.rill.http_port, 'GET', '/live/cam.m3u8')
            self.assertEqual(st, 200)
            answers.setdefault('x-rill-hls-owner' in headers, body.decode())
            if len(answers) == 2:
                break
        self.assertEqual(len(answers), 2, 'one worker answered every request')
        owner, other = parse(answers[False])[1], parse(answers[True])[1]
        self.assertGreaterEqual(len(other), LISTED, answers[True])
        common = {s[0] for s in owner} & {s[0] for s in other}
        self.assertTrue(common)
        self.assertEqual([s for s in owner if s[0] in common], [s for s in other if s[0] in common])

    @unittest.skipIf(not os.path.exists(CHROMIUM) or not os.path.exists(HLS_JS) or not shutil.which('node'),
                     'needs chromium, node and tests/browser/node_modules')
    def test_hlsjs_seeks_back_and_returns_to_live(self):
        d = tempfile.mkdtemp(prefix='rill-page-')
        self.addCleanup(shutil.rmtree, d, True)
        shutil.copy(HLS_JS, os.path.join(d, 'hls.min.js'))
        stay_ms = 5000 if LONG else 2500
        with open(os.path.join(d, 'index.html'), 'w') as f:
            f.write(PAGE % {'src': json.dumps(self.rill.http_url('/live/cam.m3u8')), 'back': BACK_S,
                            'stay_ms': stay_ms})
        server = http.server.ThreadingHTTPServer((rilltest.HOST, 0), functools.partial(_QuietHandler, directory=d))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        out, diag = play_page(self, 'http://%s:%d/index.html' % (rilltest.HOST, server.server_address[1]),
                              12 if LONG else 7)
        log = out['log']
        diag += '\nrequests not answered 2xx:\n' + '\n'.join(self.failed_requests())
        self.assertFalse([l for l in log if 'FATAL' in l], diag)
        ticks = [re.match(r'tick (\S+) (\w+) t=(\S+) edge=(\S+)', l) for l in log if l.startswith('tick ')]
        ticks = [(float(m.group(1)), m.group(2), float(m.group(3)), float(m.group(4))) for m in ticks if m]
        back = [t for t in ticks if t[1] == 'back']
        ret = [t for t in ticks if t[1] == 'return']
        self.assertTrue(back and ret, diag)
        # Played from the recording: after the seek it loaded segments older than memory holds
        # (IN_MEMORY behind the newest segment the playlist listed then). Not behind the newest
        # the browser had loaded: hls.js starts 3 target durations (here 7 segments) behind the
        # playlist's end, more when its first loads are slow.
        seek_line = next(l for l in log if l.startswith('seek back'))
        seek_at = log.index(seek_line)
        listed_end = int(seek_line.split()[-1])
        self.assertGreaterEqual(listed_end, 0, diag)
        sn = lambda l: int(l.split()[1])
        self.assertTrue([l for l in log[seek_at:] if l.startswith('fragment') and sn(l) <= listed_end - IN_MEMORY],
                        'no segment at or before %d loaded after the seek\n%s' % (listed_end - IN_MEMORY, diag))
        # It played there: currentTime moved on from the seek target, with no stall over 1 s.
        self.assertGreater(back[-1][2] - back[0][2], 1.0, diag)
        self.assertLess(back[-1][2], back[-1][3] - BACK_S / 2, 'still behind the live edge\n' + diag)
        for a, b in zip(back[4:], back[8:]):  # each second after the seek settled (250 ms ticks)
            self.assertGreater(b[2], a[2], 'stalled between %.1f and %.1f s\n%s' % (a[0], b[0], diag))
        # Back at the live edge, playing on.
        self.assertLess(ret[-1][3] - ret[-1][2], 4.0, diag)
        for a, b in zip(ret[4:], ret[8:]):
            self.assertGreater(b[2], a[2], 'stalled between %.1f and %.1f s\n%s' % (a[0], b[0], diag))
        self.assertGreater(ret[-1][2] - ret[0][2], 0.5, 'not playing at the live edge\n' + diag)
        sys.stderr.write('\nhls.js: at %.1f s seek back to %.2f (edge %.2f), played to %.2f; at %.1f s returned, '
                         'to %.2f at %.1f s (edge %.2f)\n'
                         % (back[0][0], back[0][2], back[0][3], back[-1][2], ret[0][0], ret[-1][2], ret[-1][0],
                            ret[-1][3]))


if __name__ == '__main__':
    unittest.main()
