#pragma once
// One progressive MP4 cut from fMP4 recordings (the files media::Recorder writes, indexed by
// protocol/recording_index.h with keep_samples): `ftyp` + `moov` first, then one `mdat` whose
// payload is byte runs of the recordings, in order — nothing remuxed but the sample tables. Pure:
// indexes and times in, the head bytes and a list of (file, offset, length) out; the caller
// streams the head and then the runs. The same input gives the same bytes (a Range request can
// be answered from a plan made again).
//
// The cut (times in Unix seconds; a file's sample at decode time d of a track of timescale s is
// at file.start + d/s - the file's first fragment's start_seconds, as recording.m3u8 places it):
//   - starts at the last sync sample of the reference track (video when the file has video,
//     else the first track: an audio-only file cuts at any sample) at or before `from`, or at the
//     first one after it when `from` is before the recording or falls in a gap between files;
//     no `from`: the first one recorded. The other tracks start at their first sample at or after
//     that time;
//   - ends before the first reference sync sample at or after `to`, or where what is recorded
//     ends: at the end of the last file, before a file whose tracks differ (ids, kinds,
//     timescales, or sample descriptions not byte-identical: a new codec configuration needs a
//     new stsd, which one `moov` cannot switch to mid-track here), or before a file that starts
//     more than `max_gap` seconds after the previous one ends (the stream stopped). Mp4CutEnd
//     says which.
//
// Boxes (ISO/IEC 14496-12): ftyp (§4.3; isom, iso2, mp41), moov (§8.2.1) with mvhd (§8.2.2) and per
// track trak/tkhd (§8.3.2)/[edts/elst]/mdia/mdhd (§8.4.2)/hdlr/minf/{vmhd|smhd}/dinf/stbl: stsd
// copied from the recording, stts (§8.6.1.2), ctts (§8.6.1.3, only when an offset is not 0;
// version 1 when one is negative), stss (§8.6.2, video: "If the sync sample box is not present,
// every sample is a sync sample"), stsz (§8.7.3), stsc (§8.7.4) and stco, or co64 (§8.7.5) when
// an offset passes 2^32 - 1 (stco's chunk_offset is 32 bits). Version 1 mvhd/tkhd/mdhd/elst
// (64-bit durations). A chunk is the samples of one track run of one fragment (contiguous in the
// recording and in the mdat), so the mdat interleaves the tracks as the recording does.
//
// A/V sync: each track's output timeline starts at its first sample; a track that starts later
// than the earliest one gets an empty edit of the difference (§8.6.6.1: "an empty edit is used to
// offset the start time of a track"), so the tracks keep the offsets they had in the recording.
// At a file boundary the last sample of each track is lengthened or shortened (at least 1 tick)
// so that the next file's samples start where they did relative to its reference track.
#include <cstdint>
#include <optional>
#include <vector>

#include "rill/protocol/recording_index.h"

namespace rill::protocol {

struct ProgressiveMp4File {
  uint32_t id = 0;   // the caller's name for the file, in Mp4ByteRun::file
  double start = 0;  // Unix seconds of its first fragment
  std::vector<Fmp4Track> tracks;
  std::vector<Fmp4Fragment> fragments;  // indexed with keep_samples
};

struct ProgressiveMp4Window {
  std::optional<double> from, to;  // Unix seconds
  double max_gap = 2;              // seconds between two files that still join
};

struct Mp4ByteRun {
  uint32_t file = 0;
  uint64_t offset = 0, length = 0;
};

enum class Mp4CutEnd : uint8_t { Window, Recorded, ConfigChange, Gap };

struct ProgressiveMp4 {
  std::vector<uint8_t> head;     // ftyp + moov + the mdat's header
  std::vector<Mp4ByteRun> runs;  // the mdat's payload, in order
  uint64_t size = 0;             // head + every run
  double start = 0;              // Unix seconds of the first reference sample
  double duration = 0;           // seconds of the reference track
  Mp4CutEnd end = Mp4CutEnd::Window;
  std::vector<uint32_t> samples;  // per track of the moov, in the first file's order
};

// Files in time order (the first file of the cut decides the tracks). nullopt when no reference
// sync sample is in [from, to) or no file has one at or after `from`.
std::optional<ProgressiveMp4> cut_progressive_mp4(const std::vector<ProgressiveMp4File>& files,
                                                  const ProgressiveMp4Window& window);

// ---- the box writer (progressive_mp4_moov.cpp), for the cut ----

struct Mp4CutTrack {
  const Fmp4Track* track = nullptr;
  std::vector<Fmp4SampleEntry> samples;  // durations already adjusted at file boundaries
  uint64_t empty_edit_ms = 0;            // movie time before its first sample
};

struct Mp4CutChunk {
  size_t track = 0;               // into the tracks
  uint32_t first = 0, count = 0;  // samples of that track
  uint64_t payload_offset = 0;    // in the mdat payload
};

// ftyp + moov + mdat header for `payload` bytes of mdat payload.
std::vector<uint8_t> progressive_mp4_head(const std::vector<Mp4CutTrack>& tracks,
                                          const std::vector<Mp4CutChunk>& chunks, uint64_t payload);

}  // namespace rill::protocol
