// The head of a progressive MP4 cut: ftyp, moov with full sample tables, the mdat's header
// (protocol/progressive_mp4.h says which boxes and why).
#include <algorithm>
#include <cstdint>

#include "rill/protocol/mp4_box_writer.h"
#include "rill/protocol/progressive_mp4.h"

namespace rill::protocol {

namespace {

constexpr uint32_t kMovieTimescale = 1000;
constexpr uint32_t kNonSyncSample = 0x00010000;  // §8.8.3.1 sample_is_non_sync_sample

uint64_t media_duration(const Mp4CutTrack& t) {
  uint64_t d = 0;
  for (const Fmp4SampleEntry& s : t.samples) d += s.duration;
  return d;
}

// d ticks of `timescale` in movie ticks, without overflowing for any 64-bit d.
uint64_t to_movie(uint64_t d, uint32_t timescale) {
  return d / timescale * kMovieTimescale + d % timescale * kMovieTimescale / timescale;
}

void write_ftyp(Mp4BoxWriter& w) {
  const size_t ftyp = w.begin("ftyp");  // §4.3
  w.fourcc("isom");
  w.u32(0x200);
  for (const char* brand : {"isom", "iso2", "mp41"}) w.fourcc(brand);
  w.end(ftyp);
}

void write_mvhd(Mp4BoxWriter& w, uint64_t duration, uint32_t next_track) {
  const size_t mvhd = w.begin_full("mvhd", 1, 0);  // §8.2.2
  w.u64(0);                                        // creation_time
  w.u64(0);                                        // modification_time
  w.u32(kMovieTimescale);
  w.u64(duration);
  w.u32(0x00010000);  // rate 1.0
  w.u16(0x0100);      // volume 1.0
  w.zeros(2 + 8);     // reserved
  w.unity_matrix();
  w.zeros(24);  // pre_defined
  w.u32(next_track);
  w.end(mvhd);
}

void write_tkhd(Mp4BoxWriter& w, const Fmp4Track& t, uint64_t duration) {
  const size_t tkhd = w.begin_full("tkhd", 1, 0x000003);  // §8.3.2: track_enabled | track_in_movie
  w.u64(0);                                               // creation_time
  w.u64(0);                                               // modification_time
  w.u32(t.track_id);
  w.u32(0);  // reserved
  w.u64(duration);
  w.zeros(8);                   // reserved
  w.u16(0);                     // layer
  w.u16(0);                     // alternate_group
  w.u16(t.audio ? 0x0100 : 0);  // volume
  w.u16(0);                     // reserved
  w.unity_matrix();
  w.u32(t.video ? t.width : 0);
  w.u32(t.video ? t.height : 0);
  w.end(tkhd);
}

// §8.6.6: an empty edit (media_time -1) for the time before the track starts, then the media.
void write_edts(Mp4BoxWriter& w, uint64_t empty_ms, uint64_t media_ms) {
  const size_t edts = w.begin("edts");
  const size_t elst = w.begin_full("elst", 1, 0);
  w.u32(2);
  w.u64(empty_ms);
  w.u64(UINT64_MAX);  // media_time -1
  w.u32(0x00010000);  // media_rate 1.0
  w.u64(media_ms);
  w.u64(0);
  w.u32(0x00010000);
  w.end(elst);
  w.end(edts);
}

// stts (§8.6.1.2) and, when an offset is not 0, ctts (§8.6.1.3): runs of equal values.
void write_times(Mp4BoxWriter& w, const std::vector<Fmp4SampleEntry>& samples) {
  std::vector<std::pair<uint32_t, uint32_t>> runs;  // count, value
  auto add = [&](uint32_t v) {
    if (!runs.empty() && runs.back().second == v) {
      ++runs.back().first;
    } else {
      runs.emplace_back(1, v);
    }
  };
  for (const Fmp4SampleEntry& s : samples) add(s.duration);
  const size_t stts = w.begin_full("stts", 0, 0);
  w.u32(static_cast<uint32_t>(runs.size()));
  for (const auto& [count, value] : runs) {
    w.u32(count);
    w.u32(value);
  }
  w.end(stts);
  const bool any = std::any_of(samples.begin(), samples.end(),
                               [](const Fmp4SampleEntry& s) { return s.composition_offset != 0; });
  if (!any) return;
  const bool negative = std::any_of(samples.begin(), samples.end(),
                                    [](const Fmp4SampleEntry& s) { return s.composition_offset < 0; });
  runs.clear();
  for (const Fmp4SampleEntry& s : samples) {
    // Version 0 offsets are unsigned, version 1 signed (§8.6.1.3.3): clamped to the field.
    const int64_t lo = negative ? INT32_MIN : 0, hi = negative ? INT32_MAX : UINT32_MAX;
    add(static_cast<uint32_t>(std::clamp(s.composition_offset, lo, hi)));
  }
  const size_t ctts = w.begin_full("ctts", negative ? 1 : 0, 0);
  w.u32(static_cast<uint32_t>(runs.size()));
  for (const auto& [count, value] : runs) {
    w.u32(count);
    w.u32(value);
  }
  w.end(ctts);
}

void write_sizes(Mp4BoxWriter& w, const Mp4CutTrack& t) {
  if (t.track->video) {  // §8.6.2: the sync samples, numbered from 1
    std::vector<uint32_t> sync;
    for (size_t i = 0; i < t.samples.size(); ++i) {
      if (!(t.samples[i].flags & kNonSyncSample)) sync.push_back(static_cast<uint32_t>(i + 1));
    }
    const size_t stss = w.begin_full("stss", 0, 0);
    w.u32(static_cast<uint32_t>(sync.size()));
    for (uint32_t n : sync) w.u32(n);
    w.end(stss);
  }
  const size_t stsz = w.begin_full("stsz", 0, 0);  // §8.7.3
  w.u32(0);                                        // sample_size: each its own
  w.u32(static_cast<uint32_t>(t.samples.size()));
  for (const Fmp4SampleEntry& s : t.samples) w.u32(s.size);
  w.end(stsz);
}

// stsc (§8.7.4) and stco/co64 (§8.7.5) of the track's chunks, in mdat order.
void write_chunks(Mp4BoxWriter& w, const std::vector<const Mp4CutChunk*>& chunks, uint64_t payload_at,
                  bool co64) {
  const size_t stsc = w.begin_full("stsc", 0, 0);
  const size_t count_at = w.size();
  w.u32(0);
  uint32_t entries = 0, last = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (i > 0 && chunks[i]->count == last) continue;
    last = chunks[i]->count;
    w.u32(static_cast<uint32_t>(i + 1));  // first_chunk
    w.u32(last);                          // samples_per_chunk
    w.u32(1);                             // sample_description_index
    ++entries;
  }
  w.patch_u32(count_at, entries);
  w.end(stsc);
  const size_t stco = w.begin_full(co64 ? "co64" : "stco", 0, 0);
  w.u32(static_cast<uint32_t>(chunks.size()));
  for (const Mp4CutChunk* c : chunks) {
    const uint64_t at = payload_at + c->payload_offset;
    if (co64) {
      w.u64(at);
    } else {
      w.u32(static_cast<uint32_t>(at));
    }
  }
  w.end(stco);
}

void write_minf(Mp4BoxWriter& w, const Mp4CutTrack& t, const std::vector<const Mp4CutChunk*>& chunks,
                uint64_t payload_at, bool co64) {
  const size_t minf = w.begin("minf");
  w.media_header_and_dinf(t.track->video);
  const size_t stbl = w.begin("stbl");
  const size_t stsd = w.begin("stsd");
  w.bytes(t.track->stsd);  // version, flags, entry_count, entries: the recording's
  w.end(stsd);
  write_times(w, t.samples);
  write_sizes(w, t);
  write_chunks(w, chunks, payload_at, co64);
  w.end(stbl);
  w.end(minf);
}

void write_trak(Mp4BoxWriter& w, const Mp4CutTrack& t, const std::vector<const Mp4CutChunk*>& chunks,
                uint64_t payload_at, bool co64) {
  const Fmp4Track& tr = *t.track;
  const uint64_t media = media_duration(t);
  const size_t trak = w.begin("trak");
  write_tkhd(w, tr, t.empty_edit_ms + to_movie(media, tr.timescale));
  if (t.empty_edit_ms > 0) write_edts(w, t.empty_edit_ms, to_movie(media, tr.timescale));
  const size_t mdia = w.begin("mdia");
  const size_t mdhd = w.begin_full("mdhd", 1, 0);  // §8.4.2
  w.u64(0);
  w.u64(0);
  w.u32(tr.timescale);
  w.u64(media);
  w.u16(tr.language & 0x7FFF);
  w.u16(0);  // pre_defined
  w.end(mdhd);
  const size_t hdlr = w.begin_full("hdlr", 0, 0);  // §8.4.3
  w.u32(0);                                        // pre_defined
  w.fourcc(tr.video ? "vide" : "soun");
  w.zeros(12);  // reserved
  for (char c : std::string_view(tr.video ? "VideoHandler" : "SoundHandler")) w.u8(static_cast<uint8_t>(c));
  w.u8(0);
  w.end(hdlr);
  write_minf(w, t, chunks, payload_at, co64);
  w.end(mdia);
  w.end(trak);
}

std::vector<uint8_t> build_head(const std::vector<Mp4CutTrack>& tracks,
                                const std::vector<Mp4CutChunk>& chunks, uint64_t payload, uint64_t head_size,
                                bool co64) {
  std::vector<uint8_t> out;
  Mp4BoxWriter w(out);
  write_ftyp(w);
  uint64_t duration = 0;
  uint32_t next_track = 1;
  for (const Mp4CutTrack& t : tracks) {
    duration = std::max(duration, t.empty_edit_ms + to_movie(media_duration(t), t.track->timescale));
    next_track = std::max(next_track, t.track->track_id + 1);
  }
  const size_t moov = w.begin("moov");  // §8.2.1
  write_mvhd(w, duration, next_track);
  const bool large = payload > UINT32_MAX - 8;
  const uint64_t payload_at = head_size;
  for (size_t i = 0; i < tracks.size(); ++i) {
    std::vector<const Mp4CutChunk*> own;
    for (const Mp4CutChunk& c : chunks) {
      if (c.track == i) own.push_back(&c);
    }
    write_trak(w, tracks[i], own, payload_at, co64);
  }
  w.end(moov);
  // §4.2: size 1 and a 64-bit largesize when the box passes 2^32 - 1 bytes.
  if (large) {
    w.u32(1);
    w.fourcc("mdat");
    w.u64(16 + payload);
  } else {
    w.u32(static_cast<uint32_t>(8 + payload));
    w.fourcc("mdat");
  }
  return out;
}

}  // namespace

std::vector<uint8_t> progressive_mp4_head(const std::vector<Mp4CutTrack>& tracks,
                                          const std::vector<Mp4CutChunk>& chunks, uint64_t payload) {
  // The offsets' values do not change the head's size: measured with zeros first.
  const uint64_t size32 = build_head(tracks, chunks, payload, 0, false).size();
  const bool co64 = size32 + payload > UINT32_MAX;
  const uint64_t size = co64 ? build_head(tracks, chunks, payload, 0, true).size() : size32;
  return build_head(tracks, chunks, payload, size, co64);
}

}  // namespace rill::protocol
