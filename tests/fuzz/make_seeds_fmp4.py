#!/usr/bin/env python3
"""Writes the seed corpus of fmp4_muxer_fuzz (run once; the output is committed).

Input: flags(1: bit0 video, bit1 audio) avc_len(1) avc_record asc_len(1) asc, then records
op(1: bit0 audio, bit1 keyframe, bit2 flush after) dts_delta(2, signed BE) cts(2, signed BE) length(2, BE) data.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SPS = bytes.fromhex("6742c01fd9005005bb011000000300100000030140f1832480")
PPS = bytes.fromhex("68cb83cb20")
AVC = (bytes([1, SPS[1], SPS[2], SPS[3], 0xFF, 0xE1]) + struct.pack(">H", len(SPS)) + SPS + bytes([1])
       + struct.pack(">H", len(PPS)) + PPS)
ASC = bytes([0x12, 0x10])


def rec(op, delta, cts, data):
    return struct.pack(">BhhH", op, delta, cts, len(data)) + data


def head(flags, avc=AVC, asc=ASC):
    return bytes([flags, len(avc)]) + avc + bytes([len(asc)]) + asc


IDR = b"\x00\x00\x00\x02\x65\x88"
P = b"\x00\x00\x00\x02\x41\x9a"
AAC = b"\x21\x10\x05"

SEEDS = {
    "av_two_fragments": head(3) + rec(2, 0, 80, IDR) + rec(1, 0, 0, AAC) + rec(0, 40, 40, P)
    + rec(5, 0, 0, AAC) + rec(2, 40, 0, IDR) + rec(1, 23, 0, AAC),
    "audio_only": head(2, b"") + b"".join(rec(1 | (4 if i % 3 == 2 else 0), 23, 0, AAC) for i in range(8)),
    "video_only": head(1, AVC, b"") + rec(2, 0, 0, IDR) + rec(4, 40, -40, P) + rec(0, -10, 0, P),
    "bad_record": head(1, AVC[:9], b"") + rec(2, 0, 0, IDR),
}

out = os.path.join(HERE, "corpus", "fmp4_muxer")
os.makedirs(out, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
