// Where a progressive MP4 cut starts and ends, which samples it takes and where their bytes are
// (protocol/progressive_mp4.h); the boxes are written by progressive_mp4_moov.cpp.
#include "rill/protocol/progressive_mp4.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rill::protocol {

namespace {

constexpr uint32_t kNonSyncSample = 0x00010000;  // §8.8.3.1 sample_is_non_sync_sample
constexpr double kEpsilon = 1e-9;
// The recorder's clock is in milliseconds (RTMP timestamps), each track's timescale rounds it its
// own way: a sample of another track within this of the reference track's cut belongs to its side.
constexpr double kOtherTrackSlack = 1e-3;
constexpr double kNever = std::numeric_limits<double>::infinity();

// The tracks a cut can carry: video or audio with a sample description.
std::vector<const Fmp4Track*> usable_tracks(const ProgressiveMp4File& f) {
  std::vector<const Fmp4Track*> out;
  for (const Fmp4Track& t : f.tracks) {
    if ((t.video || t.audio) && !t.stsd.empty() && t.timescale > 0) out.push_back(&t);
  }
  return out;
}

// Two files join when their tracks are the same, sample descriptions byte for byte.
bool same_tracks(const ProgressiveMp4File& a, const ProgressiveMp4File& b) {
  const auto ta = usable_tracks(a), tb = usable_tracks(b);
  if (ta.size() != tb.size()) return false;
  for (size_t i = 0; i < ta.size(); ++i) {
    if (ta[i]->track_id != tb[i]->track_id || ta[i]->video != tb[i]->video || ta[i]->audio != tb[i]->audio ||
        ta[i]->timescale != tb[i]->timescale || ta[i]->stsd != tb[i]->stsd)
      return false;
  }
  return true;
}

// One file's clock: file-relative seconds of a decode time, and the reference track.
struct FileClock {
  const ProgressiveMp4File* f = nullptr;
  const Fmp4Track* ref = nullptr;
  double origin = 0;  // the first fragment's start_seconds

  explicit FileClock(const ProgressiveMp4File& file) : f(&file) {
    const auto tracks = usable_tracks(file);
    for (const Fmp4Track* t : tracks) {
      if (!ref && t->video) ref = t;
    }
    if (!ref && !tracks.empty()) ref = tracks.front();
    if (!file.fragments.empty()) origin = file.fragments.front().start_seconds;
  }
  double rel(uint64_t dts, uint32_t timescale) const { return static_cast<double>(dts) / timescale - origin; }
  double unix(double rel_seconds) const { return f->start + rel_seconds; }
  bool sync(const Fmp4SampleEntry& s) const { return !ref->video || !(s.flags & kNonSyncSample); }

  // Calls fn(rel, sample) for each reference sample in order; fn returns false to stop.
  template <class Fn>
  void each_ref(Fn fn) const {
    if (!ref) return;
    for (const Fmp4Fragment& frag : f->fragments) {
      for (const Fmp4TrackRun& run : frag.tracks) {
        if (run.track_id != ref->track_id) continue;
        uint64_t dts = run.base_decode_time;
        for (const Fmp4SampleEntry& s : run.sample_list) {
          if (!fn(rel(dts, ref->timescale), s)) return;
          dts += s.duration;
        }
      }
    }
  }
  double end_rel() const {
    double end = -kNever;
    each_ref([&](double r, const Fmp4SampleEntry& s) {
      end = std::max(end, r + static_cast<double>(s.duration) / ref->timescale);
      return true;
    });
    return end;
  }
};

struct StartPoint {
  size_t file = 0;
  double rel = 0;
};

// The last reference sync sample at or before `from` in the file that covers it, else the first
// one after it.
std::optional<StartPoint> find_start(const std::vector<ProgressiveMp4File>& files,
                                     std::optional<double> from) {
  for (size_t k = 0; k < files.size(); ++k) {
    const FileClock c(files[k]);
    if (!c.ref) continue;
    if (from && c.unix(c.end_rel()) <= *from + kEpsilon) continue;  // wholly before
    std::optional<double> found;
    c.each_ref([&](double r, const Fmp4SampleEntry& s) {
      if (!c.sync(s)) return true;
      if (!found || !from || c.unix(r) <= *from + kEpsilon) found = r;
      return from && c.unix(r) <= *from + kEpsilon;  // past `from` (or no `from`): stop
    });
    if (found) return StartPoint{k, *found};
  }
  return std::nullopt;
}

// The files of the cut and the file-relative end in the last one.
struct Span {
  size_t first = 0, last = 0;
  double end_rel = kNever;
  Mp4CutEnd end = Mp4CutEnd::Recorded;
};

Span find_end(const std::vector<ProgressiveMp4File>& files, const StartPoint& start, std::optional<double> to,
              double max_gap) {
  Span span{start.file, start.file, kNever, Mp4CutEnd::Recorded};
  double prev_end = 0;
  for (size_t k = start.file; k < files.size(); ++k) {
    const FileClock c(files[k]);
    if (k > start.file) {
      if (!same_tracks(files[start.file], files[k])) {
        span.end = Mp4CutEnd::ConfigChange;
        return span;
      }
      if (files[k].start > prev_end + max_gap) {
        span.end = Mp4CutEnd::Gap;
        return span;
      }
    }
    span.last = k;
    if (!c.ref) continue;
    std::optional<double> stop;
    if (to) {
      c.each_ref([&](double r, const Fmp4SampleEntry& s) {
        if ((k > start.file || r > start.rel + kEpsilon) && c.sync(s) && c.unix(r) >= *to - kEpsilon)
          stop = r;
        return !stop;
      });
    }
    if (stop) {
      span.end_rel = *stop;
      span.end = Mp4CutEnd::Window;
      return span;
    }
    prev_end = c.unix(c.end_rel());
  }
  return span;
}

// The cut being built: per track its samples and where its output timeline stands.
struct Builder {
  std::vector<Mp4CutTrack> tracks;
  std::vector<double> out_end;  // per track, movie seconds where its next sample goes
  std::vector<bool> started;
  std::vector<Mp4CutChunk> chunks;
  std::vector<Mp4ByteRun> runs;
  uint64_t payload = 0;

  // The first sample of track i in a file goes at movie time `at`: an empty edit for the
  // track's very first, else the previous file's last sample is stretched to reach it.
  void place(size_t i, double at) {
    Mp4CutTrack& t = tracks[i];
    const double ts = t.track->timescale;
    if (!started[i]) {
      started[i] = true;
      t.empty_edit_ms = static_cast<uint64_t>(std::llround(std::max(0.0, at) * 1000));
      out_end[i] = static_cast<double>(t.empty_edit_ms) / 1000;
      return;
    }
    Fmp4SampleEntry& last = t.samples.back();
    const double ticks = std::round(static_cast<double>(last.duration) + (at - out_end[i]) * ts);
    const uint32_t d = static_cast<uint32_t>(std::clamp(ticks, 1.0, double(UINT32_MAX)));
    out_end[i] += (static_cast<double>(d) - last.duration) / ts;
    last.duration = d;
  }

  void add(size_t i, uint32_t file, const Fmp4SampleEntry& s) {
    Mp4CutTrack& t = tracks[i];
    const bool joins = !chunks.empty() && chunks.back().track == i && !runs.empty() &&
                       runs.back().file == file && runs.back().offset + runs.back().length == s.offset;
    if (joins) {
      ++chunks.back().count;
    } else {
      chunks.push_back(Mp4CutChunk{i, static_cast<uint32_t>(t.samples.size()), 1, payload});
    }
    if (!runs.empty() && runs.back().file == file && runs.back().offset + runs.back().length == s.offset) {
      runs.back().length += s.size;
    } else {
      runs.push_back(Mp4ByteRun{file, s.offset, s.size});
    }
    payload += s.size;
    t.samples.push_back(s);
    out_end[i] += static_cast<double>(s.duration) / t.track->timescale;
  }
};

// Whether a sample of track `t` at file-relative time r is in [lo, hi): exactly for the reference
// track, within kOtherTrackSlack for the others.
bool in_cut(const FileClock& c, const Mp4CutTrack& t, double r, double lo, double hi) {
  const double slack = t.track->track_id == c.ref->track_id ? kEpsilon : kOtherTrackSlack;
  return r >= lo - slack && r < hi - slack;
}

// Where the file's tracks start in [lo, hi): the first selected sample's file-relative time per
// track (NaN: none).
std::vector<double> first_times(const FileClock& c, const std::vector<Mp4CutTrack>& tracks, double lo,
                                double hi) {
  std::vector<double> first(tracks.size(), std::nan(""));
  for (const Fmp4Fragment& frag : c.f->fragments) {
    for (const Fmp4TrackRun& run : frag.tracks) {
      for (size_t i = 0; i < tracks.size(); ++i) {
        if (tracks[i].track->track_id != run.track_id) continue;
        uint64_t dts = run.base_decode_time;
        for (const Fmp4SampleEntry& s : run.sample_list) {
          const double r = c.rel(dts, tracks[i].track->timescale);
          dts += s.duration;
          if (in_cut(c, tracks[i], r, lo, hi) && !(r >= first[i])) first[i] = r;
        }
      }
    }
  }
  return first;
}

// The samples of one file in [lo, hi), placed so that its tracks keep their offsets.
void take_file(Builder& b, const FileClock& c, double lo, double hi, bool first_file) {
  const std::vector<double> first = first_times(c, b.tracks, lo, hi);
  // The file's zero: its earliest track in the first file; its reference track's start after
  // (the reference track's end so far is where the file goes).
  double zero = kNever, at = 0;
  for (size_t i = 0; i < b.tracks.size(); ++i) {
    if (std::isnan(first[i])) continue;
    if (first_file) zero = std::min(zero, first[i]);
    if (!first_file && b.tracks[i].track->track_id == c.ref->track_id) zero = first[i];
  }
  if (!first_file) {
    for (size_t i = 0; i < b.tracks.size(); ++i) {
      if (b.tracks[i].track->track_id == c.ref->track_id) at = b.out_end[i];
    }
  }
  if (zero == kNever) return;
  for (size_t i = 0; i < b.tracks.size(); ++i) {
    if (!std::isnan(first[i])) b.place(i, at + first[i] - zero);
  }
  for (const Fmp4Fragment& frag : c.f->fragments) {
    for (const Fmp4TrackRun& run : frag.tracks) {
      for (size_t i = 0; i < b.tracks.size(); ++i) {
        if (b.tracks[i].track->track_id != run.track_id) continue;
        uint64_t dts = run.base_decode_time;
        for (const Fmp4SampleEntry& s : run.sample_list) {
          const double r = c.rel(dts, b.tracks[i].track->timescale);
          dts += s.duration;
          if (in_cut(c, b.tracks[i], r, lo, hi)) b.add(i, c.f->id, s);
        }
      }
    }
  }
}

}  // namespace

std::optional<ProgressiveMp4> cut_progressive_mp4(const std::vector<ProgressiveMp4File>& files,
                                                  const ProgressiveMp4Window& window) {
  const std::optional<StartPoint> start = find_start(files, window.from);
  if (!start) return std::nullopt;
  const FileClock first(files[start->file]);
  if (window.to && first.unix(start->rel) >= *window.to - kEpsilon) return std::nullopt;
  const Span span = find_end(files, *start, window.to, window.max_gap);

  Builder b;
  for (const Fmp4Track* t : usable_tracks(files[start->file])) b.tracks.push_back(Mp4CutTrack{t, {}, 0});
  b.out_end.assign(b.tracks.size(), 0);
  b.started.assign(b.tracks.size(), false);
  for (size_t k = span.first; k <= span.last; ++k) {
    const FileClock c(files[k]);
    if (!c.ref) continue;
    const double lo = k == span.first ? start->rel : -kNever;
    const double hi = k == span.last ? span.end_rel : kNever;
    take_file(b, c, lo, hi, k == span.first);
  }

  ProgressiveMp4 out;
  out.start = first.unix(start->rel);
  out.end = span.end;
  // A track without a sample in the cut is left out of the moov.
  std::vector<Mp4CutTrack> kept;
  std::vector<size_t> renumber(b.tracks.size(), 0);
  for (size_t i = 0; i < b.tracks.size(); ++i) {
    if (b.tracks[i].samples.empty()) continue;
    renumber[i] = kept.size();
    if (b.tracks[i].track == first.ref) {
      uint64_t d = 0;
      for (const Fmp4SampleEntry& s : b.tracks[i].samples) d += s.duration;
      out.duration = static_cast<double>(d) / first.ref->timescale;
    }
    out.samples.push_back(static_cast<uint32_t>(b.tracks[i].samples.size()));
    kept.push_back(std::move(b.tracks[i]));
  }
  for (Mp4CutChunk& c : b.chunks) c.track = renumber[c.track];
  out.head = progressive_mp4_head(kept, b.chunks, b.payload);
  out.runs = std::move(b.runs);
  out.size = out.head.size() + b.payload;
  return out;
}

}  // namespace rill::protocol
