"""The control plane (docs/api.md) against 2 workers: the JSON API, /metrics and their totals.

2 streams published with ffmpeg; 30 RTMP + 20 HTTP-FLV players (MuxPlayers, one thread) and 5 HLS
viewers (threads with their own User-Agent) land on both workers through SO_REUSEPORT. The API
must count exactly what the clients see, match ffprobe on codec and picture size, page exactly,
refuse a missing or wrong token, kick one client only, cut a publisher on DELETE, agree with
/metrics, and never let a `_total` counter go down when a worker is killed with SIGKILL.

With RILL_API_EXAMPLES=DIR the responses are written to DIR (scripts/api-doc-examples turns them
into the examples of docs/api.md).
"""

import http.client
import json
import os
import re
import signal
import socket
import threading
import time
import unittest

from muxplayers import MuxPlayers
from rtmpclient import RtmpConnection
from rilltest import (HOST, Rill, ffmpeg_publish, make_test_media, require_tool, run, stop_process,
                      wait_until)

TOKEN = 'test-token-1234'
RTMP_PER_STREAM = 15
FLV_PER_STREAM = 10
HLS_VIEWERS = {'cam1': 3, 'cam2': 2}
STREAMS = ('cam1', 'cam2')


def api(r, method, path, token=TOKEN, timeout=10):
    """(status, headers, parsed JSON or text) of one API request."""
    conn = http.client.HTTPConnection(HOST, r.api_port, timeout=timeout)
    try:
        headers = {'Authorization': 'Bearer ' + token} if token else {}
        conn.request(method, path, headers=headers)
        resp = conn.getresponse()
        body = resp.read().decode('utf-8')
        hdrs = {k.lower(): v for k, v in resp.getheaders()}
        if hdrs.get('content-type', '').startswith('application/json') and body:
            return resp.status, hdrs, json.loads(body)
        return resp.status, hdrs, body
    finally:
        conn.close()


def get(r, path, **kw):
    status, _, body = api(r, 'GET', path, **kw)
    if status != 200:
        raise AssertionError('GET %s: %s %s' % (path, status, body))
    return body


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """A small Prometheus text-format parser: {name: [(labels dict, value)]}; checks that every
    sample belongs to the family of the last TYPE line and every family has HELP and TYPE."""
    families, types, helps, current = {}, {}, set(), None
    for line in text.splitlines():
        if line.startswith('# HELP '):
            helps.add(line.split(' ')[2])
            continue
        if line.startswith('# TYPE '):
            _, _, name, kind = line.split(' ')
            assert kind in ('counter', 'gauge', 'summary', 'histogram', 'untyped'), line
            types[name] = kind
            current = name
            continue
        if not line or line.startswith('#'):
            continue
        m = _SAMPLE.match(line)
        assert m, 'not a sample line: %r' % line
        name = m.group(1)
        assert current and name.startswith(current), '%s outside its family (%s)' % (name, current)
        if types[current] == 'counter':
            assert name.endswith('_total'), name
        labels = dict(_LABEL.findall(m.group(3) or ''))
        families.setdefault(name, []).append((labels, float(m.group(4))))
    assert set(types) <= helps, 'a family without HELP'
    return families


def total(families, name, **match):
    return sum(v for labels, v in families.get(name, []) if all(labels.get(k) == x for k, x in match.items()))


class HlsViewer(threading.Thread):
    """Polls a playlist and fetches its new segments, as a player does, with its own User-Agent."""

    def __init__(self, port, stream, agent):
        super().__init__(daemon=True)
        self.port, self.path, self.agent = port, '/live/%s.m3u8' % stream, agent
        self.stop_event = threading.Event()
        self.segments = 0

    def run(self):
        seen = set()
        deadline = time.time() + 300
        while not self.stop_event.is_set() and time.time() < deadline:
            try:
                conn = http.client.HTTPConnection(HOST, self.port, timeout=5)
                conn.request('GET', self.path, headers={'User-Agent': self.agent})
                resp = conn.getresponse()
                text = resp.read().decode('utf-8', 'replace')
                if resp.status == 200:
                    for uri in [l for l in text.splitlines() if l and not l.startswith('#')][-2:]:
                        if uri in seen:
                            continue
                        path = uri if uri.startswith('/') else self.path.rsplit('/', 1)[0] + '/' + uri
                        conn.request('GET', path, headers={'User-Agent': self.agent})
                        conn.getresponse().read()
                        seen.add(uri)
                        self.segments += 1
                conn.close()
            except (OSError, http.client.HTTPException):
                pass
            self.stop_event.wait(1.0)


class ApiPortTest(unittest.TestCase):
    def test_stream_paths_are_not_served_on_the_api_port(self):
        # The API's HTTP server mounts no stream route: a stream path is an ordinary 404 there,
        # a stream name the rule refuses included (the stream server would say 400).
        with Rill({'api': {'token': TOKEN}}) as r:
            for path in ('/live/cam.flv', '/live/cam.m3u8', '/live/a%20b.flv', '/live/cam/1.ts'):
                status, _, body = api(r, 'GET', path)
                self.assertEqual(status, 404, '%s on the API port: %s %r' % (path, status, body))
            status, _, _ = api(r, 'GET', '/api/v1/server')
            self.assertEqual(status, 200)


class ApiTest(unittest.TestCase):

    def setUp(self):
        require_tool('ffmpeg')
        self.examples = os.environ.get('RILL_API_EXAMPLES')

    def example(self, name, body):
        if self.examples:
            os.makedirs(self.examples, exist_ok=True)
            with open(os.path.join(self.examples, name), 'w') as f:
                f.write(body if isinstance(body, str) else json.dumps(body, indent=2, sort_keys=True) + '\n')

    def start(self):
        r = Rill({'workers': 2, 'api': {'token': TOKEN},
                  'apps': {'live': {'hls': {'enabled': True, 'fragment': '2s', 'window': 5}}}})
        self.addCleanup(r.close)
        media = make_test_media()
        pubs = {s: ffmpeg_publish(r.rtmp_url(s), media) for s in STREAMS}
        for p in pubs.values():
            self.addCleanup(stop_process, p)

        def both_live():
            items = get(r, '/api/v1/streams')['items']
            return len(items) == 2 and all(i['video'] and i['hls']['segments'] > 0 for i in items)
        self.assertTrue(wait_until(both_live, 30, 0.5), 'streams not live: %s' % get(r, '/api/v1/streams'))
        return r, pubs

    def start_players(self, r):
        mux = MuxPlayers(HOST, r.rtmp_port, r.http_port)
        self.addCleanup(mux.stop)
        for s in STREAMS:
            mux.add_rtmp('live', s, RTMP_PER_STREAM)
            mux.add_flv('live', s, FLV_PER_STREAM)
        mux.start()
        viewers = []
        for s, n in HLS_VIEWERS.items():
            viewers += [HlsViewer(r.http_port, s, 'viewer-%s-%d' % (s, i)) for i in range(n)]
        for v in viewers:
            v.start()
            self.addCleanup(v.stop_event.set)
        return mux, viewers

    def wait_totals(self, r, rtmp, flv, hls, timeout=30):
        last = {}

        def ok():
            last['server'] = get(r, '/api/v1/server')
            return last['server']['totals']['players'] == {'rtmp': rtmp, 'flv': flv, 'hls': hls}
        self.assertTrue(wait_until(ok, timeout, 0.5), 'totals: %s' % last.get('server', {}).get('totals'))
        return last['server']

    def test_api_metrics_kick_delete_and_kill(self):
        r, pubs = self.start()
        mux, viewers = self.start_players(r)
        rtmp, flv, hls = 2 * RTMP_PER_STREAM, 2 * FLV_PER_STREAM, sum(HLS_VIEWERS.values())
        self.assertTrue(wait_until(lambda: all(len(p.frames) >= 5 for p in mux.snapshot()), 30, 0.5),
                        'players got no video')
        server = self.wait_totals(r, rtmp, flv, hls)
        self.example('server.json', server)

        # Totals count what the clients see: every player is connected on the client side.
        self.assertEqual([p for p in mux.snapshot() if p.closed], [])
        self.assertEqual(server['totals']['streams'], 2)
        self.assertEqual(server['totals']['publishers'], 2)
        self.assertEqual([w['id'] for w in server['workers']], [0, 1])
        self.check_streams(r)
        clients = self.check_clients(r, rtmp, flv, hls)
        self.check_paging(r, rtmp + flv + hls + 2)
        self.check_token(r)
        self.check_metrics(r, rtmp, flv, hls)
        self.check_kick(r, mux, clients)
        self.check_kick_publisher_gets_status(r)
        self.check_delete_stream(r, pubs)
        self.check_kill_keeps_counters(r)

    def check_streams(self, r):
        streams = get(r, '/api/v1/streams')
        self.example('streams.json', streams)
        self.assertEqual(streams['total'], 2)
        probe = run(['ffprobe', '-v', 'error', '-rw_timeout', '10000000', '-show_entries',
                     'stream=codec_name,width,height,sample_rate,channels', '-of', 'json',
                     r.rtmp_url('cam1')], timeout=60)
        info = json.loads(probe.stdout)['streams']
        video = [s for s in info if 'width' in s][0]
        audio = [s for s in info if 'sample_rate' in s][0]
        one = get(r, '/api/v1/streams/live/cam1')
        self.example('stream.json', one)
        self.assertEqual((one['video']['codec'], one['video']['width'], one['video']['height']),
                         (video['codec_name'], video['width'], video['height']))
        self.assertEqual((one['audio']['codec'], one['audio']['sample_rate'], one['audio']['channels']),
                         (audio['codec_name'], int(audio['sample_rate']), audio['channels']))
        self.assertAlmostEqual(one['video']['fps'], 25, delta=1.5)
        self.assertGreater(one['bitrate_in_kbps'], 100)
        self.assertEqual(one['players'], {'rtmp': RTMP_PER_STREAM, 'flv': FLV_PER_STREAM,
                                          'hls': HLS_VIEWERS['cam1'],
                                          'total': RTMP_PER_STREAM + FLV_PER_STREAM + HLS_VIEWERS['cam1']})
        self.assertEqual(api(r, 'GET', '/api/v1/streams/live/nope')[0], 404)
        self.assertEqual(api(r, 'GET', '/api/v1/streams/live/..')[0], 400)  # a dot-segment

    def check_clients(self, r, rtmp, flv, hls):
        clients = get(r, '/api/v1/clients?limit=1000')
        self.example('clients.json', dict(clients, items=clients['items'][:3]))
        items = clients['items']
        count = lambda kind, proto: sum(1 for c in items if c['kind'] == kind and c['proto'] == proto)
        self.assertEqual((count('player', 'rtmp'), count('player', 'flv'), count('player', 'hls')), (rtmp, flv, hls))
        self.assertEqual(count('publisher', 'rtmp'), 2)
        ids = [c['id'] for c in items if c['id'] is not None]
        self.assertEqual(len(ids), len(set(ids)), 'client ids are not unique')
        # The players are on both workers (SO_REUSEPORT spreads them).
        self.assertEqual({c['worker'] for c in items if c['proto'] in ('rtmp', 'flv')}, {0, 1})
        pubs = get(r, '/api/v1/clients?kind=publisher&name=cam2')['items']
        self.assertEqual([(c['kind'], c['name']) for c in pubs], [('publisher', 'cam2')])
        return items

    def check_paging(self, r, n):
        first = get(r, '/api/v1/clients?limit=1')
        self.assertEqual((first['total'], first['limit'], first['offset'], len(first['items'])), (n, 1, 0, 1))
        last = get(r, '/api/v1/clients?limit=1000&offset=%d' % (n - 1))
        self.assertEqual(len(last['items']), 1)
        past = get(r, '/api/v1/clients?offset=%d' % (n + 5))
        self.assertEqual((past['total'], past['items']), (n, []))
        second = get(r, '/api/v1/streams?limit=1&offset=1')
        self.assertEqual([i['name'] for i in second['items']], ['cam2'])
        for bad in ('limit=0', 'limit=1001', 'limit=abc', 'offset=-1'):
            status, hdrs, body = api(r, 'GET', '/api/v1/streams?' + bad)
            self.assertEqual(status, 400, bad)
            self.assertTrue(hdrs['content-type'].startswith('application/json'))
            self.assertIn('error', body)
        self.assertEqual(api(r, 'GET', '/api/v1/clients?kind=robot')[0], 400)

    def check_token(self, r):
        for path in ('/api/v1/server', '/api/v1/streams', '/metrics'):
            for token in (None, 'wrong-token-1234', TOKEN + 'x'):
                status, hdrs, body = api(r, 'GET', path, token=token)
                self.assertEqual(status, 401, (path, token))
                self.assertIn('Bearer', hdrs.get('www-authenticate', ''))
        self.assertEqual(api(r, 'DELETE', '/api/v1/clients/1', token=None)[0], 401)
        # A client that leaves while its answer is gathered costs nothing (and frees its request).
        for _ in range(5):
            with socket.create_connection((HOST, r.api_port), timeout=5) as s:
                s.sendall(b'GET /api/v1/clients HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n'
                          % TOKEN.encode())
        self.assertEqual(get(r, '/api/v1/server')['totals']['streams'], 2)
        # Never on http.listen.
        conn = http.client.HTTPConnection(HOST, r.http_port, timeout=5)
        conn.request('GET', '/api/v1/server', headers={'Authorization': 'Bearer ' + TOKEN})
        self.assertEqual(conn.getresponse().status, 404)
        conn.close()

    def check_metrics(self, r, rtmp, flv, hls):
        status, hdrs, text = api(r, 'GET', '/metrics')
        self.assertEqual(status, 200)
        self.assertTrue(hdrs['content-type'].startswith('text/plain; version=0.0.4'))
        self.example('metrics.txt', text)
        m = parse_metrics(text)
        server = get(r, '/api/v1/server')
        self.assertEqual(total(m, 'rill_stream_players', proto='rtmp'), rtmp)
        self.assertEqual(total(m, 'rill_stream_players', proto='flv'), flv)
        self.assertEqual(total(m, 'rill_stream_players', proto='hls'), hls)
        self.assertEqual(total(m, 'rill_streams'), 2)
        self.assertEqual(total(m, 'rill_workers'), 2)
        self.assertEqual(len(m['rill_worker_cpu_seconds_total']), 2)
        self.assertEqual(len(m['rill_worker_loop_lag_seconds_count']), 2)
        self.assertGreaterEqual(total(m, 'rill_connections_accepted_total', proto='rtmp'), rtmp + 2)
        self.assertGreaterEqual(total(m, 'rill_connections_accepted_total', proto='flv'), flv)
        # Counters read before the server view can only be lower or equal.
        self.assertLessEqual(total(m, 'rill_bytes_out_total'), server['totals']['bytes_out'])
        streams = get(r, '/api/v1/streams')['items']
        for s in streams:
            self.assertLessEqual(total(m, 'rill_stream_bytes_in_total', stream=s['name']), s['bytes_in'])
            self.assertEqual(total(m, 'rill_stream_players', stream=s['name']), s['players']['total'])
        for family in ('rill_build_info', 'rill_uptime_seconds', 'rill_connections', 'rill_stream_bytes_out_total',
                       'rill_stream_bitrate_in_kbps', 'rill_stream_uptime_seconds', 'rill_dropped_frames_total',
                       'rill_hls_segments_total', 'rill_worker_resident_memory_bytes', 'rill_worker_open_fds',
                       'rill_worker_merge_hold_seconds', 'rill_worker_merge_video_frames'):
            self.assertIn(family, m)

    def check_kick(self, r, mux, clients):
        victim = next(c for c in clients if c['kind'] == 'player' and c['proto'] == 'rtmp')
        port = int(victim['addr'].rsplit(':', 1)[1])
        status, _, body = api(r, 'DELETE', '/api/v1/clients/%d' % victim['id'])
        self.assertEqual(status, 204, body)
        closed = lambda: [p for p in mux.snapshot() if p.closed]
        self.assertTrue(wait_until(lambda: closed(), 10, 0.2), 'the kicked player was not closed')
        time.sleep(1.0)
        self.assertEqual([(p.kind, p.local_port) for p in closed()], [('rtmp', port)])
        self.wait_totals(r, 2 * RTMP_PER_STREAM - 1, 2 * FLV_PER_STREAM, sum(HLS_VIEWERS.values()))
        self.assertEqual(api(r, 'DELETE', '/api/v1/clients/%d' % victim['id'])[0], 404)
        self.assertEqual(api(r, 'DELETE', '/api/v1/clients/12345')[0], 404)
        self.assertEqual(api(r, 'DELETE', '/api/v1/clients/abc')[0], 404)

    def check_kick_publisher_gets_status(self, r):
        conn = RtmpConnection(HOST, r.rtmp_port)
        self.addCleanup(conn.close)
        self.assertEqual(conn.connect('live')[0], '_result')
        sid = conn.create_stream()
        conn.publish('py', sid)
        self.assertEqual(conn.wait_status(timeout=10).get('code'), 'NetStream.Publish.Start')
        mine = lambda: get(r, '/api/v1/clients?kind=publisher&name=py')['items']
        self.assertTrue(wait_until(lambda: len(mine()) == 1, 5, 0.2))
        self.assertEqual(mine()[0]['addr'], '%s:%d' % (HOST, conn.local_port))
        self.assertEqual(api(r, 'DELETE', '/api/v1/clients/%d' % mine()[0]['id'])[0], 204)
        self.assertEqual(conn.wait_status(timeout=5).get('code'), 'NetStream.Unpublish.Success')
        self.assertTrue(conn.wait_closed(5), 'the kicked publisher was not closed')

    def check_delete_stream(self, r, pubs):
        status, _, body = api(r, 'DELETE', '/api/v1/streams/live/cam2')
        self.assertEqual(status, 204, body)
        gone = lambda: api(r, 'GET', '/api/v1/streams/live/cam2')[0] == 404
        self.assertTrue(wait_until(gone, 10, 0.2), 'stream still listed after DELETE')
        self.assertTrue(wait_until(lambda: pubs['cam2'].poll() is not None, 15, 0.2),
                        'ffmpeg kept publishing after its connection was cut')
        self.assertEqual(get(r, '/api/v1/streams/live/cam1')['name'], 'cam1')
        self.assertEqual(api(r, 'DELETE', '/api/v1/streams/live/cam2')[0], 404)

    def check_kill_keeps_counters(self, r):
        def counters():
            m = parse_metrics(api(r, 'GET', '/metrics')[2])
            out = {}
            for name, samples in m.items():
                if name.endswith('_total') and not name.startswith('rill_stream_') and name not in (
                        'rill_dropped_frames_total', 'rill_hls_segments_total'):
                    for labels, v in samples:
                        out[(name, tuple(sorted(labels.items())))] = v
            return out
        before = counters()
        self.assertGreater(len(before), 6)
        victim = r.worker_pids()[0]
        os.kill(victim, signal.SIGKILL)
        self.assertTrue(wait_until(lambda: victim not in r.worker_pids() and len(r.worker_pids()) == 2, 15, 0.2),
                        'worker not respawned')
        self.assertTrue(wait_until(lambda: len(get(r, '/api/v1/server')['workers']) == 2, 15, 0.3))
        after = counters()
        lower = {k: (before[k], after.get(k)) for k in before if after.get(k, -1) < before[k]}
        self.assertEqual(lower, {}, 'counters went down after kill -9 of a worker')


if __name__ == '__main__':
    unittest.main()
