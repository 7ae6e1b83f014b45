"""One HLS responder for every worker (docs/hls.md "Workers", docs/workers.md "HLS across
workers"): the worker that owns a stream and a worker that does not (which asks the owner over
the worker link) answer the same request with the same status and the same headers — playlist,
segment, LL-HLS part, blocking playlist reload, hinted part, refusals — and a stream that ended
still gets its EXT-X-ENDLIST playlist from every worker, on a plain multi-worker server and at an
edge whose other worker pulls the stream.

Which worker answered is in X-Rill-Worker (a fresh TCP connection lands on either worker, as the
kernel spreads them); a request is repeated on fresh connections until the wanted worker answers.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_hls_owner_equivalence
"""

import re
import time
import unittest

import rilltest
from hlsutil import Playlist, close_rill, make_gop1_media, request
from rilltest import Rill, require_tool, stop_process, wait_until
from test_worker_link import owner_slot, stats

WORKERS = 2
ATTEMPTS = 40  # fresh connections tried to reach one chosen worker (each lands on either)
# Differ between any two answers by design: when, and who answered.
IGNORED = {'date', 'x-rill-worker', 'x-rill-hls-owner'}


def hls_app(**extra):
    h = {'enabled': True, 'window': 3}
    h.update(extra)
    return {'hls': h}


def answer_from(port, path, want, timeout=10):
    """(status, headers, body) of `path` answered by a worker for which want(slot) is true, or
    None after ATTEMPTS fresh connections."""
    for _ in range(ATTEMPTS):
        status, headers, body = request(port, 'GET', path, timeout=timeout)
        if want(int(headers.get('x-rill-worker', -1))):
            return status, headers, body
    return None


def owner_of(rill, key, timeout=15):
    """The slot of the worker that publishes `key` (waits for one; slot 0 is an answer too)."""
    found = wait_until(lambda: (lambda s: [s] if s is not None else None)(owner_slot(stats(rill), key)),
                       timeout, 0.2)
    assert found, 'nobody publishes %s\n%s' % (key, rill.log_tail())
    return found[0]


def comparable(answer):
    status, headers, _ = answer
    return status, {k: v for k, v in headers.items() if k not in IGNORED}


class OwnerAndNonOwnerAnswerAlike(unittest.TestCase):
    """Two apps on 2 workers: `live` (MPEG-TS, 2 s fragments: target duration 2, so a plain
    playlist is cacheable for 1 s) and `ll` (LL-HLS, 200 ms parts)."""

    @classmethod
    def setUpClass(cls):
        require_tool('ffmpeg')
        media = make_gop1_media()
        cls.rill = Rill({'workers': WORKERS,
                         'apps': {'live': hls_app(fragment='2s'),
                                  'll': hls_app(fragment='1s', low_latency=True, part='200ms')}})
        cls.rill.wait_workers(WORKERS)
        cls.pubs = [rilltest.ffmpeg_publish(cls.rill.rtmp_url('eq', app), media) for app in ('live', 'll')]
        try:
            cls.owner = {app: owner_of(cls.rill, app + '/eq') for app in ('live', 'll')}

            # Steady playlists (a segment already slid out), so that a segment's max-age (the
            # playlist's duration plus a target duration) holds still between two requests.
            def steady(app):
                st, _, body = request(cls.rill.http_port, 'GET', '/%s/eq.m3u8' % app)
                return st == 200 and Playlist(body.decode()).media_sequence >= 1
            assert wait_until(lambda: steady('live') and steady('ll'), 30, 0.3), \
                'no steady playlists\n' + cls.rill.log_tail()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for p in cls.pubs:
            stop_process(p)
        if cls.rill.running():
            cls.rill.stop()
        cls.rill.close()

    def owner_and_other(self, app, path, tries=6, asks_owner=True):
        """Answers of the owner and of the other worker to `path` that agree in status and headers
        (a few tries: a new segment or part between the two requests changes the playlist's
        length); fails with the last difference. `asks_owner`: the other worker answers with the
        owner's answer (X-Rill-Hls-Owner), not by itself."""
        owner = self.owner[app]
        last = None
        for _ in range(tries):
            other = answer_from(self.rill.http_port, path, lambda w: w != owner)
            mine = answer_from(self.rill.http_port, path, lambda w: w == owner)
            self.assertIsNotNone(other, 'no request for %s reached the non-owner' % path)
            self.assertIsNotNone(mine, 'no request for %s reached the owner' % path)
            self.assertEqual(int(other[1].get('x-rill-hls-owner', -1)), owner if asks_owner else -1, other[1])
            if comparable(mine) == comparable(other):
                return mine, other
            last = (comparable(mine), comparable(other))
        self.fail('%s: owner (worker %d) and non-owner answer differently:\n  owner     %s\n  non-owner %s'
                  % (path, owner, last[0], last[1]))

    def playlist(self, app):
        st, _, body = request(self.rill.http_port, 'GET', '/%s/eq.m3u8' % app)
        self.assertEqual(st, 200, body)
        return body.decode()

    def test_playlist_and_segment(self):
        mine, _ = self.owner_and_other('live', '/live/eq.m3u8')
        self.assertEqual(mine[0], 200)
        self.assertEqual(mine[1]['cache-control'], 'max-age=1')  # target duration 2 s, halved
        newest = Playlist(self.playlist('live')).segments[-1]['uri']
        mine, _ = self.owner_and_other('live', '/live/' + newest)
        self.assertEqual(mine[0], 200)
        self.assertRegex(mine[1]['cache-control'], r'^max-age=\d+, immutable$')
        self.assertEqual(mine[1]['content-type'], 'video/mp2t')
        mine, _ = self.owner_and_other('live', '/live/eq/999999.ts')
        self.assertEqual(mine[0], 404)

    def test_low_latency_playlist_part_and_init(self):
        mine, _ = self.owner_and_other('ll', '/ll/eq.m3u8')
        self.assertEqual((mine[0], mine[1]['cache-control']), (200, 'no-cache'))
        text = self.playlist('ll')
        part = re.findall(r'#EXT-X-PART:DURATION=[\d.]+,URI="([^"]+)"', text)[-1]
        mine, _ = self.owner_and_other('ll', '/ll/' + part)
        self.assertEqual((mine[0], mine[1]['content-type']), (200, 'video/mp4'))
        self.assertRegex(mine[1]['cache-control'], r'^max-age=\d+, immutable$')
        init = re.search(r'#EXT-X-MAP:URI="([^"]+)"', text).group(1)
        mine, _ = self.owner_and_other('ll', '/ll/' + init)
        self.assertEqual(mine[0], 200)
        mine, _ = self.owner_and_other('ll', '/ll/eq/init-999.mp4')
        self.assertEqual(mine[0], 404)

    def test_blocking_reload_hinted_part_and_refusals(self):
        text = self.playlist('ll')
        seq = Playlist(text).segments[-1]['seq']
        # A position the playlist holds already (answered at once) and the next segment (held).
        for msn in (seq, seq + 1):
            mine, _ = self.owner_and_other('ll', '/ll/eq.m3u8?_HLS_msn=%d' % msn)
            self.assertEqual(mine[0], 200)
            self.assertEqual(mine[1]['cache-control'], 'max-age=1')  # one target duration
        # The part being produced: held until complete, on either worker (a fresh hint each try).
        owner = self.owner['ll']
        got = {}
        for _ in range(6):
            hint = re.search(r'#EXT-X-PRELOAD-HINT:TYPE=PART,URI="([^"]+)"', self.playlist('ll')).group(1)
            for name, want in (('owner', lambda w: w == owner), ('other', lambda w: w != owner)):
                a = answer_from(self.rill.http_port, '/ll/' + hint, want)
                self.assertIsNotNone(a)
                got[name] = comparable(a)
            if got['owner'][0] == 200 and got['owner'] == got['other']:
                break
        self.assertEqual(got['owner'], got['other'])
        self.assertEqual(got['owner'][0], 200)
        # Refusals keep their status across the link: too far ahead (400, the owner's verdict);
        # _HLS_part alone is a bad request either worker refuses by itself (400).
        mine, _ = self.owner_and_other('ll', '/ll/eq.m3u8?_HLS_msn=%d' % (seq + 50))
        self.assertEqual(mine[0], 400)
        mine, _ = self.owner_and_other('ll', '/ll/eq.m3u8?_HLS_part=1', asks_owner=False)
        self.assertEqual(mine[0], 400)


class EndedPlaylistOnEveryWorker(unittest.TestCase):
    """After the publisher left, the worker that made the stream's HLS keeps the ended playlist
    (EXT-X-ENDLIST) for a grace period: every worker serves it, not only that one."""

    def setUp(self):
        require_tool('ffmpeg')
        self.media = make_gop1_media()

    def wait_ended_at(self, rill, path, slot):
        def ended():
            a = answer_from(rill.http_port, path, lambda w: w == slot, timeout=3)
            return a if a and a[0] == 200 and b'#EXT-X-ENDLIST' in a[2] else None
        a = wait_until(ended, 15, 0.3)
        self.assertTrue(a, 'worker %d never served the ended playlist\n%s' % (slot, rill.log_tail()))
        return a

    def test_non_owner_serves_the_ended_playlist(self):
        rill = Rill({'workers': WORKERS, 'apps': {'live': hls_app(fragment='1s')}})
        self.addCleanup(lambda: close_rill(self, rill))
        rill.wait_workers(WORKERS)
        pub = rilltest.ffmpeg_publish(rill.rtmp_url('gone'), self.media)
        self.addCleanup(stop_process, pub)
        owner = owner_of(rill, 'live/gone')
        self.assertTrue(wait_until(lambda: len(Playlist(request(rill.http_port, 'GET', '/live/gone.m3u8')[2]
                                                          .decode('utf-8', 'replace')).segments) >= 2, 20, 0.3))
        stop_process(pub)
        mine = self.wait_ended_at(rill, '/live/gone.m3u8', owner)
        other = answer_from(rill.http_port, '/live/gone.m3u8', lambda w: w != owner)
        self.assertIsNotNone(other)
        self.assertEqual(other[0], 200, other[2][:300])
        self.assertEqual(other[2], mine[2])
        self.assertEqual(comparable(other), comparable(mine))
        seg = Playlist(other[2].decode()).segments[-1]['uri']
        got = answer_from(rill.http_port, '/live/' + seg, lambda w: w != owner)
        self.assertEqual(got[0], 200)

    def test_non_pulling_edge_worker_serves_the_ended_playlist(self):
        origin = Rill({'apps': {'live': {}}}, name='endlist-origin')
        self.addCleanup(origin.close)
        pub = rilltest.ffmpeg_publish(origin.rtmp_url('cam'), self.media)
        self.addCleanup(stop_process, pub)
        self.assertTrue(origin.wait_for_log(r'publishing live/cam', 15))
        edge = Rill({'workers': WORKERS, 'worker_link': {'idle_grace': '200ms'}, 'log': {'level': 'info'},
                     'apps': {'live': dict(hls_app(fragment='1s'),
                                           edge={'origins': [origin.rtmp_url('', 'live').rstrip('/')],
                                                 'connect_timeout': '1s'})}},
                    name='endlist-edge')
        self.addCleanup(lambda: close_rill(self, edge))
        edge.wait_workers(WORKERS)

        def playing():
            st, _, body = request(edge.http_port, 'GET', '/live/cam.m3u8', timeout=5)
            return st == 200 and len(Playlist(body.decode()).segments) >= 2
        self.assertTrue(wait_until(playing, 30, 0.5), 'no playlist at the edge\n' + edge.log_tail())
        puller = owner_of(edge, 'live/cam')
        stop_process(pub)
        mine = self.wait_ended_at(edge, '/live/cam.m3u8', puller)
        time.sleep(0.5)  # the pull has let the name go by now
        other = answer_from(edge.http_port, '/live/cam.m3u8', lambda w: w != puller)
        self.assertIsNotNone(other)
        self.assertEqual(other[0], 200, other[2][:300])
        self.assertIn(b'#EXT-X-ENDLIST', other[2])
        self.assertEqual(other[2], mine[2])


if __name__ == '__main__':
    unittest.main()
