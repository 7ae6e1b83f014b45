#!/usr/bin/env python3
"""Writes the seed corpus for rtmp_client_session_fuzz (run once; the outputs are committed).
Deterministic: the same files every run.

  tests/fuzz/corpus/rtmp_client_session/  1 flags byte + what a server sends after S2

Flags (see rtmp_client_session_fuzz.cpp): bit 0 publish, bit 1 header-only media, bit 2 complex
handshake, bits 4-7 log2 of the largest feed piece. The client's transaction ids are fixed:
connect 1; playing: createStream 2; publishing: releaseStream 2, FCPublish 3, createStream 4.
"""
import random
import struct

from make_seeds_rtmp import message, set_chunk_size, write

rng = random.Random(20240602)
PLAY, PUBLISH, PREFIX, COMPLEX = 0, 1, 2, 4


def rand(n):
    return bytes(rng.getrandbits(8) for _ in range(n))


def flags(bits, piece_log2):
    return bytes([bits | piece_log2 << 4])


# ---- AMF0 (AMF0 spec 2.2 - 2.11)

def number(v):
    return b"\x00" + struct.pack(">d", v)


def string(s):
    return b"\x02" + struct.pack(">H", len(s)) + s.encode()


def obj(**props):
    out = b"\x03"
    for k, v in props.items():
        out += struct.pack(">H", len(k)) + k.encode() + v
    return out + b"\x00\x00\x09"


NULL = b"\x05"


def command(name, tx, *values, csid=3, sid=0, chunk=128):
    return message(csid, 0, 20, sid, string(name) + number(tx) + b"".join(values), chunk)


def status(level, code, sid=1, chunk=4096):
    info = obj(level=string(level), code=string(code), description=string("d"))
    return command("onStatus", 0, NULL, info, csid=5, sid=sid, chunk=chunk)


def control(type_id, payload, chunk=128):
    return message(2, 0, type_id, 0, payload, chunk)


def accept_connect(window=2500000):
    """Window Acknowledgement Size, Set Peer Bandwidth, Set Chunk Size 4096, connect _result."""
    return (control(5, struct.pack(">I", window)) + control(6, struct.pack(">IB", window, 2)) +
            set_chunk_size(4096) +
            command("_result", 1, obj(fmsVer=string("FMS/3,5,7,7009")),
                    obj(level=string("status"), code=string("NetConnection.Connect.Success")), chunk=4096))


def created(tx, sid=1):
    return command("_result", tx, NULL, number(sid), chunk=4096)


def media(type_id, ts, payload, csid=6, chunk=4096):
    return message(csid, ts, type_id, 1, payload, chunk)


def video_frame(key, size):
    return bytes([0x17 if key else 0x27, 1, 0, 0, 0]) + rand(size)


def aggregate():
    out = b""
    for t, body, ts in ((9, video_frame(True, 30), 1000), (8, b"\xaf\x01" + rand(6), 1010)):
        out += (bytes([t]) + len(body).to_bytes(3, "big") + (ts & 0xFFFFFF).to_bytes(3, "big") +
                bytes([ts >> 24]) + b"\0\0\0" + body + struct.pack(">I", len(body) + 11))
    return out


def seeds():
    playing = accept_connect() + created(2) + control(4, struct.pack(">HI", 0, 1), 4096)
    playing += status("status", "NetStream.Play.Reset") + status("status", "NetStream.Play.Start")
    write("rtmp_client_session", "play_media", flags(PLAY, 6) + playing +
          media(18, 0, string("onMetaData") + obj(width=number(640)), csid=5) +
          media(9, 0, video_frame(True, 3000)) + media(8, 20, b"\xaf\x01" + rand(300), csid=4) +
          media(9, 40, video_frame(False, 500)))
    write("rtmp_client_session", "play_prefix_ext_ts", flags(PLAY | PREFIX | COMPLEX, 10) + playing +
          media(9, 0x1000000, video_frame(True, 9000)) +
          media(22, 0x1000010, aggregate(), csid=7))
    write("rtmp_client_session", "play_ping_ack_window", flags(PLAY, 3) + accept_connect(5000) + created(2) +
          status("status", "NetStream.Play.Start") + control(4, struct.pack(">HI", 6, 777), 4096) +
          b"".join(media(9, 40 * i, video_frame(i == 0, 2000)) for i in range(5)) +
          control(4, struct.pack(">HI", 1, 1), 4096) + status("status", "NetStream.Play.Stop"))
    write("rtmp_client_session", "play_not_found", flags(PLAY, 8) + accept_connect() + created(2) +
          status("error", "NetStream.Play.StreamNotFound"))
    write("rtmp_client_session", "connect_rejected", flags(PLAY, 8) +
          command("_error", 1, NULL, obj(level=string("error"), code=string("NetConnection.Connect.Rejected"))))
    publishing = (accept_connect() + command("onFCPublish", 0, NULL, obj(code=string("NetStream.Publish.Start")),
                                             chunk=4096) +
                  command("_result", 2, NULL, b"\x06", chunk=4096) +
                  command("_error", 3, NULL, obj(code=string("NetConnection.Call.Failed")), chunk=4096) +
                  created(4, 1) + control(4, struct.pack(">HI", 0, 1), 4096) +
                  status("status", "NetStream.Publish.Start"))
    write("rtmp_client_session", "publish_start", flags(PUBLISH, 5) + publishing +
          control(3, struct.pack(">I", 100000), 4096))
    write("rtmp_client_session", "publish_bad_name", flags(PUBLISH, 8) + accept_connect() + created(4) +
          status("error", "NetStream.Publish.BadName"))
    write("rtmp_client_session", "chunk_size_changes", flags(PLAY, 4) + accept_connect() + created(2) +
          status("status", "NetStream.Play.Start") +
          control(1, struct.pack(">I", 64), 4096) + media(9, 0, video_frame(True, 1000), chunk=64) +
          control(1, struct.pack(">I", 6000), 64) + media(9, 40, video_frame(False, 9000), chunk=6000))
    write("rtmp_client_session", "garbage_after_connect", flags(PLAY, 2) + accept_connect() + rand(64))


if __name__ == "__main__":
    seeds()
