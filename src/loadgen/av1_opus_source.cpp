#include "av1_opus_source.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "ertmp_tags.h"
#include "rill/protocol/av1.h"
#include "rill/protocol/error.h"
#include "rill/protocol/flv_tag.h"
#include "rill/protocol/ivf_file.h"
#include "rill/protocol/ogg_file.h"
#include "rill/protocol/opus.h"

namespace rill::loadgen {

namespace {

using protocol::ExAudioPacketType;
using protocol::ExVideoPacketType;

constexpr uint32_t kIvfAv1 = protocol::make_fourcc('A', 'V', '0', '1');

bool has_sequence_header(std::span<const uint8_t> tu) {
  try {
    protocol::av1_sequence_header_obu(tu);
    return true;
  } catch (const protocol::ProtocolError&) {
    return false;
  }
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

bool is_ivf_path(const std::string& path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".ivf") == 0;
}

std::vector<SourceTag> av1_tags_from_ivf(std::span<const uint8_t> bytes) {
  const protocol::IvfFile ivf = protocol::parse_ivf(bytes);
  if (ivf.fourcc != kIvfAv1) throw std::runtime_error("IVF: not AV1 (FourCC AV01 expected)");
  if (ivf.frames.empty()) throw std::runtime_error("IVF: no frame");
  const std::span<const uint8_t> first = ivf.frames.front().data;
  protocol::Av1Config config = protocol::av1_config_from_sequence_header(first);
  const std::span<const uint8_t> obu = protocol::av1_sequence_header_obu(first);
  config.config_obus.assign(obu.begin(), obu.end());
  std::vector<SourceTag> tags;
  tags.push_back(ex_video_tag(protocol::kFourccAv1, 0, true, ExVideoPacketType::SequenceStart,
                              protocol::write_av1_config(config)));
  const uint64_t pts0 = ivf.frames.front().pts;
  for (const protocol::IvfFrame& f : ivf.frames) {
    const uint64_t ticks = f.pts >= pts0 ? f.pts - pts0 : 0;
    const auto ms = static_cast<uint32_t>(ticks * ivf.timebase_num * 1000 / ivf.timebase_den);
    tags.push_back(ex_video_tag(protocol::kFourccAv1, ms, has_sequence_header(f.data),
                                ExVideoPacketType::CodedFrames, f.data));
  }
  return tags;
}

std::vector<SourceTag> opus_tags_from_ogg(std::span<const uint8_t> bytes) {
  const std::vector<std::vector<uint8_t>> packets = protocol::ogg_packets(bytes);
  if (packets.empty()) throw std::runtime_error("Ogg: no packet");
  protocol::parse_opus_head(packets.front());  // RFC 7845 §3: the ID header first, then OpusTags
  std::vector<SourceTag> tags;
  tags.push_back(ex_audio_tag(protocol::kFourccOpus, 0, ExAudioPacketType::SequenceStart, packets.front()));
  uint64_t samples = 0;
  for (size_t i = 2; i < packets.size(); ++i) {
    const auto ms = static_cast<uint32_t>(samples * 1000 / protocol::kOpusTimescale);
    tags.push_back(ex_audio_tag(protocol::kFourccOpus, ms, ExAudioPacketType::CodedFrames, packets[i]));
    samples += protocol::opus_packet_samples(packets[i]);
  }
  return tags;
}

std::shared_ptr<const FlvSource> load_av1_opus(const std::string& ivf_path, const std::string& ogg_path) {
  std::vector<SourceTag> tags;
  try {
    tags = av1_tags_from_ivf(read_file(ivf_path));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(ivf_path + ": " + e.what());
  }
  if (!ogg_path.empty()) {
    try {
      std::vector<SourceTag> audio = opus_tags_from_ogg(read_file(ogg_path));
      tags.insert(tags.end(), std::make_move_iterator(audio.begin()), std::make_move_iterator(audio.end()));
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(ogg_path + ": " + e.what());
    }
  }
  // One timeline, in time order; a video and an audio tag of the same time keep video first.
  std::stable_sort(tags.begin(), tags.end(),
                   [](const SourceTag& a, const SourceTag& b) { return a.timestamp < b.timestamp; });
  return FlvSource::from_tags(std::move(tags));
}

}  // namespace rill::loadgen
