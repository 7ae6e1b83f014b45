#include "flv_source.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "rill/protocol/error.h"
#include "rill/protocol/flv_file.h"
#include "rill/protocol/flv_tag.h"

namespace rill::loadgen {

using namespace rill::protocol;

std::shared_ptr<const FlvSource> FlvSource::load(const std::string& path) {
  auto src = from_tags(read_tags(path));
  if (src->media().empty()) throw std::runtime_error(path + ": no audio or video tags");
  return src;
}

std::vector<SourceTag> FlvSource::read_tags(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  FlvFileReader reader;
  std::vector<SourceTag> tags;
  std::vector<uint8_t> chunk(1 << 16);
  try {
    while (in) {
      in.read(reinterpret_cast<char*>(chunk.data()), static_cast<std::streamsize>(chunk.size()));
      auto n = static_cast<size_t>(in.gcount());
      if (n == 0) break;
      reader.feed({chunk.data(), n});
      while (auto t = reader.next()) {
        if (t->type != kFlvTagAudio && t->type != kFlvTagVideo && t->type != kFlvTagScript) continue;
        if (t->body.empty()) continue;
        SourceTag s;
        s.type = t->type;
        s.timestamp = t->timestamp_ms;
        s.body = SharedBuffer::copy_of(std::span<const uint8_t>(t->body));
        tags.push_back(std::move(s));
      }
    }
  } catch (const ProtocolError& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  if (!reader.header_done()) throw std::runtime_error(path + ": not an FLV file");
  return tags;
}

std::shared_ptr<const FlvSource> FlvSource::from_tags(std::vector<SourceTag> tags) {
  auto src = std::shared_ptr<FlvSource>(new FlvSource());
  bool have_meta = false, have_vsh = false, have_ash = false;
  std::vector<SourceTag> media;
  for (auto& t : tags) {
    if (t.type == kFlvTagScript) {
      // Only the first onMetaData goes out (as @setDataFrame); other script tags are dropped.
      if (!have_meta && is_metadata(t.body.span())) {
        have_meta = true;
        src->preamble_.push_back(std::move(t));
      }
      continue;
    }
    bool seq = false;
    try {
      if (t.type == kFlvTagVideo) {
        auto info = parse_video_tag(t.body.span());
        seq = info.is_sequence_header;
        t.keyframe = info.is_keyframe;
        if (seq && have_vsh) continue;  // a repeated config in the file: the preamble has one
        have_vsh |= seq;
      } else {
        auto info = parse_audio_tag(t.body.span());
        seq = info.is_sequence_header;
        if (seq && have_ash) continue;
        have_ash |= seq;
      }
    } catch (const ProtocolError&) {
      // Unknown or short body: sent as is, as plain media.
    }
    if (seq) {
      src->preamble_.push_back(std::move(t));
    } else {
      media.push_back(std::move(t));
    }
  }
  // Preamble timestamps are 0; media timestamps are rebased on the first media tag.
  for (auto& p : src->preamble_) p.timestamp = 0;
  if (!media.empty()) {
    uint32_t base = media.front().timestamp;
    for (auto& m : media) m.timestamp = m.timestamp >= base ? m.timestamp - base : 0;
    // Keep the order of the file but never let a timestamp go backwards.
    for (size_t i = 1; i < media.size(); ++i) media[i].timestamp = std::max(media[i].timestamp, media[i - 1].timestamp);
    // Loop length: the span plus one frame interval (the mean video interval; else audio; else 40 ms).
    uint32_t span = media.back().timestamp;
    uint32_t frame = 0;
    for (uint8_t type : {kFlvTagVideo, kFlvTagAudio}) {
      uint32_t first = 0, last = 0, n = 0;
      for (const auto& m : media) {
        if (m.type != type) continue;
        if (n == 0) first = m.timestamp;
        last = m.timestamp;
        ++n;
      }
      if (n >= 2 && last > first) {
        frame = (last - first) / (n - 1);
        break;
      }
    }
    if (frame == 0) frame = 40;
    src->loop_duration_ms_ = span + frame;
    for (const auto& m : media) src->media_bytes_ += m.body.size();
  }
  src->media_ = std::move(media);
  return src;
}

double FlvSource::bitrate_bps() const {
  if (loop_duration_ms_ == 0) return 0;
  return static_cast<double>(media_bytes_) * 8.0 * 1000.0 / loop_duration_ms_;
}

void FlvCursor::advance() {
  if (++index_ >= src_->media().size()) {
    index_ = 0;
    ++pass_;
  }
}

}  // namespace rill::loadgen
