"""Origin/edge cluster, pushes and pulls between real Rill processes (docs/cluster.md).

Topology (loopback, distinct ports): origin A and backup origin B, each fed by its own ffmpeg
with the same file (hot backup); two edges with `workers: 2` whose app `live` lists A then B.
PLAYERS players per edge (100 by default); the figures measured are printed and go into
docs/cluster.md.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_cluster
"""

import os
import re
import signal
import time
import unittest

import rilltest
from muxplayers import MuxPlayers
from rilltest import HOST, Rill, ffmpeg_publish, stop_process, wait_until
from test_worker_link import make_relay_media

# Per edge (RTMP players on edge 1, HTTP-FLV players on edge 2), as the issue asks; the players
# are multiplexed in one Python thread. RILL_CLUSTER_PLAYERS=N scales it (e.g. on a slow machine).
PLAYERS = int(os.environ.get('RILL_CLUSTER_PLAYERS', '100'))
IDLE_CLOSE_S = 2


def origin_config(extra_apps=None):
    apps = {'live': {'publisher_idle_timeout': '1s'}}
    apps.update(extra_apps or {})
    return {'apps': apps, 'log': {'level': 'info'}}


def edge_config(origins, workers=2, idle_close='%ds' % IDLE_CLOSE_S, publish='forward', hls=False):
    app = {'edge': {'origins': [o.rtmp_url('', 'live').rstrip('/') for o in origins],
                    'connect_timeout': '1s', 'idle_close': idle_close, 'publish': publish},
           'publisher_idle_timeout': '2s'}
    if hls:
        app['hls'] = {'enabled': True, 'fragment': '1s', 'window': 4}
    return {'workers': workers, 'worker_link': {'idle_grace': '100ms'}, 'log': {'level': 'info'},
            'apps': {'live': app}}


def plays_of(rill, name):
    """How many RTMP plays of live/NAME the server accepted (one per upstream of an edge)."""
    return len(re.findall(r'rtmp: \S+ playing live/%s\b' % re.escape(name), rill.log_text()))


def stall_around(state, t, after=3.0):
    """The longest time without video a player saw from just before t to `after` s past it
    (None: no frame after t)."""
    times = [a for a, _ in state.video if t - 0.5 <= a <= t + after]
    if not times or times[-1] <= t:
        return None
    return max(b - a for a, b in zip(times, times[1:]))


def lag_ms(state, start, end):
    """Median of (arrival - timestamp) in ms over [start, end]: how far behind live a player is,
    up to a constant. A difference between two windows is the delay a failover added."""
    xs = sorted(a * 1000 - ts for a, ts in state.video if start <= a <= end and ts is not None)
    return xs[len(xs) // 2] if xs else None


def monotonic(state):
    ts = [x for _, x in state.video if x is not None]
    return all(b >= a for a, b in zip(ts, ts[1:]))


class ClusterBase(unittest.TestCase):
    def start(self, config, name):
        r = Rill(config, name=name)
        self.addCleanup(r.close)
        return r

    def publish(self, rill, name, app='live'):
        p = ffmpeg_publish(rill.rtmp_url(name, app), media=self.media)
        self.addCleanup(stop_process, p)
        return p

    def players(self, rill, rtmp_port=None):
        m = MuxPlayers(HOST, rtmp_port or rill.rtmp_port, rill.http_port, max_frames=5000)
        self.addCleanup(m.stop)
        return m

    def setUp(self):
        self.media = make_relay_media()


class EdgeTest(ClusterBase):
    def setUp(self):
        super().setUp()
        self.a = self.start(origin_config(), 'origin-a')
        self.b = self.start(origin_config(), 'origin-b')
        self.publish(self.a, 'cam')
        self.publish(self.b, 'cam')
        self.edge1 = self.start(edge_config([self.a, self.b]), 'edge1')
        self.edge2 = self.start(edge_config([self.a, self.b], hls=True), 'edge2')
        self.assertTrue(self.a.wait_for_log(r'publishing live/cam', 15))
        self.assertTrue(self.b.wait_for_log(r'publishing live/cam', 15))

    def attach(self):
        m = self.players(self.edge1)
        m.add_rtmp('live', 'cam', PLAYERS)
        m.start()
        m2 = MuxPlayers(HOST, self.edge2.rtmp_port, self.edge2.http_port, max_frames=5000)
        self.addCleanup(m2.stop)
        m2.add_flv('live', 'cam', PLAYERS)
        m2.start()
        everyone = lambda: m.snapshot() + m2.snapshot()
        ok = wait_until(lambda: all(len(s.frames) >= 10 for s in everyone()), 20)
        self.assertTrue(ok, 'frames per player: %s' % [len(s.frames) for s in everyone()])
        return m, m2, everyone

    def test_players_share_one_upstream_per_edge_then_linger_and_close(self):
        m, m2, everyone = self.attach()
        self.assertTrue(all(s.frames[0][1] for s in everyone()), 'every player starts on a keyframe')
        self.assertEqual(plays_of(self.a, 'cam'), 2, 'A saw one upstream per edge:\n' + self.a.log_text()[-3000:])
        self.assertEqual(plays_of(self.b, 'cam'), 0)
        # Players leave: the upstream lingers idle_close, then closes.
        off1, off2 = self.edge1.log_offset(), self.edge2.log_offset()
        t0 = time.monotonic()
        m.stop()
        m2.stop()
        for edge, off in ((self.edge1, off1), (self.edge2, off2)):
            self.assertTrue(edge.wait_for_log(r'edge-pull live/cam closed: closed by idle', IDLE_CLOSE_S + 10, off))
        closed_after = time.monotonic() - t0
        print('\n[cluster] upstreams closed %.2f s after the last player left (idle_close %d s)'
              % (closed_after, IDLE_CLOSE_S))
        self.assertLessEqual(closed_after, IDLE_CLOSE_S + 1 + 1.0)  # + 1 s of test-side slack
        self.assertGreaterEqual(closed_after, IDLE_CLOSE_S - 0.3)

    def test_failover_keeps_players_and_timestamps(self):
        m, m2, everyone = self.attach()
        time.sleep(1.0)
        before = len(everyone())
        kill_at = time.monotonic()
        rilltest._kill_tree(self.a.pid)  # kill -9 of the master and its workers: the host is gone
        # A new player one second after the kill starts quickly: A is remembered as failed.
        time.sleep(1.0)
        late = self.players(self.edge1)
        late_at = time.monotonic()
        late.add_rtmp('live', 'cam', 1)
        late.start()
        self.assertTrue(wait_until(lambda: late.snapshot()[0].frames, 5), 'late player got nothing')
        late_start = late.snapshot()[0].video[0][0] - late_at
        time.sleep(2.0)
        states = everyone()
        self.assertEqual(len(states), before)
        self.assertFalse([s for s in states if s.closed], 'a player was disconnected')
        gaps = [stall_around(s, kill_at) for s in states]
        self.assertNotIn(None, gaps, 'a player got no media after the failover')
        self.assertTrue(all(monotonic(s) for s in states), 'timestamps went back')
        worst = max(gaps)
        # Behind live: the same before the kill and after the failover settled.
        now = time.monotonic()
        drift = [lag_ms(s, now - 1.5, now) - lag_ms(s, kill_at - 1.0, kill_at) for s in states]
        print('\n[cluster] failover: longest stall of %d edge players %.3f s median, %.3f s worst; '
              'added delay %.0f ms median, %.0f ms worst; new player 1 s after the kill started in %.3f s'
              % (len(gaps), sorted(gaps)[len(gaps) // 2], worst, sorted(drift)[len(drift) // 2],
                 max(drift, key=abs), late_start))
        self.assertLessEqual(max(abs(d) for d in drift), 500, 'players fell behind live')
        self.assertTrue(self.edge1.wait_for_log(r'failover', 5))
        self.assertLessEqual(worst, 1.5)  # goal 1 s; 0.5 s of slack for this loaded machine
        self.assertLessEqual(late_start, 1.0)
        self.assertEqual(plays_of(self.b, 'cam'), 2, 'B took over once per edge')

    def test_no_origin_has_it_is_not_found(self):
        t0 = time.monotonic()
        status, _, _ = rilltest.http_get(self.edge1.http_url('/live/nothing.flv'), timeout=10)
        took = time.monotonic() - t0
        self.assertEqual(status, 404)
        self.assertLess(took, 2 * 1.0 + 1.0)  # connect_timeout x origins, + slack
        m = self.players(self.edge2)
        m.add_rtmp('live', 'nothing', 1)
        m.start()
        self.assertTrue(wait_until(lambda: 'NetStream.Play.StreamNotFound' in m.snapshot()[0].statuses, 5))

    def test_publish_at_edge_reaches_origin_and_other_edge(self):
        self.publish(self.edge1, 'fwd')
        self.assertTrue(self.a.wait_for_log(r'publishing live/fwd', 20), self.edge1.log_text()[-3000:])
        for server in (self.a, self.edge2):
            m = self.players(server)
            m.add_rtmp('live', 'fwd', 2)
            m.start()
            self.assertTrue(wait_until(lambda: all(len(s.frames) >= 5 for s in m.snapshot()), 20),
                            'no frames of live/fwd on %s' % server.log_path)

    def test_hls_at_the_edge_without_players(self):
        url = self.edge2.http_url('/live/cam.m3u8')
        body = None

        def playlist():
            nonlocal body
            status, headers, body = rilltest.http_get(url, timeout=3)
            return status == 200 and b'#EXTINF' in body
        self.assertTrue(wait_until(playlist, 15, interval=0.3), 'no playlist at the edge')
        seg = [l for l in body.decode().splitlines() if l and not l.startswith('#')][0]
        status, headers, data = rilltest.http_get(self.edge2.http_url('/live/' + seg))
        self.assertEqual(status, 200)
        self.assertEqual(data[0], 0x47)
        self.assertRegex(headers['Cache-Control'], r'^max-age=\d+, immutable$')
        self.assertEqual(plays_of(self.a, 'cam'), 1)
        # HLS viewers alone keep the pull (whichever worker answers them), then it lingers and closes.
        end = time.monotonic() + IDLE_CLOSE_S + 2
        while time.monotonic() < end:
            self.assertEqual(rilltest.http_get(url, timeout=3)[0], 200)
            time.sleep(0.3)
        self.assertNotIn('closed by idle', self.edge2.log_text())
        self.assertTrue(self.edge2.wait_for_log(r'edge-pull live/cam closed: closed by idle', IDLE_CLOSE_S + 5))


class RelayTest(ClusterBase):
    def test_push_target_down_then_up_resumes(self):
        target_port = rilltest.free_port()
        a = self.start({'apps': {'live': {'push': [{'url': 'rtmp://127.0.0.1:%d/live' % target_port,
                                                     'reconnect': '700ms'}]}}}, 'pusher')
        pub = self.publish(a, 'cam')
        self.assertTrue(a.wait_for_log(r'push live/cam: .* failed', 15))
        # The target is down 20 s. Retries after 0.7, 2.1, 4.9, 10.5, 21.7 s (the delay doubles),
        # so the one at 21.7 s finds it; the next would be 44.1 s.
        time.sleep(20)
        b = Rill({'rtmp': {'listen': ['127.0.0.1:%d' % target_port]}}, name='push-target')
        self.addCleanup(b.close)
        self.assertTrue(b.wait_for_log(r'publishing live/cam', 30), a.log_text()[-3000:])
        m = self.players(b, target_port)
        m.add_rtmp('live', 'cam', 1)
        m.start()
        self.assertTrue(wait_until(lambda: len(m.snapshot()[0].frames) >= 10, 15))
        self.assertIsNone(pub.poll(), 'the publisher noticed')
        self.assertEqual(len(re.findall(r'publishing live/cam', a.log_text())), 1, 'the publisher reconnected')

    def test_push_pair_does_not_loop(self):
        # A pushes live to B, B pushes live to A (ports chosen first, so each names the other).
        a_port, b_port = rilltest.free_port(), rilltest.free_port()
        def pair(mine, other, name):
            return self.start({'rtmp': {'listen': ['127.0.0.1:%d' % mine]}, 'log': {'level': 'info'},
                               'apps': {'live': {'push': [{'url': 'rtmp://127.0.0.1:%d/live' % other,
                                                           'reconnect': '500ms'}]}}}, name)
        a = pair(a_port, b_port, 'pair-a')
        b = pair(b_port, a_port, 'pair-b')
        p = ffmpeg_publish('rtmp://127.0.0.1:%d/live/cam' % a_port, media=self.media)
        self.addCleanup(stop_process, p)
        self.assertTrue(b.wait_for_log(r'publishing live/cam', 20), a.log_text()[-2000:])
        time.sleep(3)
        # B's push back to A is refused (A has a publisher): no stream goes round.
        self.assertEqual(len(re.findall(r'publishing live/cam', a.log_text())), 1)
        self.assertEqual(len(re.findall(r'publishing live/cam', b.log_text())), 1)
        self.assertRegex(a.log_text(), r'publish live/cam refused')

    def test_hop_limit_ends_a_chain(self):
        # One server pushing app l0 to l1, l1 to l2, ... l9 to l10 (a loop seen from inside):
        # the stream crosses at most 8 relays, so l8 has it and l9 never does.
        port = rilltest.free_port()
        apps = {'l%d' % i: {'push': [{'url': 'rtmp://127.0.0.1:%d/l%d' % (port, i + 1), 'reconnect': '300ms'}]}
                for i in range(10)}
        apps['l10'] = {}
        r = self.start({'rtmp': {'listen': ['127.0.0.1:%d' % port]}, 'apps': apps}, 'chain')
        p = ffmpeg_publish('rtmp://127.0.0.1:%d/l0/cam' % port, media=self.media)
        self.addCleanup(stop_process, p)
        self.assertTrue(r.wait_for_log(r'publishing l8/cam', 20), r.log_text()[-3000:])
        self.assertTrue(r.wait_for_log(r'l8/cam not forwarded: it already crossed 8 servers', 10))
        time.sleep(1)
        self.assertNotIn('publishing l9/cam', r.log_text())

    def test_edge_hls_ends_with_the_origin_stream(self):
        o = self.start(origin_config(), 'end-origin')
        pub = self.publish(o, 'cam')
        e = self.start(edge_config([o], workers=1, hls=True), 'end-edge')
        url = e.http_url('/live/cam.m3u8')
        self.assertTrue(wait_until(lambda: rilltest.http_get(url, timeout=3)[0] == 200, 15, interval=0.3))
        stop_process(pub)
        ended = lambda: b'#EXT-X-ENDLIST' in rilltest.http_get(url, timeout=3)[2]
        self.assertTrue(wait_until(ended, 10, interval=0.3), 'no #EXT-X-ENDLIST at the edge\n' + e.log_text()[-2000:])

    def test_static_pull(self):
        a = self.start(origin_config(), 'pull-origin')
        self.publish(a, 'cam')
        p = self.start({'apps': {'live': {'pull': [{'url': a.rtmp_url('cam'), 'name': 'mirror'}]}}}, 'puller')
        m = self.players(p)
        self.assertTrue(p.wait_for_log(r'pull live/mirror up', 20), p.log_text()[-2000:])
        m.add_rtmp('live', 'mirror', 2)
        m.start()
        self.assertTrue(wait_until(lambda: all(len(s.frames) >= 5 for s in m.snapshot()), 15))
        # The pull holds the name: a local publish of it is refused.
        off = p.log_offset()
        local = ffmpeg_publish(p.rtmp_url('mirror'), media=self.media)
        self.addCleanup(stop_process, local)
        self.assertTrue(p.wait_for_log(r'publish live/mirror refused', 10, off), p.log_text()[-2000:])


if __name__ == '__main__':
    unittest.main()
