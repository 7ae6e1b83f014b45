// Fuzz target: FLV tag classification and the incremental FLV stream reader.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "rill/protocol/audio_multichannel.h"
#include "rill/protocol/flv_file.h"
#include "rill/protocol/flv_tag.h"

using namespace rill::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);

  try {
    VideoTagInfo v = parse_video_tag(in);
    if (v.payload_offset > size) std::abort();
    if (v.is_keyframe && (!v.is_coded_frame || v.is_command_frame)) std::abort();
  } catch (const ProtocolError&) {
  }
  try {
    AudioTagInfo a = parse_audio_tag(in);
    if (a.payload_offset > size) std::abort();
    if (a.is_multichannel_config) {
      const AudioMultichannelConfig m = parse_audio_multichannel_config(in.subspan(a.payload_offset));
      if (m.order == AudioChannelOrder::Custom && m.mapping.size() != m.channel_count) std::abort();
    }
  } catch (const ProtocolError&) {
  }
  bool meta = is_metadata(in);
  try {
    std::vector<uint8_t> stripped = strip_set_data_frame(in);
    if (stripped.size() > size) std::abort();
    if (meta && !is_metadata(stripped)) std::abort();
  } catch (const ProtocolError&) {
  }

  // The whole input as an FLV stream, fed in uneven pieces; also re-serialize each tag read.
  FlvReaderOptions opt;
  opt.max_tag_size = 1 << 16;
  opt.check_previous_tag_size = size % 2 == 0;
  FlvFileReader reader(opt);
  try {
    size_t pos = 0, step = 1;
    while (pos < size) {
      size_t n = std::min(step, size - pos);
      reader.feed(in.subspan(pos, n));
      pos += n;
      step = step * 3 % 17 + 1;
      while (auto tag = reader.next()) {
        rill::BufferRef b = serialize_flv_tag(tag->type, tag->timestamp_ms, tag->body);
        if (b.size() != flv_tag_size(tag->body.size())) std::abort();
      }
    }
  } catch (const ProtocolError&) {
  }
  return 0;
}
