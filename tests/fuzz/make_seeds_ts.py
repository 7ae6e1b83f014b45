#!/usr/bin/env python3
"""Writes the seed corpora for ts_muxer_fuzz and avc_aac_fuzz (run once; the output is committed).

Record layout of ts_muxer_fuzz: op(1) dts_delta(2, signed BE) cts(2, signed BE) length(2, BE) data.
Input layout of avc_aac_fuzz: flags(1) n(1) config(n) AVCC sample.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

SPS = bytes.fromhex("6742c01fd9005005bb011000000300100000030140f1832480")
SPS_HIGH = bytes.fromhex("67640028acd940780227e5c044000003000400000300503c60c658")
PPS = bytes.fromhex("68cb83cb20")


def avc_record(sps, pps, lsm1=3):
    return (bytes([1, sps[1], sps[2], sps[3], 0xFC | lsm1, 0xE1]) + struct.pack(">H", len(sps)) + sps
            + bytes([1]) + struct.pack(">H", len(pps)) + pps)


def avcc(nals, ls=4):
    return b"".join(len(n).to_bytes(ls, "big") + n for n in nals)


def rec(op, delta, cts, data):
    return struct.pack(">BhhH", op, delta, cts, len(data)) + data


VIDEO, AUDIO, AVC, AAC, SEG, KEY = 0, 1, 2, 3, 4, 8
IDR = bytes([0x65]) + bytes(range(1, 200))
P = bytes([0x41]) + bytes(range(50, 120))
SEI = bytes([0x06, 0x05, 0x01, 0xAA, 0x80])
AU = bytes(range(0, 180))


def write(dirname, name, data):
    d = os.path.join(HERE, "corpus", dirname)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def ts_seeds():
    cfg = rec(AVC, 0, 0, avc_record(SPS, PPS)) + rec(AAC, 0, 0, bytes([0x12, 0x10]))
    write("ts_muxer", "av_gop", bytes([3]) + cfg + rec(SEG | KEY | VIDEO, 0, 80, avcc([SEI, IDR]))
          + rec(AUDIO, 0, 0, AU) + rec(VIDEO, 40, 40, avcc([P])) + rec(AUDIO, 23, 0, AU[:7])
          + rec(VIDEO, 40, 0, avcc([P, P])) + rec(SEG | KEY | VIDEO, 40, 0, avcc([IDR * 3])))
    write("ts_muxer", "video_only", bytes([1]) + rec(AVC, 0, 0, avc_record(SPS_HIGH, PPS, 1))
          + rec(SEG | KEY | VIDEO, 0, 0, avcc([IDR], 2)) + rec(VIDEO, 33, -33, avcc([P], 2)))
    write("ts_muxer", "audio_only_aac", bytes([2]) + rec(AAC, 0, 0, bytes([0x11, 0x88]))
          + b"".join(rec(AUDIO | (SEG if i == 0 else 0), 21, 0, AU[: 10 + 17 * i]) for i in range(10)))
    write("ts_muxer", "audio_only_mp3", bytes([6]) + rec(SEG | AUDIO, 0, 0, bytes([0xFF, 0xFB, 0x90, 0x64]) + AU)
          + rec(AUDIO, 26, 0, bytes(417)))
    write("ts_muxer", "no_config", bytes([3]) + rec(VIDEO | KEY, 0, 0, avcc([IDR])) + rec(AUDIO, 0, 0, AU))
    write("ts_muxer", "bad_sample", bytes([3]) + cfg + rec(VIDEO, 0, 0, b"\x00\x00\x01\x00\x41")
          + rec(AUDIO, 0, 0, bytes(8185)) + rec(VIDEO | KEY, 0, 0, avcc([IDR])))
    write("ts_muxer", "config_change", bytes([3]) + cfg + rec(VIDEO | KEY, 0, 0, avcc([IDR]))
          + rec(AVC, 0, 0, avc_record(SPS_HIGH, PPS)) + rec(AAC, 0, 0, bytes([0x17, 0x80, 0x56, 0x22, 0x10]))
          + rec(VIDEO | KEY, 1000, 0, avcc([IDR])) + rec(AUDIO, 0, 0, AU) + rec(AAC, 0, 0, b"\x12\x00"))
    write("ts_muxer", "stuffing_edges", bytes([2 | 4]) + b"".join(
        rec(AUDIO, 10, 0, bytes(n)) for n in (0, 1, 161, 162, 163, 169, 170, 171, 353, 354, 355)))
    write("ts_muxer", "wrap", bytes([3]) + cfg + rec(VIDEO | KEY, -1, 0, avcc([IDR]))
          + rec(VIDEO, 32767, -32768, avcc([P])) + rec(AUDIO, -32768, 0, AU))


def fuzz_input(flags, config, sample):
    return bytes([flags, len(config)]) + config + sample


def avc_aac_seeds():
    write("avc_aac", "record_key", fuzz_input(2 | 4, avc_record(SPS, PPS), avcc([SEI, IDR])))
    write("avc_aac", "record_high_ls2", fuzz_input(1, avc_record(SPS_HIGH, PPS, 1), avcc([P, P], 2)))
    write("avc_aac", "record_ls1", fuzz_input(0, avc_record(SPS, PPS, 0), avcc([P], 1)))
    write("avc_aac", "own_aud_sps", fuzz_input(2 | 4, avc_record(SPS, PPS),
                                               avcc([bytes([9, 0xF0]), SPS, PPS, IDR])))
    write("avc_aac", "truncated", fuzz_input(2, avc_record(SPS, PPS)[:20], avcc([IDR])[:50]))
    write("avc_aac", "asc_lc", fuzz_input(2, bytes([0x12, 0x10]), AU))
    write("avc_aac", "asc_explicit", fuzz_input(2, bytes([0x17, 0x80, 0x56, 0x22, 0x10]), AU[:20]))
    write("avc_aac", "asc_he", fuzz_input(2, bytes([0x2B, 0x11, 0x88]), AU[:1]))
    write("avc_aac", "asc_escape", fuzz_input(2, bytes([0xF8, 0x48, 0x40]), b""))
    write("avc_aac", "sps_high", fuzz_input(2, SPS_HIGH, b""))


if __name__ == "__main__":
    ts_seeds()
    avc_aac_seeds()
