"""rtmp.max_connections_per_ip and http.max_connections_per_ip (docs/security.md): 1,000
connections from one address (127.0.0.2) past the limit are closed at once, while a publisher
and a player on another address (127.0.0.1) keep streaming; a slot freed is used again.

Run:  cd tests/integration && RILL_BIN=.../rill RILL_BUILD_DIR=... python3 -m unittest -v test_auth_limits
"""

import os
import select
import socket
import time
import unittest
import urllib.request

import rilltest
from hlsutil import make_gop1_media
from rilltest import Rill

LIMIT = 3
FLOOD = 1000
FLOODER = '127.0.0.2'


def connect_from(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((addr, 0))
    s.settimeout(5)
    s.connect((rilltest.HOST, port))
    s.setblocking(False)
    return s


def closed_by_server(socks, timeout, expect_open):
    """The sockets of `socks` the server closed (EOF or reset) within `timeout` s, watching one
    second more once only `expect_open` remain."""
    closed, pending = set(), set(socks)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        if len(pending) <= expect_open:
            deadline = min(deadline, time.monotonic() + 1.0)
        ready, _, _ = select.select(list(pending)[:1000], [], [], 0.2)
        for s in ready:
            try:
                data = s.recv(4096)
            except ConnectionResetError:
                data = b''
            except BlockingIOError:
                continue
            if not data:
                closed.add(s)
                pending.discard(s)
    return closed


def rtmp_handshake_answered(port, addr):
    """C0+C1 from `addr`: True when the server answers S0 (version 3), False when it closes."""
    s = socket.socket()
    s.bind((addr, 0))
    s.settimeout(10)
    try:
        s.connect((rilltest.HOST, port))
        s.sendall(b'\x03' + bytes(1536))
        first = s.recv(1)
        return first == b'\x03'
    except (ConnectionResetError, socket.timeout):
        return False
    finally:
        s.close()


class PerAddressLimitTest(unittest.TestCase):
    def test_flood_from_one_address_harms_nobody_else(self):
        cfg = {'rtmp': {'max_connections_per_ip': LIMIT, 'handshake_timeout': '60s'},
               'http': {'max_connections_per_ip': LIMIT}}
        with Rill(cfg) as rill:
            offset = rill.log_offset()
            pub = rilltest.ffmpeg_publish(rill.rtmp_url('cam'), make_gop1_media())
            self.addCleanup(rilltest.stop_process, pub)
            self.assertTrue(rill.wait_for_log(r'publish start: live/cam', 15, since=offset), rill.log_tail())
            player = urllib.request.urlopen(rill.http_url('/live/cam.flv'), timeout=10)
            self.addCleanup(player.close)
            self.assertEqual(player.read(3), b'FLV')

            for port, kind in ((rill.rtmp_port, 'rtmp'), (rill.http_port, 'http')):
                socks = [connect_from(FLOODER, port) for _ in range(FLOOD)]
                try:
                    closed = closed_by_server(socks, 20, LIMIT)
                    # Every connection past the limit is closed; those within it stay.
                    self.assertEqual(len(closed), FLOOD - LIMIT, kind)
                    self.assertIn('%s: %s' % (kind, FLOODER), rill.log_since(offset))
                    self.assertIn('max_connections_per_ip %d reached' % LIMIT, rill.log_since(offset))
                    # Meanwhile the player on 127.0.0.1 keeps receiving the stream.
                    self.assertGreater(len(player.read(100000)), 50000, kind)
                finally:
                    for s in socks:
                        s.close()
            # Freed slots are used again (the server notices the closes within a moment).
            self.assertTrue(rilltest.wait_until(lambda: rtmp_handshake_answered(rill.rtmp_port, FLOODER), 10))
            self.assertIsNone(pub.poll(), 'the publisher was disconnected')


if __name__ == '__main__':
    unittest.main()
