#!/usr/bin/env python3
"""Writes the seed corpora tests/fuzz/corpus/{amf0,flv_tag}/ (run once from the repo root)."""
import os, struct

def s(v): b = v.encode(); return b'\x02' + struct.pack('>H', len(b)) + b
def n(v): return b'\x00' + struct.pack('>d', v)
def key(k): b = k.encode(); return struct.pack('>H', len(b)) + b
def obj(props, marker=b'\x03'): return marker + b''.join(key(k) + v for k, v in props) + b'\x00\x00\x09'
def ecma(props): return b'\x08' + struct.pack('>I', len(props)) + obj(props, b'')
END = b'\x00\x00\x09'

amf0 = {
    'connect': s('connect') + n(1) + obj([('app', s('live')), ('flashVer', s('LNX 9,0,124,2')),
                                          ('tcUrl', s('rtmp://localhost:1935/live')), ('fpad', b'\x01\x00'),
                                          ('capabilities', n(15)), ('audioCodecs', n(4071)),
                                          ('videoCodecs', n(252)), ('videoFunction', n(1))]),
    'publish': s('publish') + n(5) + b'\x05' + s('stream') + s('live'),
    'onstatus': s('onStatus') + n(0) + b'\x05' + obj([('level', s('status')), ('code', s('NetStream.Play.Start')),
                                                     ('description', s('Started'))]),
    'metadata': s('@setDataFrame') + s('onMetaData') + ecma([('duration', n(0)), ('width', n(1280)),
                                                             ('height', n(720)), ('videocodecid', n(7)),
                                                             ('stereo', b'\x01\x01')]),
    'strict_array': b'\x0a' + struct.pack('>I', 3) + n(1) + b'\x06' + s('x'),
    'date_long_xml': b'\x0b' + struct.pack('>dh', 1.7e12, -60) + b'\x0c' + struct.pack('>I', 3) + b'abc'
                     + b'\x0f' + struct.pack('>I', 4) + b'<a/>' + b'\x0d',
    'typed_object': b'\x10' + key('Cls') + key('k') + s('v') + END,
    'nested': obj([('a', obj([('b', obj([('c', b'\x0a' + struct.pack('>I', 1) + obj([]))]))]))]),
    'truncated': s('connect') + n(1) + b'\x03' + key('app') + b'\x02\x00\x10li',
    'bad_marker': s('x') + b'\x07\x00\x01',
}

def fcc(t): return t.encode()
nalu = b'\x00\x00\x00\x02\x09\xf0'
def tag(t, ts, body):
    return bytes([t]) + struct.pack('>I', len(body))[1:] + struct.pack('>I', ts & 0xffffff)[1:] \
        + bytes([ts >> 24]) + b'\x00\x00\x00' + body + struct.pack('>I', 11 + len(body))
flv_header = b'FLV\x01\x05\x00\x00\x00\x09\x00\x00\x00\x00'

flv = {
    'avc_seq': b'\x17\x00\x00\x00\x00\x01\x64\x00\x1f\xff\xe1\x00\x04\x67\x64\x00\x1f\x01\x00\x04\x68\xee\x3c\x80',
    'avc_key': b'\x17\x01\x00\x00\x00' + nalu,
    'avc_inter_neg_cts': b'\x27\x01\xff\xff\xdf' + nalu,
    'aac_seq': b'\xaf\x00\x12\x10',
    'mp3': b'\x2e\xff\xfb\x90\x00',
    'hevc_ex_seq': b'\x90' + fcc('hvc1') + b'\x01\x01\x60',
    'hevc_ex_coded': b'\x91' + fcc('hvc1') + b'\x00\x00\x21' + nalu,
    'hevc_ex_modex_x': b'\x97\x02\x00\x01\x00\x03' + fcc('hvc1') + nalu,
    'av1_ex_multitrack': b'\x96\x03' + fcc('av01') + b'\x00\x12\x00',
    'audio_ex_opus': b'\x91' + fcc('Opus') + b'\xfc',
    'audio_ex_opus_seq': b'\x90' + fcc('Opus') + bytes.fromhex('4f707573486561640102380180bb0000000000'),
    'audio_ex_multichannel_native': b'\x94' + fcc('Opus') + b'\x01\x06\x00\x00\x00\x3f',
    'audio_ex_multichannel_custom': b'\x94' + fcc('Opus') + b'\x02\x03\x01\x00\x02',
    'audio_ex_modex_nano': b'\x97\x02\x01\x86\xa0\x01' + fcc('Opus') + b'\xfc',
    'metadata': s('@setDataFrame') + s('onMetaData') + ecma([('width', n(1280))]),
    'flv_stream': flv_header + tag(18, 0, s('onMetaData') + ecma([('width', n(640))]))
                  + tag(9, 0, b'\x17\x00\x00\x00\x00\x01\x64') + tag(8, 0, b'\xaf\x00\x12\x10')
                  + tag(9, 0x01000021, b'\x17\x01\x00\x00\x00' + nalu),
}

for name, corpus in (('amf0', amf0), ('flv_tag', flv)):
    d = os.path.join('tests', 'fuzz', 'corpus', name)
    os.makedirs(d, exist_ok=True)
    for k, v in corpus.items():
        with open(os.path.join(d, k), 'wb') as f:
            f.write(v)
