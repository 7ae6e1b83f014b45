"""An Enhanced RTMP publisher of H.265 written for the tests, independently of Rill's code: reads
an HEVC Annex B file (ffmpeg + libx265, with access unit delimiters) and optionally an ADTS AAC
file, and publishes them as E-RTMP `hvc1` tags (SequenceStart with an hvcC record built from
the VPS/SPS/PPS, then CodedFramesX) plus legacy AAC tags, over rtmpclient."""

import os
import time

import rilltest
import rtmpclient as rc

FPS = 25


def make_hevc_media(seconds=4, audio=True):
    """(path of an .h265 Annex B file with AUDs, a 1 s GOP and no B-frames, path of an .aac
    ADTS file or None); built once by ffmpeg and cached."""
    d = rilltest._media_dir()
    video = os.path.join(d, 'testsrc2-320x240-25fps-hevc-gop25-%ds.h265' % seconds)
    aac = os.path.join(d, 'sine-44100-%ds.aac' % seconds)
    if not os.path.exists(video):
        tmp = video + '.tmp.%d.h265' % os.getpid()
        rilltest.run(['ffmpeg', '-hide_banner', '-nostdin', '-loglevel', 'error', '-y', '-f', 'lavfi',
                      '-i', 'testsrc2=size=320x240:rate=%d' % FPS, '-t', str(seconds), '-pix_fmt', 'yuv420p',
                      '-c:v', 'libx265', '-preset', 'ultrafast',
                      '-x265-params', 'keyint=25:min-keyint=25:scenecut=0:bframes=0:aud=1:log-level=error',
                      '-f', 'hevc', tmp], timeout=120, check=True)
        os.replace(tmp, video)
    if audio and not os.path.exists(aac):
        tmp = aac + '.tmp.%d.aac' % os.getpid()
        rilltest.run(['ffmpeg', '-hide_banner', '-nostdin', '-loglevel', 'error', '-y', '-f', 'lavfi',
                      '-i', 'sine=frequency=440:sample_rate=44100', '-t', str(seconds), '-c:a', 'aac',
                      '-b:a', '64k', '-f', 'adts', tmp], timeout=120, check=True)
        os.replace(tmp, aac)
    return video, (aac if audio else None)


def nal_units(data):
    """The NAL units of an Annex B byte string (without start codes)."""
    out, i, n = [], 0, len(data)
    starts = []
    while True:
        j = data.find(b'\x00\x00\x01', i)
        if j < 0:
            break
        starts.append(j + 3)
        i = j + 3
    for k, s in enumerate(starts):
        e = starts[k + 1] - 3 if k + 1 < len(starts) else n
        nal = data[s:e]
        while nal.endswith(b'\x00'):  # the zero_byte of the next 4-byte start code
            nal = nal[:-1]
        out.append(nal)
    return out


def nal_type(nal):
    return (nal[0] >> 1) & 0x3F


def access_units(data):
    """[[nal, ...]] split at each AUD (type 35)."""
    aus = []
    for nal in nal_units(data):
        if nal_type(nal) == 35 or not aus:
            aus.append([])
        aus[-1].append(nal)
    return aus


def unescape(nal):
    """The RBSP bytes: emulation prevention bytes (00 00 03) removed."""
    out, zeros = bytearray(), 0
    for b in nal:
        if zeros >= 2 and b == 3:
            zeros = 0
            continue
        out.append(b)
        zeros = zeros + 1 if b == 0 else 0
    return bytes(out)


def hvcc(vps, sps, pps):
    """An HEVCDecoderConfigurationRecord (ISO/IEC 14496-15 8.3.3.1) for 4:2:0 8-bit video."""
    ptl = unescape(sps)[3:15]  # general profile space/tier/idc, compatibility, constraints, level
    rec = bytes([1]) + ptl[:11] + bytes([ptl[11]])
    rec += bytes([0xF0, 0x00, 0xFC, 0xFD, 0xF8, 0xF8, 0x00, 0x00, 0x0F, 3])
    for t, nal in ((32, vps), (33, sps), (34, pps)):
        rec += bytes([0x80 | t, 0, 1]) + len(nal).to_bytes(2, 'big') + nal
    return rec


def adts_frames(data):
    """(AudioSpecificConfig, [raw AAC frames], sample rate) of an ADTS stream."""
    rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
    frames, i, asc, rate = [], 0, None, 44100
    while i + 7 <= len(data):
        h = data[i:i + 9]
        length = ((h[3] & 3) << 11) | (h[4] << 3) | (h[5] >> 5)
        header = 7 if h[1] & 1 else 9
        ot, sfi, ch = (h[2] >> 6) + 1, (h[2] >> 2) & 0xF, ((h[2] & 1) << 2) | (h[3] >> 6)
        asc = ((ot << 11) | (sfi << 7) | (ch << 3)).to_bytes(2, 'big')
        rate = rates[sfi]
        frames.append(data[i + header:i + length])
        i += length
    return asc, frames, rate


def publish_hevc(host, port, app, name, video_path, audio_path=None, speed=4.0):
    """Publishes the files once (at `speed` x real time), then unpublishes."""
    with open(video_path, 'rb') as f:
        aus = access_units(f.read())
    ps = {nal_type(n): n for n in aus[0] if nal_type(n) in (32, 33, 34)}
    tags = [(0, 9, bytes([0x80 | 0x10 | 0]) + b'hvc1' + hvcc(ps[32], ps[33], ps[34]))]
    for i, au in enumerate(aus):
        nals = [n for n in au if nal_type(n) not in (32, 33, 34, 35)]
        key = any(16 <= nal_type(n) <= 21 for n in nals)
        body = b''.join(len(n).to_bytes(4, 'big') + n for n in nals)
        tags.append((i * 1000 // FPS, 9, bytes([0x80 | (0x10 if key else 0x20) | 3]) + b'hvc1' + body))
    if audio_path:
        with open(audio_path, 'rb') as f:
            asc, frames, rate = adts_frames(f.read())
        tags.append((0, 8, b'\xaf\x00' + asc))
        tags += [(i * 1024 * 1000 // rate, 8, b'\xaf\x01' + fr) for i, fr in enumerate(frames)]
    def is_header(tag):
        return tag[2][0] & 0x0F == 0 if tag[1] == 9 else tag[2][1] == 0
    tags.sort(key=lambda t: (t[0], not is_header(t)))  # sequence headers first
    conn, sid, _ = rc.connect_and_publish(host, port, app, name)
    try:
        start = time.monotonic()
        for ts, kind, payload in tags:
            delay = start + ts / 1000.0 / speed - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if kind == 9:
                conn.send_video(payload, ts, stream_id=sid)
            else:
                conn.send_audio(payload, ts, stream_id=sid)
        time.sleep(0.3)
    finally:
        conn.close()
