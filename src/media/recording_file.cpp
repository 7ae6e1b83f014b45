// The two containers of a recording (recording_file.h): FLV and fragmented MP4.
#include "rill/media/recording_file.h"

#include <spdlog/logger.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <span>
#include <string_view>

#include "rill/protocol/amf0.h"
#include "rill/protocol/error.h"
#include "rill/protocol/flv_file_writer.h"
#include "rill/protocol/flv_tag.h"
#include "rill/protocol/fmp4_muxer.h"

namespace rill::media {

namespace {

bool same_bytes(const FramePtr& a, const MediaFrame& b) {
  if (!a) return false;
  const auto x = a->payload.span(), y = b.payload.span();
  return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin());
}

// The publisher's onMetaData array (an empty one when there is none or it does not parse).
protocol::Amf0Value source_metadata(const FramePtr& f) {
  if (!f) return protocol::Amf0Value::ecma_array();
  try {
    protocol::Amf0Decoder d(f->payload.span());
    d.skip();  // "onMetaData" (Stream::publish already stripped @setDataFrame)
    protocol::Amf0Value v = d.decode();
    if (v.has_properties()) return v;
  } catch (const protocol::ProtocolError&) {
  }
  return protocol::Amf0Value::ecma_array();
}

// Keys of onMetaData that describe one track: left out when the file lacks that track.
bool describes_missing_track(std::string_view key, bool video, bool audio) {
  const bool v = key == "width" || key == "height" || key == "framerate" || key == "videocodecid" ||
                 key == "videodatarate";
  const bool a = key.starts_with("audio") || key == "stereo";
  return (v && !video) || (a && !audio);
}

class FlvRecordingFile final : public RecordingFile {
 public:
  explicit FlvRecordingFile(size_t keyframe_capacity) : capacity_(keyframe_capacity) {}

  bool begin(const RecordingHeaders& h, std::vector<uint8_t>& out, std::string& why) override {
    if (!h.video_track && !h.audio_track) {
      why = "no audio or video track";
      return false;
    }
    protocol::FlvFileWriterOptions o;
    o.has_audio = h.audio_track;
    o.has_video = h.video_track;
    o.keyframe_capacity = capacity_;
    protocol::Amf0Value src = source_metadata(h.metadata);
    for (const protocol::Amf0Property& p : src.properties()) {
      if (!describes_missing_track(p.key, o.has_video, o.has_audio)) o.source_metadata.set(p.key, p.value);
    }
    w_.emplace(std::move(o));
    w_->begin(out);
    // FLV E.4.3.1 / E.4.2.1: the decoder configuration comes before the first frame.
    if (h.video) w_->write_tag(protocol::kFlvTagVideo, 0, h.video->payload.span(), false, out);
    if (h.audio) w_->write_tag(protocol::kFlvTagAudio, 0, h.audio->payload.span(), false, out);
    videos_ = h.video;
    audios_ = h.audio;
    commit();
    return true;
  }
  bool header(const MediaFrame& f, uint32_t ts, std::vector<uint8_t>& out) override {
    FramePtr& last = f.type == MediaType::Video ? videos_ : audios_;
    if (same_bytes(last, f)) return true;  // a repeat: nothing new for a decoder
    w_->write_tag(static_cast<uint8_t>(f.type), ts, f.payload.span(), false, out);
    last = std::make_shared<const MediaFrame>(f);
    return true;
  }
  bool add(const MediaFrame& f, uint32_t ts, std::vector<uint8_t>& out) override {
    try {
      w_->write_tag(static_cast<uint8_t>(f.type), ts, f.payload.span(),
                    f.type == MediaType::Video && f.keyframe, out);
    } catch (const protocol::ProtocolError&) {
      return false;
    }
    return true;
  }
  void cut(uint32_t, record::AppendBytes&) override {}
  size_t held_bytes() const override { return 0; }
  void commit() override { mark_ = w_->mark(); }
  void rollback() override { w_->rollback(mark_); }
  std::optional<std::pair<uint64_t, std::vector<uint8_t>>> final_rewrite() const override {
    return std::make_pair(protocol::FlvFileWriter::kMetadataOffset, w_->final_metadata());
  }
  uint32_t duration_ms() const override { return w_ ? w_->duration_ms() : 0; }

 private:
  size_t capacity_;
  std::optional<protocol::FlvFileWriter> w_;
  protocol::FlvFileWriter::Mark mark_;
  FramePtr videos_, audios_;  // the headers the file holds
};

class Fmp4RecordingFile final : public RecordingFile {
 public:
  Fmp4RecordingFile(core::StreamLog log, std::string label)
      : log_(std::move(log)), label_(std::move(label)) {}

  bool begin(const RecordingHeaders& h, std::vector<uint8_t>& out, std::string& why) override {
    protocol::Fmp4Tracks t;
    if (h.video && (h.video->codec == FrameCodec::H264 || h.video->codec == FrameCodec::HEVC)) {
      t.has_video = true;
      t.video_codec =
          h.video->codec == FrameCodec::HEVC ? protocol::Fmp4VideoCodec::Hevc : protocol::Fmp4VideoCodec::Avc;
      const auto d = h.video->data();
      t.video_record.assign(d.begin(), d.end());
    }
    if (h.audio && h.audio->codec == FrameCodec::AAC) {
      t.has_audio = true;
      const auto d = h.audio->data();
      t.audio_asc.assign(d.begin(), d.end());
    }
    if (!t.has_video && !t.has_audio) {
      why =
          "fMP4 records H.264 / HEVC video and AAC audio; this stream has neither (format: flv takes any "
          "codec)";
      return false;
    }
    if (h.video_track && !t.has_video)
      log_.warn("{}: video codec not carried in fMP4: recording audio only", label_);
    if (h.audio_track && !t.has_audio)
      log_.warn("{}: audio codec not carried in fMP4: recording video only", label_);
    try {
      mux_.emplace(std::move(t));
    } catch (const protocol::ProtocolError& e) {
      why = std::string("codec configuration refused by the fMP4 muxer: ") + e.what();
      return false;
    }
    const auto& init = mux_->init_segment();
    out.insert(out.end(), init.begin(), init.end());
    video_ = h.video;
    audio_ = h.audio;
    return true;
  }
  bool header(const MediaFrame& f, uint32_t, std::vector<uint8_t>&) override {
    const FramePtr& in_moov = f.type == MediaType::Video ? video_ : audio_;
    const bool carried = f.type == MediaType::Video ? mux_->tracks().has_video : mux_->tracks().has_audio;
    return !carried || same_bytes(in_moov, f);  // a new configuration needs a new moov
  }
  bool add(const MediaFrame& f, uint32_t ts, std::vector<uint8_t>&) override {
    const bool video = f.type == MediaType::Video;
    if (!video && f.codec != FrameCodec::AAC) return false;
    if (video && f.codec != FrameCodec::H264 && f.codec != FrameCodec::HEVC) return false;
    try {
      // Borrowed: the frame's bytes go once, straight into the mdat that cut() writes.
      if (!mux_->add_borrowed(
              protocol::Fmp4Sample{video, ts, video ? f.composition_time : 0, f.keyframe, f.data()}))
        return false;
    } catch (const protocol::ProtocolError&) {
      return false;
    }
    const uint32_t prev = last_[video];
    if (seen_[video] && ts > prev) delta_[video] = ts - prev;
    last_[video] = ts;
    seen_[video] = true;
    held_.push_back(f.payload);
    return true;
  }
  void cut(uint32_t end_ts, record::AppendBytes& out) override {
    // The samples go from their payloads straight into the file (the writer thread's writev):
    // their references go with them, to be released once written.
    const size_t before = out.borrowed.size();
    mux_->flush(end_ts, out.head, out.borrowed);
    for (size_t i = before; i < out.borrowed.size(); ++i) out.borrowed_bytes += out.borrowed[i].size();
    if (out.borrowed.size() == before) return held_.clear();
    const size_t n = held_.size();
    if (out.keep.empty()) {
      out.keep.swap(held_);
    } else {
      out.keep.insert(out.keep.end(), std::make_move_iterator(held_.begin()),
                      std::make_move_iterator(held_.end()));
      held_.clear();
    }
    held_.reserve(n);  // about as many in the next fragment
  }
  size_t held_bytes() const override { return mux_ ? mux_->pending_bytes() : 0; }
  uint32_t duration_ms() const override {
    uint32_t d = 0;
    for (int t = 0; t < 2; ++t) {
      if (seen_[t]) d = std::max(d, last_[t] + delta_[t]);
    }
    return d;
  }

 private:
  core::StreamLog log_;
  std::string label_;
  std::optional<protocol::Fmp4Muxer> mux_;
  FramePtr video_, audio_;       // the configurations in the moov
  std::vector<BufferRef> held_;  // the payloads of the samples the muxer borrowed, until the next cut
  bool seen_[2] = {false, false};
  uint32_t last_[2] = {0, 0}, delta_[2] = {0, 0};  // [0] audio, [1] video
};

}  // namespace

std::unique_ptr<RecordingFile> make_recording_file(config::RecordFormat format, core::StreamLog log,
                                                   std::string label, size_t keyframe_capacity) {
  if (format == config::RecordFormat::Flv) return std::make_unique<FlvRecordingFile>(keyframe_capacity);
  return std::make_unique<Fmp4RecordingFile>(log, std::move(label));
}

}  // namespace rill::media
