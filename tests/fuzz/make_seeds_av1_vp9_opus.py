#!/usr/bin/env python3
"""Writes the seed corpus of av1_vp9_opus_fuzz (run once; the output is committed).

Input: selector(1: 0 av1C, 1 vpcC, 2 OpusHead, 3 VP9 frame, 4 AV1 temporal unit, 5 OBUs with a
sequence header, 6 Opus packet), then the bytes.
The records are those ffmpeg 5.1 writes for 160x90 libaom-av1 / libvpx-vp9 and stereo libopus.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
AV1C = bytes.fromhex("81000c000a0a00000003b4fd936be401")
VPCC = bytes.fromhex("01000000000a820202020000")
OPUS_HEAD = bytes.fromhex("4f707573486561640102380180bb0000000000")

SEEDS = {
    "av1c_ffmpeg": b"\x00" + AV1C,
    "av1c_no_obus": b"\x00" + AV1C[:4],
    "av1c_timing_info": b"\x00" + bytes.fromhex("81084c00 0a0e 00000034c0000003e8000186a0f8"),
    "vpcc_box": b"\x01" + VPCC,
    "vpcc_plain": b"\x01" + VPCC[4:],
    "opus_head": b"\x02" + OPUS_HEAD,
    "opus_head_51": b"\x02" + OPUS_HEAD[:9] + b"\x06" + OPUS_HEAD[10:18] + b"\x01\x04\x02\x00\x04\x01\x02\x03\x05",
    "vp9_key": b"\x03" + bytes.fromhex("824983424009f00590"),
    "vp9_inter": b"\x03" + bytes.fromhex("8600"),
    "av1_tu": b"\x04" + bytes.fromhex("1200 1200 3203aabbcc"),
    "av1_sequence_header": b"\x05" + AV1C[4:],
    "av1_tu_with_sequence_header": b"\x05" + bytes.fromhex("1200") + AV1C[4:] + bytes.fromhex("3203aabbcc"),
    "opus_packet_20ms": b"\x06" + bytes.fromhex("fc" + "ff" * 8),
    "opus_packet_code3": b"\x06" + bytes.fromhex("0b03" + "00" * 8),
}

out = os.path.join(HERE, "corpus", "av1_vp9_opus")
os.makedirs(out, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
