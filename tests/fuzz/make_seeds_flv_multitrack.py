#!/usr/bin/env python3
"""Writes the seed corpus tests/fuzz/corpus/flv_multitrack/ (run once from the repo root):
E-RTMP v2 multitrack video and audio tags of the three AvMultitrackTypes, and broken ones."""
import os, struct

def u24(n): return struct.pack('>I', n)[1:]
def fcc(t): return t.encode()
nalu = b'\x00\x00\x00\x02\x09\xf0'
cts = b'\x00\x00\x21'
def sized(tid, body, four=b''): return four + bytes([tid]) + u24(len(body)) + body

seeds = {
    'video_one_track': b'\x96\x01' + fcc('avc1') + b'\x02' + cts + nalu,
    'video_many_tracks': b'\x96\x11' + fcc('avc1') + sized(0, cts + nalu) + sized(1, cts + nalu) + sized(2, cts + nalu),
    'video_many_codecs': b'\x96\x20' + sized(0, b'\x01\x64', fcc('avc1')) + sized(1, b'\x81\x00', fcc('av01')),
    'video_seq_x': b'\xa6\x13' + fcc('hvc1') + sized(0, nalu) + sized(1, nalu),
    'video_modex': b'\x97\x02\x01\x86\xa0\x06\x01' + fcc('avc1') + b'\x00' + cts + nalu,
    'audio_one_track': b'\x95\x01' + fcc('Opus') + b'\x03\xfc',
    'audio_many_tracks': b'\x95\x10' + fcc('mp4a') + sized(0, b'\x12\x10') + sized(1, b'\x11\x90'),
    'audio_many_codecs': b'\x95\x21' + sized(0, b'\x21', fcc('mp4a')) + sized(1, b'\xfc', fcc('Opus')),
    'truncated_size': b'\x96\x11' + fcc('avc1') + b'\x04\x00\x00\x09\x01',
    'reserved_type': b'\x96\x31' + fcc('avc1') + b'\x00',
    'nested_multitrack': b'\x96\x06' + fcc('avc1') + b'\x00',
}

d = os.path.join('tests', 'fuzz', 'corpus', 'flv_multitrack')
os.makedirs(d, exist_ok=True)
for k, v in seeds.items():
    with open(os.path.join(d, k), 'wb') as f:
        f.write(v)
