"""An Enhanced RTMP publisher written for the tests, independently of Rill's code: reads an HEVC
Annex B file (ffmpeg + libx265, with access unit delimiters) and optionally an ADTS AAC file, and
publishes them as E-RTMP `hvc1` tags (SequenceStart with an hvcC record built from the
VPS/SPS/PPS, then CodedFramesX) plus legacy AAC tags; or an AV1 (IVF) or VP9 (IVF) file with an
Opus (Ogg) file as E-RTMP v1/v2 `av01`/`vp09` and `Opus` tags (av1C / vpcC taken from an MP4
ffmpeg remuxes the video into, OpusHead from the Ogg stream). Over rtmpclient."""

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
    publish_tags(host, port, app, name, tags, speed)


def publish_tags(host, port, app, name, tags, speed):
    """Publishes [(timestamp ms, 8 or 9, tag body)] in order, paced at `speed` x real time, then
    unpublishes."""
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


# ---------------------------------------------------------------------------------------------
# AV1 / VP9 + Opus

def make_av1_opus_media(codec='av1', seconds=3, fps=10):
    """(IVF video path, MP4 path of the same video, Ogg Opus path): 160x90, a keyframe every
    second, stereo Opus of 20 ms packets; made once by ffmpeg and cached."""
    d = rilltest._media_dir()
    stem = os.path.join(d, 'testsrc2-160x90-%dfps-%s-%ds' % (fps, codec, seconds))
    ivf, mp4, ogg = stem + '.ivf', stem + '.mp4', os.path.join(d, 'sine-48000-opus-%ds.ogg' % seconds)
    enc = (['-c:v', 'libaom-av1', '-cpu-used', '8', '-usage', 'realtime', '-b:v', '100k'] if codec == 'av1'
           else ['-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '100k'])
    ff = ['ffmpeg', '-hide_banner', '-nostdin', '-loglevel', 'error', '-y']
    if not os.path.exists(ivf):
        tmp = ivf + '.tmp.%d.ivf' % os.getpid()
        rilltest.run(ff + ['-f', 'lavfi', '-i', 'testsrc2=size=160x90:rate=%d' % fps, '-t', str(seconds),
                           '-pix_fmt', 'yuv420p', '-g', str(fps), '-keyint_min', str(fps)] + enc + ['-f', 'ivf', tmp],
                     timeout=120, check=True)
        os.replace(tmp, ivf)
    if not os.path.exists(mp4):
        tmp = mp4 + '.tmp.%d.mp4' % os.getpid()
        rilltest.run(ff + ['-i', ivf, '-c', 'copy', '-f', 'mp4', tmp], timeout=60, check=True)
        os.replace(tmp, mp4)
    if not os.path.exists(ogg):
        tmp = ogg + '.tmp.%d.ogg' % os.getpid()
        rilltest.run(ff + ['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000', '-t', str(seconds),
                           '-ac', '2', '-c:a', 'libopus', '-b:a', '48k', '-frame_duration', '20', '-f', 'ogg', tmp],
                     timeout=60, check=True)
        os.replace(tmp, ogg)
    return ivf, mp4, ogg


def ivf_frames(data):
    """The frames of an IVF file (32-byte header, then 12-byte frame headers: size u32le, pts u64le)."""
    frames, i = [], int.from_bytes(data[6:8], 'little')
    while i + 12 <= len(data):
        size = int.from_bytes(data[i:i + 4], 'little')
        frames.append(data[i + 12:i + 12 + size])
        i += 12 + size
    return frames


def ogg_packets(data):
    """The packets of a single-stream Ogg file (RFC 3533: 27-byte page header, lacing values)."""
    packets, cur, i = [], b'', 0
    while i + 27 <= len(data) and data[i:i + 4] == b'OggS':
        nseg = data[i + 26]
        lacing = data[i + 27:i + 27 + nseg]
        p = i + 27 + nseg
        for lace in lacing:
            cur += data[p:p + lace]
            p += lace
            if lace < 255:
                packets.append(cur)
                cur = b''
        i = p
    return packets


def mp4_box(data, path):
    """The payload of the box at `path` (e.g. 'moov/trak/mdia/minf/stbl/stsd/av01/av1C'); sample
    entries are entered past their fixed fields."""
    skip = {'stsd': 8, 'av01': 78, 'vp09': 78}
    for name in path.split('/'):
        i = 0
        while i + 8 <= len(data):
            size, typ = int.from_bytes(data[i:i + 4], 'big'), data[i + 4:i + 8].decode('latin1')
            if typ == name:
                data = data[i + 8 + skip.get(name, 0):i + size] if name != path.split('/')[-1] else data[i + 8:i + size]
                break
            i += size
        else:
            return None
    return data


def av1_is_key(tu):
    """True when the temporal unit carries a sequence header OBU (libaom sends one with each key frame)."""
    i = 0
    while i < len(tu):
        h = tu[i]
        typ, ext, has_size = (h >> 3) & 0xF, h & 4, h & 2
        i += 2 if ext else 1
        if typ == 1:
            return True
        if not has_size:
            return False
        size, shift = 0, 0
        while True:
            b = tu[i]
            i += 1
            size |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        i += size
    return False


def vp9_is_key(frame):
    """VP9 uncompressed header (VP9 6.2): frame_type 0 is KEY_FRAME (profile 0, not show_existing)."""
    return (frame[0] >> 6) == 2 and not frame[0] & 0x08 and not frame[0] & 0x04


def av1_opus_tags(ivf, mp4, ogg, codec='av1', fps=10):
    """The E-RTMP tags [(ts, 9 or 8, body)] of the files, sequence starts first, in time order:
    video ExVideoTagHeader (IsExHeader | FrameType | PacketType) + FourCC, audio SoundFormat 9
    (ExHeader) | AudioPacketType + "Opus"."""
    fourcc = b'av01' if codec == 'av1' else b'vp09'
    with open(mp4, 'rb') as f:
        moov = f.read()
    if codec == 'av1':
        record = mp4_box(moov, 'moov/trak/mdia/minf/stbl/stsd/av01/av1C')
    else:  # vpcC is a FullBox: its version 1 and flags go along (as ffmpeg's FLV muxer sends it)
        record = mp4_box(moov, 'moov/trak/mdia/minf/stbl/stsd/vp09/vpcC')
    with open(ivf, 'rb') as f:
        frames = ivf_frames(f.read())
    with open(ogg, 'rb') as f:
        packets = ogg_packets(f.read())
    is_key = av1_is_key if codec == 'av1' else vp9_is_key
    video = [(0, 9, bytes([0x80 | 0x10 | 0]) + fourcc + record)]
    video += [(i * 1000 // fps, 9, bytes([0x80 | (0x10 if is_key(fr) else 0x20) | 1]) + fourcc + fr)
              for i, fr in enumerate(frames)]
    head = packets[0]  # OpusHead; packets[1] is OpusTags
    audio = [(0, 8, bytes([0x90]) + b'Opus' + head)]
    audio += [(i * 20, 8, bytes([0x91]) + b'Opus' + p) for i, p in enumerate(packets[2:])]
    tags = video + audio
    tags.sort(key=lambda t: (t[0], (t[2][0] & 0x0F) != 0))  # sequence starts first
    return tags
