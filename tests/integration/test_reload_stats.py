"""Statistics across a reload (docs/operations.md, "Reload"): while the old generation's workers
retire with their publisher and players, /api/v1/server, /api/v1/clients and /metrics count
every player of both generations (totals equal before and after SIGHUP), label each worker by
slot and pid with `retiring`, server-wide byte counters do not go backwards, and DELETE of a
client or a stream reaches a retiring worker.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... python3 -m unittest -v test_reload_stats
"""

import re
import time
import unittest

import rilltest
import test_api
import test_reload
from muxplayers import MuxPlayers
from rilltest import HOST, Rill, require_tool, wait_until
from test_worker_link import make_relay_media

WORKERS = 2
RTMP_PLAYERS, FLV_PLAYERS = 6, 4


def api(r, method, path):
    """(status, parsed JSON or text) of one request (the server has no API token)."""
    status, _headers, body = test_api.api(r, method, path, token=None)
    return status, body


def get(r, path):
    return test_api.get(r, path, token=None)


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')


def metrics(r):
    """{(name, frozenset(labels)): value} of /metrics."""
    out = {}
    for line in get(r, '/metrics').splitlines():
        m = _SAMPLE.match(line)
        if m:
            labels = frozenset(re.findall(r'([a-zA-Z_]+)="([^"]*)"', m.group(2) or ''))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def counted(r):
    """What the API and the metrics say about the players of live/cam, in one dict."""
    server = get(r, '/api/v1/server')
    clients = get(r, '/api/v1/clients?kind=player&limit=1000')['items']
    m = metrics(r)

    def stream_players(proto):
        return m.get(('rill_stream_players', frozenset({('app', 'live'), ('stream', 'cam'), ('proto', proto)})))
    return {
        'server': (server['totals']['players']['rtmp'], server['totals']['players']['flv'],
                   server['totals']['publishers']),
        'clients': (sum(c['proto'] == 'rtmp' for c in clients), sum(c['proto'] == 'flv' for c in clients)),
        'metrics': (stream_players('rtmp'), stream_players('flv')),
        'bytes': (server['totals']['bytes_in'], server['totals']['bytes_out'],
                  m.get(('rill_bytes_out_total', frozenset()))),
        'errors': server['errors'],
        '_server': server, '_clients': clients, '_metrics': m,
    }


class ReloadStatsTest(unittest.TestCase):
    def setUp(self):
        require_tool('ffmpeg')
        self.media = make_relay_media()
        self.rill = Rill({'workers': WORKERS, 'shutdown_timeout': '2s'})
        self.addCleanup(self._close_rill)
        self.gen0 = set(self.rill.wait_workers(WORKERS))
        self.players = MuxPlayers(HOST, self.rill.rtmp_port, self.rill.http_port, max_frames=10)

    _close_rill = test_reload.ReloadTest._close_rill  # stops the players, keeps the log of a failure

    def add_players(self, rtmp, flv):
        before = len(self.players.players)
        self.players.add_rtmp('live', 'cam', rtmp)
        self.players.add_flv('live', 'cam', flv)
        ok = wait_until(lambda: all(s.last_media is not None for s in self.players.snapshot()[before:]), 15, 0.1)
        self.assertTrue(ok, 'players got no media\n' + self.rill.diagnostics())

    def wait_counts(self, rtmp, flv):
        """Waits (bounded) until every view counts rtmp + flv players; returns the last reading."""
        want = {'server': (rtmp, flv, 1), 'clients': (rtmp, flv), 'metrics': (rtmp, flv)}
        last = {}

        def ok():
            last.update(counted(self.rill))
            return all(last[k] == v for k, v in want.items()) and not last['errors']
        wait_until(ok, 10, 0.3)
        for k, v in want.items():
            self.assertEqual(last[k], v, '%s counts (errors %s)\n%s' % (k, last['errors'], self.rill.log_tail(30)))
        return last

    def test_both_generations_are_counted_and_reachable(self):
        pub = rilltest.ffmpeg_publish(self.rill.rtmp_url('cam'), self.media)
        self.addCleanup(rilltest.stop_process, pub)
        self.assertTrue(self.rill.wait_for_log(r'rtmp: \S+ publishing live/cam', 15), self.rill.diagnostics())
        self.players.start()
        self.add_players(RTMP_PLAYERS, FLV_PLAYERS)
        before = self.wait_counts(RTMP_PLAYERS, FLV_PLAYERS)
        self.assertEqual({w['pid'] for w in before['_server']['workers']}, self.gen0)
        self.assertFalse(any(w['retiring'] for w in before['_server']['workers']))

        self.assertTrue(self.rill.reload(), self.rill.diagnostics())
        started = lambda: [int(p) for p in re.findall(r'started worker \d+ \(pid (\d+), generation 1\)',
                                                      self.rill.log_text())]
        self.assertTrue(wait_until(lambda: len(started()) == WORKERS, 10, 0.1), self.rill.diagnostics())
        gen1 = set(started())
        time.sleep(1)
        retiring = set(self.rill.worker_pids()) & self.gen0
        self.assertTrue(retiring, 'no generation-0 worker kept the publisher: %s' % self.rill.workers())

        # Every player is still counted, now across both generations, each worker by slot and pid.
        after = self.wait_counts(RTMP_PLAYERS, FLV_PLAYERS)
        workers = after['_server']['workers']
        self.assertEqual({w['pid'] for w in workers}, retiring | gen1, workers)
        self.assertEqual({w['pid'] for w in workers if w['retiring']}, retiring, workers)
        self.assertEqual(len({(w['id'], w['pid']) for w in workers}), len(workers))
        slot_of = {w['pid']: w['id'] for w in workers}
        for pid in retiring | gen1:
            labels = frozenset({('worker', str(slot_of[pid])), ('pid', str(pid))})
            self.assertEqual(after['_metrics'].get(('rill_worker_retiring', labels)), float(pid in retiring))
        on_retiring = [c for c in after['_clients'] if c['worker_pid'] in retiring]
        self.assertTrue(on_retiring, 'no player listed on a retiring worker: %s' % after['_clients'])
        self.assertTrue(all(c['worker_retiring'] for c in on_retiring))
        # Server-wide counters never go backwards across a reload.
        for b, a in zip(before['bytes'], after['bytes']):
            self.assertGreaterEqual(a, b, 'bytes went backwards: %s -> %s' % (before['bytes'], after['bytes']))

        # A player that arrives after the reload (on the new generation) is counted too.
        self.add_players(1, 1)
        self.wait_counts(RTMP_PLAYERS + 1, FLV_PLAYERS + 1)

        # DELETE reaches a retiring worker: one of its players, then the publisher it holds.
        victim = on_retiring[0]
        port = int(victim['addr'].rsplit(':', 1)[1])
        status, body = api(self.rill, 'DELETE', '/api/v1/clients/%d' % victim['id'])
        self.assertEqual(status, 204, body)
        self.assertTrue(wait_until(lambda: any(s.closed for s in self.players.snapshot() if s.local_port == port), 10),
                        'the retiring worker\'s player was not closed')
        rtmp_left = RTMP_PLAYERS + 1 - (victim['proto'] == 'rtmp')
        self.wait_counts(rtmp_left, FLV_PLAYERS + 1 - (victim['proto'] == 'flv'))
        status, body = api(self.rill, 'DELETE', '/api/v1/streams/live/cam')
        self.assertEqual(status, 204, body)
        self.assertTrue(self.rill.wait_for_log(r'dropping the publisher of live/cam', 10), self.rill.log_tail(30))


if __name__ == '__main__':
    unittest.main()
