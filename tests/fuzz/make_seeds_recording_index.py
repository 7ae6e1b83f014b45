#!/usr/bin/env python3
"""Writes the seed corpus of recording_index_fuzz (run once; the output is committed).

Input: piece(1: the feed size is 1 + piece % 64; bit 6: index every sample and cut a progressive
MP4 of the file), then the bytes of a recording file: small fMP4 files shaped like the recorder's
(ftyp, moov with one or two traks and mvex/trex, moof + mdat per fragment; with samples: stsd and
trun data offsets into the mdat) and FLV files (header, onMetaData, sequence headers, frames),
whole and cut short.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def box(t, body=b""):
    return struct.pack(">I", 8 + len(body)) + t + body


def full(t, version, flags, body=b""):
    return box(t, struct.pack(">I", version << 24 | flags) + body)


def trak(track_id, timescale, handler, stsd=False):
    tkhd = full(b"tkhd", 0, 7, struct.pack(">III", 0, 0, track_id) + bytes(68))
    mdhd = full(b"mdhd", 0, 0, struct.pack(">IIII", 0, 0, timescale, 0) + bytes(4))
    hdlr = full(b"hdlr", 0, 0, struct.pack(">I", 0) + handler + bytes(12) + b"\0")
    minf = box(b"minf", box(b"stbl", full(b"stsd", 0, 0, struct.pack(">I", 1) + box(b"avc1", bytes(8))))) \
        if stsd else b""
    return box(b"trak", tkhd + box(b"mdia", mdhd + hdlr + minf))


def trex(track_id, duration=0, flags=0):
    return full(b"trex", 0, 0, struct.pack(">IIIII", track_id, 1, duration, 0, flags))


def init(av=True, stsd=False):
    ftyp = box(b"ftyp", b"iso6" + struct.pack(">I", 0) + b"iso6mp41")
    traks = trak(1, 90000, b"vide", stsd) + (trak(2, 44100, b"soun", stsd) if av else b"")
    mvex = box(b"mvex", trex(1, 3600, 0x10000) + (trex(2, 1024) if av else b""))
    return ftyp + box(b"moov", full(b"mvhd", 0, 0, bytes(96)) + traks + mvex)


def traf(track_id, tfdt, samples, key, data_offset=0):
    tfhd = full(b"tfhd", 0, 0x020000, struct.pack(">I", track_id))
    tfdt_box = full(b"tfdt", 1, 0, struct.pack(">Q", tfdt))
    entries = b"".join(struct.pack(">IIIi", 3600, 6, 0 if (i == 0 and key) else 0x10000, 0) for i in range(samples))
    trun = full(b"trun", 1, 0xF01, struct.pack(">Ii", samples, data_offset) + entries)
    return box(b"traf", tfhd + tfdt_box + trun)


def fragment(seq, tfdt, key=True, av=True, offsets=False):
    def moof(video_at, audio_at):
        trafs = traf(1, tfdt, 3, key, video_at) + (traf(2, tfdt * 441 // 900, 2, False, audio_at) if av else b"")
        return box(b"moof", full(b"mfhd", 0, 0, struct.pack(">I", seq)) + trafs)
    size = len(moof(0, 0))
    # Samples of 6 bytes, video then audio, in the mdat after the moof (offsets from the moof).
    m = moof(size + 8, size + 8 + 18) if offsets else moof(0, 0)
    return m + box(b"mdat", bytes(range(30)) if offsets else bytes(24))


def flv_tag(t, ts, body):
    return struct.pack(">BI", t, len(body))[0:1] + struct.pack(">I", len(body))[1:] + \
        struct.pack(">I", ts)[1:] + bytes([ts >> 24 & 0xFF, 0, 0, 0]) + body + struct.pack(">I", 11 + len(body))


def amf_str(s):
    return struct.pack(">H", len(s)) + s


META = b"\x02" + amf_str(b"onMetaData") + b"\x08" + struct.pack(">I", 1) + amf_str(b"duration") + \
    b"\x00" + struct.pack(">d", 0.0) + b"\0\0\x09"
FLV = b"FLV\x01\x05" + struct.pack(">I", 9) + struct.pack(">I", 0) + flv_tag(18, 0, META) + \
    flv_tag(9, 0, b"\x17\x00\0\0\0\x01\x42") + flv_tag(8, 0, b"\xaf\x00\x12\x10") + \
    b"".join(flv_tag(9, ms, bytes([0x17 if ms % 200 == 0 else 0x27, 1, 0, 0, 0, 0xAB])) +
             flv_tag(8, ms, b"\xaf\x01\x21\x10") for ms in range(0, 400, 40))

FMP4 = init() + fragment(1, 0) + fragment(2, 10800, False) + fragment(3, 21600)
SEEDS = {
    "fmp4_av": bytes([63]) + FMP4,
    "fmp4_av_bytewise": bytes([0]) + FMP4,
    "fmp4_cut": bytes([5]) + FMP4[:-20],
    "fmp4_video_only": bytes([17]) + init(False) + fragment(1, 0, True, False) + fragment(2, 10800, True, False),
    "fmp4_large_size": bytes([9]) + init() + struct.pack(">I", 1) + b"free" + struct.pack(">Q", 24) + bytes(8)
    + fragment(1, 0),
    "fmp4_samples_cut": bytes([64 | 7]) + init(stsd=True) + fragment(1, 0, offsets=True) +
    fragment(2, 10800, False, offsets=True) + fragment(3, 21600, offsets=True),
    "fmp4_samples_video_only": bytes([64 | 63]) + init(False, True) + fragment(1, 0, True, False, True) +
    fragment(2, 10800, True, False, True),
    "flv": bytes([63]) + FLV,
    "flv_cut": bytes([3]) + FLV[:-7],
    "flv_bad_prev_size": bytes([31]) + FLV[:60] + b"\xff" + FLV[61:],
}

out = os.path.join(HERE, "corpus", "recording_index")
os.makedirs(out, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
