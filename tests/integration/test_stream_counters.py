"""Per-stream `_total` counters never go backwards while the stream lives (docs/api.md, "GET
/metrics"; docs/workers.md, "Per-stream totals").

2 workers, one ffmpeg publisher of live/alpha (its worker owns the stream) and RTMP players that
SO_REUSEPORT spreads over both workers (those on the other worker are fed over the worker link;
more are opened until some land there). Every `_total` sample of live/alpha in /metrics and the
stream's totals in /api/v1/streams must stay >= their value before each of:
  1. kill -9 of the worker that serves the non-owner players (respawned; the stream lives on);
  2. the non-owner's players leaving and its worker link closing after worker_link.idle_grace
     (the worker forgets the stream);
  3. a reload: the old generation retires (the owner keeps its publisher), and the old
     non-owner exits once its players left.
The owner is never killed here: its publisher would die with it and the stream end (a stream
published again starts its series from zero, as documented).

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_stream_counters
"""

import os
import signal
import sys
import time
import unittest

import rilltest
import rtmpclient as rc
import test_api
from rilltest import HOST, Rill, require_tool, wait_until
from test_worker_link import make_relay_media, stats

TOKEN = test_api.TOKEN
STREAM = 'alpha'
KEY = 'live/' + STREAM
API_TOTALS = ('bytes_in', 'bytes_out', 'dropped_frames')


def get(r, path):
    return test_api.get(r, path, token=TOKEN)


def stream_item(r):
    items = [s for s in get(r, '/api/v1/streams')['items'] if s['name'] == STREAM]
    return items[0] if items else None


def snapshot(r):
    """{series: value} of every `_total` sample of live/alpha in /metrics, and its API totals."""
    out = {}
    m = test_api.parse_metrics(test_api.api(r, 'GET', '/metrics', token=TOKEN)[2])
    for name, samples in m.items():
        for labels, v in samples:
            if name.endswith('_total') and labels.get('app') == 'live' and labels.get('stream') == STREAM:
                out[name] = v
    item = stream_item(r)
    if item:
        for field in API_TOTALS:
            out['api ' + field] = item[field]
        out['api hls.segments_total'] = item['hls']['segments_total']
    return out


class StreamCountersTest(unittest.TestCase):

    def setUp(self):
        require_tool('ffmpeg')
        self.media = make_relay_media()

    def tearDown(self):
        failed = not getattr(self._outcome, 'success', True)
        if failed and getattr(self, 'rill', None):
            sys.stderr.write('\n--- rill log ---\n%s\n' % self.rill.log_tail(80))

    def players(self, r, non_owner_pid, want=2, batch=8, tries=4):
        """Opens RTMP players in batches until `want` of them are on the worker `non_owner_pid`
        (the kernel spreads them); returns (all players, those on that worker)."""
        ps, there = [], []
        for _ in range(tries):
            batch_ps = [rc.Player(HOST, r.rtmp_port, 'live', STREAM) for _ in range(batch)]
            for p in batch_ps:
                self.addCleanup(p.stop)
                p.start()
            ps += batch_ps
            ok = wait_until(lambda: all(p.video_frame_count() >= 5 for p in ps), 15, 0.2)
            self.assertTrue(ok, 'players got no video: %s' % [p.statuses for p in ps])
            by_port = {p.conn.local_port: p for p in ps}
            clients = get(r, '/api/v1/clients?kind=player&limit=1000')['items']
            there = [by_port[int(c['addr'].rsplit(':', 1)[1])] for c in clients
                     if c['worker_pid'] == non_owner_pid and int(c['addr'].rsplit(':', 1)[1]) in by_port]
            if len(there) >= want:
                return ps, there
        self.fail('fewer than %d of %d players on worker pid %d' % (want, len(ps), non_owner_pid))

    def assert_not_lower(self, before, after, what):
        self.assertGreaterEqual(len(before), 7, before)  # 4 metric families + 4 API fields
        lower = {k: (v, after.get(k)) for k, v in before.items() if after.get(k, -1) < v}
        self.assertEqual(lower, {}, 'per-stream totals went down after %s (before, after)' % what)

    def owner_and_other(self, r):
        item = wait_until(lambda: stream_item(r), 15, 0.2)
        self.assertTrue(item, 'live/alpha not listed')
        workers = wait_until(lambda: (lambda w: w if len(w) == 2 else None)(
            [w for w in get(r, '/api/v1/server')['workers'] if not w['retiring']]), 15, 0.2)
        self.assertTrue(workers, 'not 2 current workers')
        other = next(w['pid'] for w in workers if w['pid'] != item['worker_pid'])
        return item['worker_pid'], other

    def test_totals_hold_across_kill_idle_link_and_reload(self):
        config = {'workers': 2, 'api': {'token': TOKEN}, 'worker_link': {'idle_grace': '1s'},
                  'apps': {'live': {'hls': {'enabled': True, 'fragment': '1s', 'window': 4}}}}
        r = self.rill = Rill(config)
        self.addCleanup(r.close)
        r.wait_workers(2)
        pub = rilltest.ffmpeg_publish(r.rtmp_url(STREAM), self.media)
        self.addCleanup(rilltest.stop_process, pub)
        owner, other = self.owner_and_other(r)

        # 1. kill -9 of the worker that feeds its players over the worker link.
        ps, _ = self.players(r, other)
        time.sleep(2.0)  # their bytes become a good share of the stream's total
        before = snapshot(r)
        os.kill(other, signal.SIGKILL)
        r.wait_workers(2, exclude=[other], timeout=15)
        self.assertTrue(wait_until(lambda: len(get(r, '/api/v1/server')['workers']) == 2, 15, 0.2))
        self.assert_not_lower(before, snapshot(r), 'kill -9 of the non-owner worker')

        # 2. The non-owner's players leave (their bytes are gone players' now); its link closes after
        # idle_grace and it forgets the stream. Nobody else plays meanwhile, so that no growth
        # elsewhere hides what would be lost.
        _, other = self.owner_and_other(r)
        for p in ps:
            p.stop()
        ps, there = self.players(r, other)
        for p in ps:
            if p not in there:
                p.stop()
        time.sleep(1.5)
        before = snapshot(r)
        for p in there:
            p.stop()

        def forgotten():
            w = [w for w in stats(r)['workers'] if w['pid'] == other]
            return w and not any(s['key'] == KEY for s in w[0]['streams'])
        self.assertTrue(wait_until(forgotten, 15, 0.2), 'the non-owner kept live/alpha')
        time.sleep(1.5)  # a monitor tick after the stream went away
        self.assert_not_lower(before, snapshot(r), 'the non-owner forgot the stream')

        # 3. Reload: the old generation retires; the old non-owner exits once its players left.
        _, there = self.players(r, other)
        time.sleep(1.0)
        self.assertTrue(r.reload())
        self.assertTrue(wait_until(lambda: len(get(r, '/api/v1/server')['workers']) == 4, 15, 0.2),
                        'not 2 retiring + 2 new workers')
        before = snapshot(r)
        for p in there:
            p.stop()
        self.assertTrue(wait_until(lambda: other not in r.worker_pids(), 15, 0.2), 'the old non-owner stayed')
        self.assertTrue(stream_item(r), 'the stream ended')
        self.assert_not_lower(before, snapshot(r), 'the retiring non-owner exited')


if __name__ == '__main__':
    unittest.main()
