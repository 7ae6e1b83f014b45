"""One name rule for every protocol: RTMP publish and play, HTTP-FLV and HLS accept and refuse the
same app and stream names (the rule of media/stream_key.h, documented in docs/configuration.md).

Run:  cd tests/integration && RILL_BIN=.../rill python3 -m unittest -v test_stream_names
"""

import http.client
import unittest
import urllib.parse

import rtmpclient as rc
from rilltest import HOST, Rill

LONGEST = 'n' * 128

# Names that every protocol accepts ...
GOOD = ['cam', 'A-Z_0.9~x', '.hidden', 'x.', '~', 'a.b', LONGEST]
# ... and names that every protocol refuses.
BAD = ['.', '..', '...', 'a..b', 'x..', 'a b', 'a+b', '<x>', 'a%b', 'caf\u00e9', 'a\\b', LONGEST + 'n']


def http_status(port, path):
    """Status of a GET of `path` (the response body, a live FLV stream maybe, is not read)."""
    conn = http.client.HTTPConnection(HOST, port, timeout=5)
    try:
        conn.request('GET', path)
        return conn.getresponse().status
    finally:
        conn.close()


def quoted(name):
    return urllib.parse.quote(name, safe='')


class StreamNamesAgree(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rill = Rill({'apps': {'live': {'hls': {'enabled': True}}}})

    @classmethod
    def tearDownClass(cls):
        cls.rill.close()

    def publish(self, name):
        c, _, info = rc.connect_and_publish(HOST, self.rill.rtmp_port, 'live', name)
        return c, (info or {}).get('code')

    def play_code(self, name):
        c, _ = rc.connect_and_play(HOST, self.rill.rtmp_port, 'live', name)
        try:
            return c.wait_status(timeout=5).get('code')
        finally:
            c.close()

    def test_good_names_work_everywhere(self):
        for name in GOOD:
            with self.subTest(name=name):
                pub, code = self.publish(name)
                try:
                    self.assertEqual(code, 'NetStream.Publish.Start')
                    self.assertIn(self.play_code(name), ('NetStream.Play.Reset', 'NetStream.Play.Start'))
                    self.assertEqual(http_status(self.rill.http_port, '/live/%s.flv' % quoted(name)), 200)
                    # Published but no segment yet: 404, never 400.
                    self.assertEqual(http_status(self.rill.http_port, '/live/%s.m3u8' % quoted(name)), 404)
                finally:
                    pub.close()

    def test_bad_names_are_refused_everywhere(self):
        for name in BAD:
            with self.subTest(name=name):
                pub, code = self.publish(name)
                pub.close()
                self.assertEqual(code, 'NetStream.Publish.BadName')
                self.assertEqual(self.play_code(name), 'NetStream.Play.StreamNotFound')
                for suffix in ('.flv', '.m3u8', '/1.ts'):
                    self.assertEqual(http_status(self.rill.http_port, '/live/%s%s' % (quoted(name), suffix)), 400,
                                     suffix)

    def test_bad_app_names_are_refused_over_http(self):
        for app in ('..', 'a..b', 'caf\u00e9', LONGEST + 'n'):
            with self.subTest(app=app):
                self.assertEqual(http_status(self.rill.http_port, '/%s/cam.flv' % quoted(app)), 400)

    def test_the_server_survived(self):
        self.assertTrue(self.rill.running())


if __name__ == '__main__':
    unittest.main()
