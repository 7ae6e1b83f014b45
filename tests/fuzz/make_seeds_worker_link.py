#!/usr/bin/env python3
"""Writes the seed corpus for worker_link_frame_fuzz (the outputs are committed). Deterministic:
the same named files every run; inputs a fuzzing round added (named by their SHA-1) are kept.

  tests/fuzz/corpus/worker_link_frame/  2 control bytes (piece sizes; bit 0 of the second: 0 = frame
                                        stream, 1 = request lines) + frames or request lines
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'corpus', 'worker_link_frame')

AUDIO, VIDEO, DATA = 8, 9, 18
PUBLISH, UNPUBLISH, END, ERROR, HLS, STATS = 0x40, 0x41, 0x42, 0x43, 0x50, 0x51
KEY, SEQ, META = 1, 2, 4


def frame(t, flags=0, ts=0, body=b''):
    return struct.pack('>BBHII', t, flags, 0, ts, len(body)) + body


NO_CACHE, MAX_AGE, IMMUTABLE = 0, 1, 2


def hls_object(max_age, body, status=200, cache=None, retry=0):
    """An HlsObject answer: its body starts with the answer head (status u16, cache kind u8,
    Retry-After u8, max-age u32; big-endian). A max-age means immutable unless `cache` says."""
    if cache is None:
        cache = IMMUTABLE if max_age else NO_CACHE
    return frame(HLS, 0, 0, struct.pack('>HBBI', status, cache, retry, max_age) + body)


def amf_str(s):
    return b'\x02' + struct.pack('>H', len(s)) + s.encode()


META_BODY = amf_str('onMetaData') + b'\x08\x00\x00\x00\x01' + b'\x00\x05width' + b'\x00' + struct.pack('>d', 640) + b'\x00\x00\x09'
AVC_SEQ = bytes([0x17, 0, 0, 0, 0, 1, 0x64, 0, 0x1f, 0xff, 0xe1, 0, 4, 0x67, 0x64, 0, 0x1f, 1, 0, 4, 0x68, 0xee, 0x3c, 0x80])
AAC_SEQ = bytes([0xaf, 0, 0x12, 0x10])


def write(name, control, payload):
    with open(os.path.join(OUT, name), 'wb') as f:
        f.write(bytes(control) + payload)


def main():
    os.makedirs(OUT, exist_ok=True)
    replay = (frame(PUBLISH) + frame(DATA, META, 0, META_BODY) + frame(VIDEO, KEY | SEQ, 0, AVC_SEQ) +
              frame(AUDIO, SEQ, 0, AAC_SEQ) + frame(VIDEO, KEY, 40, bytes([0x17, 1, 0, 0, 0]) + b'\x00' * 300) +
              frame(AUDIO, 0, 46, bytes([0xaf, 1]) + b'\x21' * 20) + frame(VIDEO, 0, 80, bytes([0x27, 1, 0, 0, 0x28]) + b'\x01' * 50))
    write('replay_pieces', [3, 0], replay)
    write('replay_whole', [15, 0], replay + frame(UNPUBLISH))
    write('end_and_error', [2, 0], frame(END) + frame(ERROR, 0, 0, b'worker 1 does not publish live/x'))
    write('timestamp_wrap', [4, 0], frame(AUDIO, 0, 0xFFFFFFF0, b'\xaf\x01x') + frame(AUDIO, 0, 0x10, b'\xaf\x01y'))
    write('empty_bodies', [1, 0], frame(VIDEO) + frame(DATA) + hls_object(0, b''))
    write('hls_answer', [5, 0], hls_object(21, b'G' * 188) + frame(ERROR, 0, 0, b'no such segment'))
    write('hls_playlist', [3, 0], hls_object(0, b'#EXTM3U\n#EXT-X-VERSION:3\n#EXTINF:1.000,\n12.ts\n'))
    write('hls_live_playlist', [4, 0], hls_object(1, b'#EXTM3U\n#EXT-X-TARGETDURATION:2\n', cache=MAX_AGE))
    write('hls_refusals', [3, 0], hls_object(0, b'_HLS_msn 9 is more than two segments ahead of live/cam', 400) +
          hls_object(0, b'stream live/cam has no HLS playlist', 404) +
          hls_object(0, b'live/cam playlist: the requested position did not come in time', 503, retry=1))
    write('hls_bad_heads', [5, 0], hls_object(0, b'', 200, retry=1) + hls_object(5, b'x', 404, cache=MAX_AGE) +
          hls_object(5, b'', 200, cache=NO_CACHE) + hls_object(0, b'', 200, cache=7) + hls_object(0, b'', 99))
    write('hls_long_reason', [9, 0], hls_object(0, b'r' * 1025, 404))
    write('stats', [4, 0], frame(STATS, 0, 0, b'{"slot": 1, "pid": 42, "streams": []}'))
    write('hls_no_max_age', [5, 0], frame(HLS, 0, 0, b'\x00\xc8\x00\x00'))
    write('control_timestamp', [5, 0], frame(PUBLISH, 0, 7) + frame(HLS, 0, 9, b'\x00\xc8\x00\x00\x00\x00\x00\x01'))
    write('publish_with_body', [5, 0], frame(PUBLISH, 0, 0, b'x'))
    write('bad_type', [5, 0], frame(PUBLISH) + struct.pack('>BBHII', 7, 0, 0, 0, 0))
    write('bad_flags', [5, 0], struct.pack('>BBHII', VIDEO, 0x80, 0, 0, 1) + b'\x17')
    write('control_flags', [5, 0], struct.pack('>BBHII', UNPUBLISH, 1, 0, 0, 0))
    write('reserved_bytes', [5, 0], struct.pack('>BBHII', AUDIO, 0, 1, 0, 0))
    write('huge_length', [5, 0], struct.pack('>BBHII', VIDEO, KEY, 0, 0, 0xFFFFFFFF) + b'\x17\x01')
    write('truncated', [6, 0], frame(VIDEO, KEY, 0, b'\x17' * 100)[:60])
    write('requests', [0, 1], b'PLAY live/cam\nSTATS\nSTATS ALL\nHLS live/cam index.m3u8\nPLAY live/cam\r\n')
    write('hls_requests', [3, 1], b'HLS live/cam index.m3u8\nHLS live/cam 12.ts\nHLS live/cam 012.ts\n'
          b'HLS live/cam_hi variant\nHLS live/cam variants\n'
          b'18446744073709551615.ts\nHLS a/b 18446744073709551616.ts\nindex.m3u8')
    write('names_for_workers', [1, 1], b'PLAY live/../x\nPLAY /cam\nPLAY live/a/b\nHLS x/' + b'y' * 200 + b' 1.ts\n')
    write('control_requests', [2, 1], b'KICK 73014444033\nKICK 01\nKICK 18446744073709551616\nKICK -1\n'
          b'DROP live/cam\nDROP live\nDROP live/a b\nKICK\n')
    write('bad_requests', [0, 1], b'PLAY live\nPLAY live/../x\nGET / HTTP/1.1\nPLAY  live/a\nSTATS NOW\n\n' + b'A' * 600)


if __name__ == '__main__':
    main()
