"""Low-Latency HLS (docs/hls.md "Low-Latency HLS", RFC 8216bis) with 2 workers: parts in the
playlist, blocking playlist reload (_HLS_msn/_HLS_part), the preload-hinted part held until it is
complete, 400 for a position too far ahead, and 200 parked requests costing no CPU while they
wait; requests reaching the worker that does not own the stream wait on the owner through the
worker link, one link request per distinct position (coalesced), not one per client.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... RILL_SOURCE_DIR=... \
          python3 -m unittest -v test_hls_ll
"""

import http.client
import os
import re
import socket
import sys
import threading
import time
import unittest

import rilltest
from hlsutil import close_rill, hls_config, make_gop1_media, request
from rilltest import Rill, require_tool, wait_until
from test_worker_link import stats

PLAYLIST = '/live/test.m3u8'
PART_S = 0.2
WORKERS = 2


def parts_of(text):
    """[(uri, duration, independent)] of the EXT-X-PART lines."""
    return [(m.group(2), float(m.group(1)), bool(m.group(3)))
            for m in re.finditer(r'#EXT-X-PART:DURATION=([\d.]+),URI="([^"]+)"(,INDEPENDENT=YES)?', text)]


def position(text):
    """(msn, part) of the last part listed: the open segment's sequence and its last part index."""
    msn = int(re.search(r'#EXT-X-MEDIA-SEQUENCE:(\d+)', text).group(1))
    lines = text.splitlines()
    complete = sum(1 for l in lines if l and not l.startswith('#'))
    tail = []
    for l in reversed(lines):
        if l and not l.startswith('#'):
            break
        if l.startswith('#EXT-X-PART:'):
            tail.append(l)
    open_msn = msn + complete
    if tail:
        return open_msn, len(tail) - 1
    return open_msn - 1, None


class LowLatencyHlsTest(unittest.TestCase):

    def setUp(self):
        require_tool('ffmpeg')
        cfg = hls_config(low_latency=True, part='200ms')
        cfg['workers'] = WORKERS
        self.rill = Rill(cfg)
        self.addCleanup(lambda: close_rill(self, self.rill))
        self.pub = rilltest.ffmpeg_publish(self.rill.rtmp_url('test'), make_gop1_media())
        self.addCleanup(rilltest.stop_process, self.pub)
        self.text = None

        def ready():
            st, _, body = request(self.rill.http_port, 'GET', PLAYLIST)
            if st == 200 and body.count(b'#EXTINF') >= 3:
                self.text = body.decode()
                return True
            return False
        self.assertTrue(wait_until(ready, 30, 0.2), 'no LL playlist\n%s' % self.rill.log_tail())


    def get(self, path, timeout=10):
        return request(self.rill.http_port, 'GET', path, timeout=timeout)

    def test_playlist_tags_parts_and_blocking_reload(self):
        text = self.get(PLAYLIST)[2].decode()
        self.assertIn('#EXT-X-VERSION:9', text)
        self.assertRegex(text, r'#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=[\d.]+,PART-HOLD-BACK=0\.600')
        self.assertIn('#EXT-X-PART-INF:PART-TARGET=0.200', text)
        self.assertRegex(text, r'#EXT-X-PRELOAD-HINT:TYPE=PART,URI="test/part-\d+\.m4s"')
        parts = parts_of(text)
        self.assertGreater(len(parts), 5, text)
        self.assertTrue(any(ind for _, _, ind in parts), 'no INDEPENDENT=YES part\n' + text)
        for uri, dur, _ in parts:
            self.assertLessEqual(dur, PART_S + 0.03, text)
        # A part is served as video/mp4 and begins with moof.
        st, h, body = self.get('/live/' + parts[-1][0])
        self.assertEqual(st, 200)
        self.assertEqual(h['content-type'], 'video/mp4')
        self.assertEqual(body[4:8], b'moof')

        # Blocking reload for the part after the last one listed: held until it exists.
        msn, part = position(text)
        want = (msn, (part or 0) + 1) if part is not None else (msn + 1, 0)
        # Meanwhile a poller reads the plain playlist every 10 ms and notes when the part shows up.
        seen = []

        def poll():
            for _ in range(300):
                pos = position(self.get(PLAYLIST)[2].decode())
                if (pos[0], pos[1] if pos[1] is not None else 99) >= want:
                    seen.append(time.monotonic())
                    return
                time.sleep(0.01)
        poller = threading.Thread(target=poll)
        t0 = time.monotonic()
        poller.start()
        st, h, body = self.get('%s?_HLS_msn=%d&_HLS_part=%d' % ((PLAYLIST,) + want))
        answered = time.monotonic()
        waited = answered - t0
        poller.join(10)
        self.assertEqual(st, 200, body)
        self.assertTrue(h['cache-control'].startswith('max-age='), h)
        got = body.decode()
        new_msn, new_part = position(got)
        self.assertTrue((new_msn, new_part if new_part is not None else 99) >= want, (want, position(got), got))
        self.assertTrue(seen, 'the poller never saw the part')
        sys.stderr.write('\nblocking reload for the next part answered after %.0f ms (part target %.0f ms), '
                         '%+.0f ms from when a 10 ms poller first saw the part\n'
                         % (waited * 1000, PART_S * 1000, (answered - seen[0]) * 1000))
        # Within part target + 100 ms of the part existing (the poller sees it late by up to its
        # period and one request): asserted with a generous margin on this loaded machine.
        self.assertLess(answered - seen[0], PART_S + 0.1 + 0.4)
        # Generous on this loaded machine: a part is 200 ms long.
        self.assertLess(waited, PART_S + 1.5)

        # Too far ahead: 400 at once.
        st, _, _ = self.get('%s?_HLS_msn=%d' % (PLAYLIST, new_msn + 10))
        self.assertEqual(st, 400)
        st, _, _ = self.get('%s?_HLS_part=1' % PLAYLIST)
        self.assertEqual(st, 400)

    def test_preload_hinted_part_is_held_until_complete(self):
        st, _, body = self.get(PLAYLIST)
        hint = re.search(r'#EXT-X-PRELOAD-HINT:TYPE=PART,URI="([^"]+)"', body.decode()).group(1)
        t0 = time.monotonic()
        st, h, data = self.get('/live/' + hint)
        waited = time.monotonic() - t0
        self.assertEqual(st, 200, data)
        self.assertEqual(data[4:8], b'moof')
        sys.stderr.write('\npreload-hinted part answered after %.0f ms\n' % (waited * 1000))
        self.assertLess(waited, PART_S + 1.5)
        # The part after next is not hinted: 404 at once.
        idx = int(re.search(r'part-(\d+)', hint).group(1))
        st, _, _ = self.get('/live/test/part-%d.m4s' % (idx + 5))
        self.assertEqual(st, 404)

    def test_segments_are_their_parts_and_decode(self):
        require_tool('ffmpeg')
        text = self.text
        init = re.search(r'#EXT-X-MAP:URI="([^"]+)"', text).group(1)
        # The last complete segment whose parts are all listed.
        blocks = re.findall(r'((?:#EXT-X-PART:[^\n]*\n)+)#EXTINF:[^\n]*\n([^\n]+)\n', text)
        self.assertTrue(blocks, text)
        part_lines, seg_uri = blocks[-1]
        joined = b''.join(self.get('/live/' + uri)[2] for uri, _, _ in parts_of(part_lines))
        self.assertEqual(self.get('/live/' + seg_uri)[2], joined)
        path = os.path.join(self.rill.tmpdir, 'll.mp4')
        with open(path, 'wb') as f:
            f.write(self.get('/live/' + init)[2] + joined)
        dec = rilltest.run(['ffmpeg', '-hide_banner', '-nostdin', '-v', 'warning', '-i', path, '-f', 'null', '-'],
                           timeout=60)
        self.assertEqual(dec.returncode, 0, dec.stderr)
        self.assertEqual(dec.stderr.strip(), '', dec.stderr)

    def test_parked_requests_cost_no_cpu(self):
        # 200 clients blocked on a segment two ahead (held about 1-2 s) cost the worker about
        # nothing while they wait: compare its CPU time over the wait with an idle window.
        workers = rilltest.proc_children(self.rill.pid)
        self.assertEqual(len(workers), WORKERS)

        def cpu():  # utime + stime of every worker
            total = 0
            for w in workers:
                with open('/proc/%d/stat' % w) as f:
                    rest = f.read().rsplit(')', 1)[1].split()
                total += int(rest[11]) + int(rest[12])
            return total / os.sysconf('SC_CLK_TCK')

        def link_playlist_requests():
            return sum(w['hls_fetch']['playlist_requests'] for w in stats(self.rill)['workers'])

        c0 = cpu()
        time.sleep(1.5)
        idle = cpu() - c0
        _, _, body = self.get(PLAYLIST)
        msn, _ = position(body.decode())
        links_before = link_playlist_requests()
        socks = []
        for _ in range(200):
            s = socket.create_connection((rilltest.HOST, self.rill.http_port), timeout=10)
            s.sendall(('GET %s?_HLS_msn=%d HTTP/1.1\r\nHost: x\r\n\r\n' % (PLAYLIST, msn + 2)).encode())
            socks.append(s)
        time.sleep(0.3)  # all parsed and parked
        c1 = cpu()
        time.sleep(0.5)
        parked = cpu() - c1
        answered = 0
        for s in socks:
            s.settimeout(10)
            if s.recv(64).startswith(b'HTTP/1.1 200'):
                answered += 1
            s.close()
        links = link_playlist_requests() - links_before
        sys.stderr.write('\nworkers CPU: %.3f s per 1.5 s without parked requests, %.3f s per 0.5 s with 200 parked; '
                         '%d worker-link playlist requests for them\n' % (idle, parked, links))
        self.assertEqual(answered, 200)
        # Those that reached the non-owner share one link request (a second one when the first
        # was answered before the last client arrived).
        self.assertLessEqual(links, 3)
        self.assertLess(parked, idle / 3 + 0.15)


if __name__ == '__main__':
    unittest.main()
