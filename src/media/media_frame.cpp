#include "rill/media/media_frame.h"

#include <cstdio>
#include <string_view>

#include "rill/protocol/chunk_writer.h"
#include "rill/protocol/flv_file.h"
#include "rill/protocol/rtmp_message.h"

namespace rill::media {

namespace {
uint32_t csid_for(MediaType t) {
  switch (t) {
    case MediaType::Audio: return kRtmpCsidAudio;
    case MediaType::Video: return kRtmpCsidVideo;
    case MediaType::Data: return kRtmpCsidData;
  }
  return kRtmpCsidData;
}
}  // namespace

const BufferRef& MediaFrame::rtmp_chunks(uint32_t chunk_size) const {
  if (!rtmp_cache_ || rtmp_cache_chunk_size_ != chunk_size) {
    protocol::RtmpMessage m;
    m.type_id = static_cast<uint8_t>(type);
    m.stream_id = kRtmpPlayStreamId;
    m.timestamp = timestamp;
    m.csid = csid_for(type);
    m.payload = payload;
    rtmp_cache_ = protocol::ChunkWriter::serialize(m, chunk_size);
    rtmp_cache_chunk_size_ = chunk_size;
  }
  return rtmp_cache_;
}

const BufferRef& MediaFrame::flv_tag(FlvFraming framing) const {
  BufferRef& cache = flv_cache_[framing == FlvFraming::Chunked ? 1 : 0];
  if (!cache) {
    const uint8_t tag_type = static_cast<uint8_t>(type);
    if (framing == FlvFraming::Chunked) {
      char prefix[24];
      const int n = std::snprintf(prefix, sizeof prefix, "%zx\r\n", protocol::flv_tag_size(payload.size()));
      cache = protocol::serialize_flv_tag_framed(tag_type, timestamp, payload.span(),
                                                 std::string_view(prefix, static_cast<size_t>(n)), "\r\n");
    } else {
      cache = protocol::serialize_flv_tag(tag_type, timestamp, payload.span());
    }
  }
  return cache;
}

}  // namespace rill::media
