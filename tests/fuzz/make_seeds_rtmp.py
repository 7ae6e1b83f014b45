#!/usr/bin/env python3
"""Writes the seed corpora for handshake_fuzz and chunk_reader_fuzz (run once; the outputs are
committed). Deterministic: the same files every run.

  tests/fuzz/corpus/handshake/     C0C1 (+ C2 + chunk stream) as a client sends them
  tests/fuzz/corpus/chunk_reader/  2 control bytes (piece sizes, re-serialize chunk size) + chunks
"""
import hashlib
import hmac
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
TRAILER = bytes([0xF0, 0xEE, 0xC2, 0x4A, 0x80, 0x68, 0xBE, 0xE8, 0x2E, 0x00, 0xD0, 0xD1,
                 0x02, 0x9E, 0x7E, 0x57, 0x6E, 0xEC, 0x5D, 0x2D, 0x29, 0x80, 0x6F, 0xAB,
                 0x93, 0xB8, 0xE6, 0x36, 0xCF, 0xEB, 0x31, 0xAE])
FP_KEY_PARTIAL = b"Genuine Adobe Flash Player 001"
rng = random.Random(20240601)


def rand(n):
    return bytes(rng.getrandbits(8) for _ in range(n))


def c1_block(scheme, version=b"\x0a\x00\x2d\x02"):
    b = bytearray(b"\0\0\0\0" + version + rand(1528))
    if scheme is not None:
        base = 8 if scheme == 0 else 772
        off = sum(b[base:base + 4]) % 728 + base + 4
        d = hmac.new(FP_KEY_PARTIAL, bytes(b[:off] + b[off + 32:]), hashlib.sha256).digest()
        b[off:off + 32] = d
    return bytes(b)


def basic(fmt, csid):
    if csid < 64:
        return bytes([fmt << 6 | csid])
    if csid < 320:
        return bytes([fmt << 6, csid - 64])
    return bytes([fmt << 6 | 1, (csid - 64) & 0xFF, (csid - 64) >> 8])


def ts24(ts):
    return min(ts, 0xFFFFFF).to_bytes(3, "big")


def ext(ts):
    return struct.pack(">I", ts) if ts >= 0xFFFFFF else b""


def message(csid, ts, type_id, sid, payload, chunk=128, repeat_ext=True):
    """A whole message: fmt 0 first chunk, fmt 3 continuations (like ChunkWriter)."""
    out = basic(0, csid) + ts24(ts) + len(payload).to_bytes(3, "big") + bytes([type_id])
    out += struct.pack("<I", sid) + ext(ts) + payload[:chunk]
    for off in range(chunk, len(payload), chunk):
        out += basic(3, csid) + (ext(ts) if repeat_ext else b"") + payload[off:off + chunk]
    return out


def set_chunk_size(n):
    return message(2, 0, 1, 0, struct.pack(">I", n))


def amf_string(s):
    return b"\x02" + struct.pack(">H", len(s)) + s.encode()


CONNECT = (amf_string("connect") + b"\x00" + struct.pack(">d", 1.0) + b"\x03" +
           struct.pack(">H", 3) + b"app" + amf_string("live") + b"\x00\x00\x09")


def write(dirname, name, data):
    d = os.path.join(HERE, "corpus", dirname)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def handshake_seeds():
    after = set_chunk_size(4096) + message(3, 0, 20, 0, CONNECT, 4096)
    write("handshake", "complex_scheme0_connect", b"\x03" + c1_block(0) + rand(1536) + after)
    write("handshake", "complex_scheme1", b"\x03" + c1_block(1) + rand(1536) + after)
    write("handshake", "simple_zero_version",
          b"\x03" + c1_block(None, b"\0\0\0\0") + rand(1536) + after)
    write("handshake", "version_without_digest", b"\x03" + c1_block(None) + rand(1536))
    write("handshake", "c0c1_only", b"\x03" + c1_block(0))
    write("handshake", "http_request", b"GET /live/s.flv HTTP/1.1\r\nHost: x\r\n\r\n")
    write("handshake", "rtmpe_version", b"\x06" + rand(64))
    video = message(6, 0x1000000, 9, 1, rand(300), 200)
    write("handshake", "complex_ext_timestamp",
          b"\x03" + c1_block(0) + rand(1536) + set_chunk_size(200) + video)


def chunk_seeds():
    def w(name, ctl0, ctl1, data):
        write("chunk_reader", name, bytes([ctl0, ctl1]) + data)

    w("set_chunk_size_video", 4, 31, set_chunk_size(1000) + message(6, 40, 9, 1, rand(2500), 1000))
    # Two chunk streams interleaved.
    a, b = rand(300), rand(200)
    inter = (basic(0, 4) + ts24(10) + (300).to_bytes(3, "big") + b"\x09" + struct.pack("<I", 1) +
             a[:128] + basic(0, 6) + ts24(20) + (200).to_bytes(3, "big") + b"\x08" +
             struct.pack("<I", 1) + b[:128] + basic(3, 4) + a[128:256] + basic(3, 6) + b[128:] +
             basic(3, 4) + a[256:])
    w("interleaved", 3, 0, inter)
    # fmt 1/2/3 deltas, with a 32-bit wrap.
    deltas = (basic(0, 5) + ts24(0xFFFFFF) + (3).to_bytes(3, "big") + b"\x08" +
              struct.pack("<I", 7) + struct.pack(">I", 0xFFFFFFF0) + rand(3) +
              basic(1, 5) + ts24(0x20) + (2).to_bytes(3, "big") + b"\x09" + rand(2) +
              basic(2, 5) + ts24(30) + rand(2) + basic(3, 5) + rand(2))
    w("fmt123_deltas_wrap", 0, 1, deltas)
    # Extended timestamps: repeated on continuations (librtmp) and not repeated (spec-literal).
    again = rand(400)  # a new message with a Type 3 header, also carrying the field
    w("ext_ts_repeated", 6, 2, message(4, 0x1000000, 9, 1, rand(400)) + b"".join(
        basic(3, 4) + struct.pack(">I", 0x1000000) + again[o:o + 128] for o in range(0, 400, 128)))
    w("ext_ts_not_repeated", 2, 3, message(4, 0x2000000, 9, 1, rand(130), repeat_ext=False) +
      message(3, 7, 8, 1, rand(5)))
    # Abort of a partial message.
    w("abort", 5, 4, message(4, 1, 9, 1, rand(300))[:140] + message(2, 0, 2, 0, struct.pack(">I", 4)) +
      message(4, 2, 8, 1, rand(10)))
    # Aggregate of three FLV-style sub-messages.
    agg = b""
    for t, body, ts in ((8, rand(7), 0x01005000), (9, rand(40), 0x01005000), (8, rand(3), 0x01005017)):
        agg += (bytes([t]) + len(body).to_bytes(3, "big") + (ts & 0xFFFFFF).to_bytes(3, "big") +
                bytes([ts >> 24]) + b"\0\0\1" + body + struct.pack(">I", len(body) + 11))
    w("aggregate", 7, 5, message(5, 100, 22, 1, agg))
    # Control messages and user control events.
    ctl = (message(2, 0, 5, 0, struct.pack(">I", 2500000)) +
           message(2, 0, 6, 0, struct.pack(">IB", 2500000, 2)) +
           message(2, 0, 3, 0, struct.pack(">I", 12345)) +
           message(2, 0, 4, 0, struct.pack(">HI", 0, 1)) +
           message(2, 0, 4, 0, struct.pack(">HII", 3, 1, 3000)) +
           message(2, 0, 4, 0, struct.pack(">HI", 6, 99)) +
           message(2, 0, 4, 0, struct.pack(">H", 32)))
    w("control_messages", 1, 6, ctl)
    # Long basic headers and a zero-length message.
    w("csid_forms_zero_length", 9, 7, message(64, 1, 8, 1, rand(20)) + message(319, 2, 8, 1, rand(20)) +
      message(320, 3, 9, 1, rand(200)) + message(65599, 4, 18, 1, b"") + basic(3, 65599))
    w("command_amf0", 10, 0, message(3, 0, 20, 0, CONNECT))


if __name__ == "__main__":
    handshake_seeds()
    chunk_seeds()
