"""Streams across worker processes: ownership and the Unix-socket relay (docs/workers.md).

A publisher lands on one worker (the owner); players land on any worker (SO_REUSEPORT) and must
all get the same stream. Which worker served a connection is read from the log ("[worker N]
rtmp: 127.0.0.1:PORT playing ..."); the relay state from "STATS ALL" on a worker's relay socket.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_worker_link
"""

import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time
import unittest

import rilltest
import rtmpclient as rc
from muxplayers import MuxPlayers
from rilltest import Rill, require_tool, wait_until

HOST = '127.0.0.1'
GRACE_S = 3
KEY = 'live/%s'


def make_relay_media(seconds=30):
    """A light stream for hundreds of players: 320x180 25 fps H.264 (keyframe every second,
    150 kbps) + AAC 32 kbps; 30 s, so that a frame's content does not repeat within a test
    window. Built once and cached next to the harness's test media."""
    require_tool('ffmpeg')
    path = os.path.join(rilltest._media_dir(), 'relay-320x180-25fps-gop1s-%ds.flv' % seconds)
    if os.path.exists(path):
        return path
    tmp = '%s.tmp.%d.flv' % (path, os.getpid())
    cmd = ['ffmpeg', '-hide_banner', '-nostdin', '-loglevel', 'error', '-y',
           '-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=25',
           '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100', '-t', str(seconds),
           '-c:v', 'libx264', '-preset', 'ultrafast', '-tune', 'zerolatency', '-g', '25',
           '-pix_fmt', 'yuv420p', '-b:v', '150k', '-c:a', 'aac', '-b:a', '32k', '-f', 'flv', tmp]
    try:
        rilltest.run(cmd, timeout=120, check=True)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


LINK_STATS, LINK_ERROR, LINK_HLS = 0x51, 0x43, 0x50


def link_query(rill, slot, line, timeout=3.0):
    """Sends one request line to a worker's relay socket; returns its one answer frame as
    (type, body) (docs/workers.md, "Framing")."""
    path = os.path.join(rill.runtime_dir, 'worker-%d.sock' % slot)
    # A worker counts as started once it has its title; its link socket follows a moment later.
    wait_until(lambda: os.path.exists(path), timeout)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(line.encode() + b'\n')
        with s.makefile('rb') as f:
            data = f.read()  # the answer, then EOF
    if len(data) < 12:
        raise ValueError('short answer %r' % data)
    ftype, _flags, _reserved, _ts, length = struct.unpack('>BBHII', data[:12])
    if len(data) != 12 + length:
        raise ValueError('answer of %d bytes, header says %d' % (len(data), 12 + length))
    return ftype, data[12:]


def stats(rill, timeout=3.0):
    """Every worker's relay statistics, asked of the first worker that answers."""
    last = None
    for slot in range(rill.expected_workers()):
        try:
            ftype, body = link_query(rill, slot, 'STATS ALL', timeout)
            if ftype != LINK_STATS:
                raise ValueError('answer of type 0x%x: %r' % (ftype, body))
            return json.loads(body)
        except (OSError, ValueError) as e:
            last = e
    raise AssertionError('no worker answered STATS ALL: %r' % (last,))


def worker(st, slot):
    return next(w for w in st['workers'] if w['slot'] == slot)


def owner_slot(st, key):
    for w in st['workers']:
        for s in w['streams']:
            if s['key'] == key and s['owner'] and s['publisher']:
                return w['slot']
    return None


def links(st, key=None):
    """{slot: [link, ...]} of the relay links of every worker (for key, if given)."""
    return {w['slot']: [l for l in w['links'] if key is None or l['key'] == key] for w in st['workers']}


def workers_of_ports(rill, ports, proto='rtmp|http-flv'):
    """{local port: worker slot} from the 'playing' / 'publish ... refused' log lines of `proto`.
    An RTMP and an HTTP-FLV client may get the same local port (their 4-tuples differ): ask for
    one protocol at a time when both are in play."""
    found = {}
    rx = re.compile(r'\[worker (\d+)\] (?:%s): 127\.0\.0\.1:(\d+) (?:playing|publish)' % proto)
    for m in rx.finditer(rill.log_text()):
        port = int(m.group(2))
        if port in ports:
            found[port] = int(m.group(1))
    return found


def common_keyframe(snap):
    """The earliest keyframe (SHA-1) every player received, or None."""
    common = None
    for p in snap:
        keys = {d for d, key in p.frames if key}
        common = keys if common is None else common & keys
        if not common:
            return None
    order = [d for d, key in snap[0].frames if key and d in common]
    return order[0] if order else None


class RelayTestCase(unittest.TestCase):

    def setUp(self):
        require_tool('ffmpeg')
        self.media = make_relay_media()

    def start_rill(self, workers, **app):
        # Queues long enough that a busy test client never makes the server drop frames.
        app['queue'] = {'soft_bytes': '64MiB', 'hard_bytes': '128MiB', 'soft_duration': '30s', 'hard_duration': '60s'}
        r = Rill({'workers': workers, 'relay': {'idle_grace': '%ds' % GRACE_S}, 'apps': {'live': app}})
        self.addCleanup(self._close_rill, r)
        r.wait_workers(workers)
        return r

    def _close_rill(self, r):
        failed = not getattr(self._outcome, 'success', True)
        try:
            if r.running():
                r.stop()
        finally:
            if failed:
                sys.stderr.write('\n--- rill log (%s) ---\n%s\n' % (r.log_path, r.log_tail(80)))
            r.close(failed=failed)

    def publish(self, r, name):
        p = rilltest.ffmpeg_publish(r.rtmp_url(name), self.media)
        self.addCleanup(rilltest.stop_process, p)
        return p

    def wait_owner(self, r, name, timeout=15.0):
        slot = wait_until(lambda: owner_slot(stats(r), KEY % name), timeout, 0.2)
        self.assertIsNotNone(slot, 'nobody owns %s\n%s' % (KEY % name, r.log_tail()))
        return slot

    def players(self, r, name, count, wait_video=True):
        ps = [rc.Player(HOST, r.rtmp_port, 'live', name) for _ in range(count)]
        for p in ps:
            self.addCleanup(p.stop)
            p.start()
        if not wait_video:
            self.assertTrue(wait_until(lambda: all('NetStream.Play.Start' in p.statuses for p in ps), 10))
            return ps
        ok = wait_until(lambda: all(p.video_frame_count() >= 5 for p in ps), 15)
        self.assertTrue(ok, 'players got no video: %s' % [p.statuses for p in ps])
        return ps

    def map_players(self, r, ps):
        ports = {p.conn.local_port: p for p in ps}
        found = wait_until(lambda: (lambda m: m if len(m) == len(ports) else None)(workers_of_ports(r, ports)), 5)
        self.assertTrue(found, 'not every player found in the log')
        return {p: found[port] for port, p in ports.items()}


class LinkRequestTest(unittest.TestCase):
    """The worker link's requests: names follow the one name rule (media::StreamKey, as RTMP and
    HTTP), a refusal is one Error frame naming the reason, STATS is one Stats frame."""

    def test_requests_and_refusals(self):
        with Rill({'workers': 1}) as r:
            for line, words in [('PLAY live/../x', "bad PLAY request: invalid stream name: '.' and '..'"),
                                ('PLAY live/' + 'x' * 129, 'invalid stream name: longer than 128 bytes'),
                                ('PLAY li%ve/cam', 'invalid app name: character 0x25 not allowed'),
                                ('HLS live/a/b index.m3u8', 'bad HLS request: invalid stream name'),
                                ('PLAY live/cam', 'worker 0 does not publish live/cam'),
                                ('PLAY live', 'expected APP/NAME'),
                                ('NOPE', 'unknown request')]:
                ftype, body = link_query(r, 0, line)
                self.assertEqual(ftype, LINK_ERROR, (line, body))
                self.assertIn(words, body.decode(), line)
            # An HLS request the store cannot answer gets the HLS responder's answer, typed: an
            # HlsObject whose head says 404 (status u16, cache kind u8, Retry-After u8, max-age
            # u32), the reason as its body.
            ftype, body = link_query(r, 0, 'HLS live/cam 3.ts')
            self.assertEqual(ftype, LINK_HLS, body)
            self.assertEqual(struct.unpack('>HBBI', body[:8]), (404, 0, 0, 0))
            self.assertEqual(body[8:], b'stream live/cam has no HLS playlist')
            ftype, body = link_query(r, 0, 'STATS')
            self.assertEqual(ftype, LINK_STATS)
            st = json.loads(body)
            self.assertEqual(st['slot'], 0)
            self.assertEqual(st['link_connections'], 1)  # this query
            self.assertEqual(st['connections']['worker-link'], 1)


class FanOutTest(RelayTestCase):

    def test_250_players_on_4_workers_get_the_same_frames(self):
        r = self.start_rill(4)
        pub = self.publish(r, 'fan')
        owner = self.wait_owner(r, 'fan')
        # No player yet: no relay link anywhere (links open on demand only).
        self.assertEqual(links(stats(r)), {s: [] for s in range(4)})

        mux = MuxPlayers(HOST, r.rtmp_port, r.http_port, max_frames=800)
        self.addCleanup(mux.stop)
        mux.add_rtmp('live', 'fan', 200)
        mux.add_flv('live', 'fan', 50)
        mux.start()

        def ready():
            snap = mux.snapshot()
            closed = [p for p in snap if p.closed]
            if closed:
                raise AssertionError('%d players closed, e.g. %r' % (len(closed), closed[0].error))
            k = common_keyframe(snap)
            if k is None:
                return None
            starts = [[d for d, _ in p.frames].index(k) for p in snap]
            return (snap, k, starts) if all(len(p.frames) - i >= 100 for p, i in zip(snap, starts)) else None

        got = wait_until(ready, 45, 0.5)
        self.assertTrue(got, 'players did not get 100 frames after a common keyframe: %s' % [
            (p.kind, len(p.frames), p.statuses[:3]) for p in mux.snapshot()[:5]])
        snap, k, starts = got
        ref = [d for d, _ in snap[0].frames[starts[0]:starts[0] + 100]]
        bad = [(p.kind, p.local_port) for p, i in zip(snap, starts) if [d for d, _ in p.frames[i:i + 100]] != ref]
        self.assertEqual(bad, [], '%d of %d players got other frames' % (len(bad), len(snap)))

        # Where the players are, and the links that serve them: one per stream per worker.
        where = {}
        for kind, proto in (('rtmp', 'rtmp'), ('flv', 'http-flv')):
            found = workers_of_ports(r, {p.local_port for p in snap if p.kind == kind}, proto)
            where.update({(kind, port): slot for port, slot in found.items()})
        self.assertEqual(len(where), len(snap))
        per_worker = {s: sum(1 for w in where.values() if w == s) for s in range(4)}
        self.assertGreaterEqual(sum(1 for n in per_worker.values() if n), 2, per_worker)
        st = stats(r)
        relayed_to = sorted(s for s, n in per_worker.items() if n and s != owner)
        for s in range(4):
            ls = links(st, KEY % 'fan')[s]
            if s in relayed_to:
                self.assertEqual(len(ls), 1, (s, ls))
                self.assertEqual(ls[0]['state'], 'live')
                self.assertEqual(ls[0]['owner_slot'], owner)
            else:
                self.assertEqual(ls, [], (s, ls))
            streams = [x for x in worker(st, s)['streams'] if x['key'] == KEY % 'fan']
            players = streams[0]['players'] if streams else 0
            self.assertEqual(players, per_worker[s], (s, streams))
        senders = [x for x in worker(st, owner)['link_senders'] if x['key'] == KEY % 'fan']
        self.assertEqual(len(senders), len(relayed_to))

        # A second publisher of the name is refused on a worker that is not the owner.
        refused_elsewhere = False
        for _ in range(24):
            c, _, info = rc.connect_and_publish(HOST, r.rtmp_port, 'live', 'fan')
            port = c.local_port
            c.close()
            self.assertEqual(info.get('code'), 'NetStream.Publish.BadName', info)
            w = wait_until(lambda: workers_of_ports(r, {port}).get(port), 3)
            if w is not None and w != owner:
                refused_elsewhere = True
                break
        self.assertTrue(refused_elsewhere, 'every second publisher landed on the owner')
        # ... while the first one goes on: every player keeps receiving.
        mark = time.monotonic()
        self.assertTrue(wait_until(lambda: all(p.last_media and p.last_media > mark + 1.0 for p in mux.snapshot()), 10),
                        'players stopped receiving after the refused publisher')
        self.assertIsNone(pub.poll(), 'the first publisher was disconnected')

        # The last player leaves: the links stay for the grace time, then close.
        mux.stop()
        closed_at = time.monotonic()
        time.sleep(1.0)
        if time.monotonic() - closed_at < GRACE_S - 0.5:
            still = links(stats(r), KEY % 'fan')
            self.assertEqual(sorted(s for s, ls in still.items() if ls), relayed_to)
        gone = wait_until(lambda: not any(links(stats(r)).values()), GRACE_S + 5, 0.2)
        self.assertTrue(gone, 'relay links still open: %s' % links(stats(r)))
        self.assertGreaterEqual(time.monotonic() - closed_at, GRACE_S - 0.5)
        self.assertTrue(wait_until(lambda: not worker(stats(r), owner)['link_senders'], 3))


class KillTest(RelayTestCase):

    def test_owner_and_non_owner_killed(self):
        r = self.start_rill(2)
        self.publish(r, 'k')
        owner = self.wait_owner(r, 'k')
        st = stats(r)
        owner_pid = worker(st, owner)['pid']
        ps = self.players(r, 'k', 20)
        where = self.map_players(r, ps)
        elsewhere = [p for p in ps if where[p] != owner]
        on_owner = [p for p in ps if where[p] == owner]
        self.assertTrue(elsewhere, 'no player landed on the non-owner worker')

        # kill -9 the owner: players elsewhere hear UnpublishNotify and stay; its own ones drop.
        os.kill(owner_pid, signal.SIGKILL)
        for p in elsewhere:
            self.assertTrue(p.wait_status('NetStream.Play.UnpublishNotify', 5), p.statuses)
            self.assertFalse(p.closed)
        for p in on_owner:
            self.assertTrue(wait_until(lambda: p.closed, 5), 'player on the killed worker not closed')
        r.wait_workers(2, exclude=[owner_pid])  # respawned in its slot
        self.assertTrue(r.wait_for_log(r'released 1 stream\(s\) owned by worker %d \(pid %d\)' % (owner, owner_pid), 5))

        # A republish (on whichever worker) resumes them without reconnecting.
        marks = {p: (len(p.statuses), p.video_frame_count()) for p in elsewhere}
        self.publish(r, 'k')
        for p in elsewhere:
            self.assertTrue(p.wait_status('NetStream.Play.PublishNotify', 15, after_index=marks[p][0]), p.statuses)
        self.assertTrue(wait_until(lambda: all(p.video_frame_count() >= marks[p][1] + 25 for p in elsewhere), 15),
                        'players did not resume')
        self.assertFalse(any(p.closed for p in elsewhere))

        # kill -9 a worker that does not own the stream: only its players drop.
        owner = self.wait_owner(r, 'k')
        more = self.players(r, 'k', 16)
        live = elsewhere + more
        where = self.map_players(r, live)
        victims = [p for p in live if where[p] != owner]
        keep = [p for p in live if where[p] == owner]
        self.assertTrue(victims and keep, 'players not on both workers: %s' % list(where.values()))
        other = 1 - owner
        other_pid = worker(stats(r), other)['pid']
        marks = {p: (len(p.statuses), p.video_frame_count()) for p in keep}
        os.kill(other_pid, signal.SIGKILL)
        for p in victims:
            self.assertTrue(wait_until(lambda: p.closed, 5), 'player on the killed worker not closed')
        time.sleep(2.0)
        for p in keep:
            self.assertFalse(p.closed)
            self.assertEqual(p.statuses[marks[p][0]:], [], 'a player of the owner heard something')
            self.assertGreaterEqual(p.video_frame_count(), marks[p][1] + 25, 'a player of the owner stalled')
        r.wait_workers(2, exclude=[other_pid])


class PlayWaitTest(RelayTestCase):

    def test_waiting_players_get_a_stream_published_on_another_worker(self):
        r = self.start_rill(2, play_wait='20s')
        ps = self.players(r, 'w', 12, wait_video=False)  # nobody publishes yet: they wait
        where = self.map_players(r, ps)
        self.assertEqual(len(set(where.values())), 2, 'players not on both workers')
        self.publish(r, 'w')
        owner = self.wait_owner(r, 'w')
        for p in ps:
            self.assertTrue(p.wait_status('NetStream.Play.PublishNotify', 10), (where[p], owner, p.statuses))
        self.assertTrue(wait_until(lambda: all(p.video_frame_count() >= 25 for p in ps), 15),
                        [(where[p], p.video_frame_count()) for p in ps])
        self.assertTrue(all(p.first_video_is_keyframe() for p in ps))
        st = stats(r)
        self.assertEqual(len(links(st, KEY % 'w')[1 - owner]), 1)
        self.assertEqual(links(st, KEY % 'w')[owner], [])  # the owner's waiting link gave way


if __name__ == '__main__':
    unittest.main()
