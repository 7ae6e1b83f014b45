#!/usr/bin/env python3
"""Writes the seed corpus of ivf_ogg_fuzz (run once; the output is committed).

Input: selector(1: 0 IVF file, 1 Ogg file), then the file. The files are small hand-made ones in
the layouts ffmpeg 5.1 writes (-f ivf for libaom-av1, -f ogg for libopus): an IVF header with two
frames, an Ogg stream with OpusHead, OpusTags and a packet continued across two pages.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def ivf(frames, fourcc=b"AV01", rate=10, scale=1):
    out = b"DKIF" + struct.pack("<HH4sHHIII", 0, 32, fourcc, 160, 90, rate, scale, len(frames)) + b"\0" * 4
    for pts, data in frames:
        out += struct.pack("<IQ", len(data), pts) + data
    return out


def ogg_page(serial, seq, segments, flags=0):
    lacing = bytes(len(s) for s in segments)
    return (b"OggS" + struct.pack("<BBqIII", 0, flags, 0, serial, seq, 0) + bytes([len(segments)]) + lacing +
            b"".join(segments))


OPUS_HEAD = bytes.fromhex("4f707573486561640102380180bb0000000000")
OPUS_TAGS = b"OpusTags" + struct.pack("<I", 4) + b"test" + struct.pack("<I", 0)
SEQ_HEADER_TU = bytes.fromhex("1200 0a0a00000003b4fd936be401 3203aabbcc")

SEEDS = {
    "ivf_two_frames": b"\x00" + ivf([(0, SEQ_HEADER_TU), (1, bytes.fromhex("1200 3203ddeeff"))]),
    "ivf_header_only": b"\x00" + ivf([]),
    "ivf_truncated_frame": b"\x00" + ivf([(0, SEQ_HEADER_TU)])[:-3],
    "ogg_opus": b"\x01" + ogg_page(7, 0, [OPUS_HEAD], 2) + ogg_page(7, 1, [OPUS_TAGS]) +
                ogg_page(7, 2, [b"\xfc" + b"\x11" * 254, b"\xfc\x01"]),
    "ogg_continued": b"\x01" + ogg_page(7, 0, [b"\xfc" + b"\x22" * 254]) + ogg_page(7, 1, [b"\x33" * 10], 1),
    "ogg_two_streams": b"\x01" + ogg_page(7, 0, [OPUS_HEAD]) + ogg_page(9, 0, [b"other"]) + ogg_page(7, 1, [b"\xfc"]),
}

out = os.path.join(HERE, "corpus", "ivf_ogg")
os.makedirs(out, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
