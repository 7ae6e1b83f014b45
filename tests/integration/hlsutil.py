"""Helpers shared by the HLS integration tests (test_hls, test_browser_hls): test media with a
1 s GOP, a playlist parser and small HTTP helpers (standard library only)."""

import http.client
import re

import rilltest

FRAGMENT_S = 1  # hls.fragment in the test configuration
WINDOW = 5


def hls_config(extra_apps=None, **hls):
    """Rill config dict: app live with HLS on (fragment 1s, window 5), plus `extra_apps`."""
    h = {'enabled': True, 'fragment': '%ds' % FRAGMENT_S, 'window': WINDOW}
    h.update(hls)
    apps = {'live': {'hls': h}}
    apps.update(extra_apps or {})
    return {'apps': apps}


def make_gop1_media(seconds=10):
    """rilltest.make_test_media with a keyframe every second, so that 1 s fragments are cut
    every second. Cached."""
    return rilltest.make_test_media(seconds=seconds, gop=25)


class Playlist:
    """A parsed media playlist (RFC 8216 §4.3)."""

    def __init__(self, text):
        self.text = text
        self.media_sequence = 0
        self.discontinuity_sequence = 0
        self.target_duration = None
        self.ended = '#EXT-X-ENDLIST' in text
        self.segments = []  # dicts: seq, uri, duration, discontinuity
        seq = None
        duration = None
        disc = False
        for line in text.splitlines():
            line = line.strip()
            if line.startswith('#EXT-X-MEDIA-SEQUENCE:'):
                self.media_sequence = int(line.split(':', 1)[1])
            elif line.startswith('#EXT-X-DISCONTINUITY-SEQUENCE:'):
                self.discontinuity_sequence = int(line.split(':', 1)[1])
            elif line.startswith('#EXT-X-TARGETDURATION:'):
                self.target_duration = int(line.split(':', 1)[1])
            elif line == '#EXT-X-DISCONTINUITY':
                disc = True
            elif line.startswith('#EXTINF:'):
                duration = float(line.split(':', 1)[1].split(',')[0])
            elif line and not line.startswith('#'):
                seq = self.media_sequence + len(self.segments)
                self.segments.append({'seq': seq, 'uri': line, 'duration': duration, 'discontinuity': disc})
                duration = None
                disc = False

    @property
    def duration(self):
        return sum(s['duration'] or 0 for s in self.segments)


def seq_of_uri(uri):
    m = re.search(r'/(\d+)\.ts$', uri)
    return int(m.group(1)) if m else None


def request(port, method, path, headers=None, timeout=10):
    """(status, headers {lowercase: value}, body) of one request on a fresh connection."""
    conn = http.client.HTTPConnection(rilltest.HOST, port, timeout=timeout)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        body = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body
    finally:
        conn.close()


def ended_playlist_media(test, rill, app, name, timeout=20):
    """(playlist text, the init section (fMP4, else b'') followed by every segment) of
    /APP/NAME.m3u8 once it carries EXT-X-ENDLIST; fails `test` when it does not in `timeout` s
    or lists fewer than 2 segments."""
    path = '/%s/%s.m3u8' % (app, name)

    def ended():
        st, _, body = request(rill.http_port, 'GET', path)
        return st == 200 and b'#EXT-X-ENDLIST' in body and body
    body = rilltest.wait_until(ended, timeout, 0.2)
    test.assertTrue(body, 'no ended playlist %s\n%s' % (path, rill.log_tail()))
    text = body.decode()
    pl = Playlist(text)
    test.assertGreaterEqual(len(pl.segments), 2, text)
    uris = [s['uri'] for s in pl.segments]
    m = re.search(r'#EXT-X-MAP:URI="([^"]+)"', text)
    if m:
        uris.insert(0, m.group(1))
    data = b''
    for uri in uris:
        st, _, seg = request(rill.http_port, 'GET', '/%s/%s' % (app, uri))
        test.assertEqual(st, 200, uri)
        data += seg
    return text, data


def get_playlist(port, path='/live/test.m3u8'):
    """The parsed playlist, or None when it does not answer 200."""
    status, _, body = request(port, 'GET', path)
    return Playlist(body.decode('utf-8', 'replace')) if status == 200 else None


def playlist_cache_control(body):
    """The Cache-Control Rill sends with a playlist: max-age of half its target duration (whole
    seconds), no-cache below 2 s (docs/cluster.md)."""
    text = body.decode() if isinstance(body, bytes) else body
    m = re.search(r'#EXT-X-TARGETDURATION:(\d+)', text)
    target = int(m.group(1)) if m else 0
    return 'max-age=%d' % (target // 2) if target >= 2 else 'no-cache'


def close_rill(test, rill):
    """addCleanup helper: stops `rill`, printing its log tail when `test` failed."""
    import sys
    failed = not getattr(test._outcome, 'success', True)
    try:
        if rill.running():
            rill.stop()
    finally:
        if failed:
            sys.stderr.write('\n--- rill log ---\n%s\n' % rill.log_tail(80))
        rill.close(failed=failed)
