"""Memory returns (docs/operations.md, "Memory"): sessions that make a worker allocate a lot —
one 16 MB video frame, a 16 MB message cut off halfway, a player of the big frame — leave no
lasting growth once they are gone. The worker's RSS after a burst and a short idle is within
10 MB of what it was before, and three bursts in a row do not grow it.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... python3 -m unittest -v test_memory
"""

import os
import struct
import time
import unittest

import rilltest
import rtmpclient as rc
from rilltest import Rill

BIG = 16 * 1000 * 1000
IDLE_S = float(os.environ.get('RILL_MEMORY_IDLE_S', '5'))  # the 30 s, shortened for CI
SLACK_KB = 10 * 1024


def rss_kb(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


def publisher(port, name):
    c = rc.RtmpConnection('127.0.0.1', port, timeout=20)
    c.connect('live')
    sid = c.create_stream()
    c.publish(name, sid)
    c.wait_status(['NetStream.Publish.Start'])
    c.set_chunk_size(65536)
    return c, sid


def big_keyframe():
    # AVC keyframe, NALU packet (FLV VIDEODATA, E.4.3.1), then a NAL unit of BIG bytes.
    body = bytearray(BIG)
    body[0:5] = b'\x17\x01\x00\x00\x00'
    struct.pack_into('>I', body, 5, BIG - 9)
    body[9] = 0x65
    return bytes(body)


def sanitized(binary):
    """True for an ASan build: its allocator (quarantine, shadow memory) replaces glibc's, whose
    behaviour this test is about."""
    with open(binary, 'rb') as f:
        if b'__asan_init' in f.read():
            return True
    return 'libasan' in rilltest.run(['ldd', binary]).stdout


class MemoryTest(unittest.TestCase):

    def setUp(self):
        if sanitized(rilltest.rill_binary()):
            self.skipTest('AddressSanitizer build: memory is held by its allocator by design')

    def burst(self, rill, round_no):
        frame = big_keyframe()
        # 1. A publisher sends one 16 MB frame (a player of the stream gets it), then leaves.
        pub, sid = publisher(rill.rtmp_port, 'big%d' % round_no)
        player = rc.RtmpConnection('127.0.0.1', rill.rtmp_port, timeout=20)
        player.connect('live')
        psid = player.create_stream()
        player.play('big%d' % round_no, psid)
        player.wait_status(['NetStream.Play.Start'])
        pub.send_video(frame, 0, stream_id=sid)
        got = player.read_until(lambda m: m.type == rc.MSG_VIDEO and len(m.payload) == BIG, timeout=30)
        self.assertIsNotNone(got)
        player.close()
        pub.close()
        # 2. A 16 MB message cut off halfway.
        pub, sid = publisher(rill.rtmp_port, 'cut%d' % round_no)
        data = rc.chunk_message(frame, rc.MSG_VIDEO, rc.CSID_VIDEO, sid, 0, 65536)
        pub.send_raw(data[:len(data) // 2])
        pub.close()
        # 3. Two publishers whose 16 MB frames go to nobody.
        for i in range(2):
            pub, sid = publisher(rill.rtmp_port, 'alone%d_%d' % (round_no, i))
            pub.send_video(frame, 0, stream_id=sid)
            pub.close()

    def settle(self, rill, workers):
        # Every session of the burst is gone (the server saw the closes) before measuring.
        time.sleep(IDLE_S)
        return sum(rss_kb(p) for p in workers)

    def test_rss_returns_after_big_frames(self):
        with Rill({'workers': 2, 'log': {'level': 'info'}}) as rill:
            workers = rill.wait_workers(2)
            time.sleep(1)
            before = sum(rss_kb(p) for p in workers)
            after = []
            for r in range(3):
                self.burst(rill, r)
                after.append(self.settle(rill, workers))
            print('\nmemory: worker RSS %d kB before, %s kB after each burst' % (before, after))
            self.assertEqual(sorted(rill.worker_pids()), sorted(workers), 'a worker died')
            for a in after:
                self.assertLessEqual(a, before + SLACK_KB, 'RSS kept after a burst: %d -> %s kB' % (before, after))
            self.assertLessEqual(after[-1], after[0] + 4096, 'RSS grows burst after burst: %s' % after)


if __name__ == '__main__':
    unittest.main()
