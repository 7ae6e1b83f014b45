#include "rill/media/media_frame.h"

#include <string>

#include "rill/protocol/chunk_writer.h"
#include "rill/protocol/flv_file.h"
#include "rill/protocol/http_chunk.h"
#include "rill/protocol/rtmp_message.h"

namespace rill::media {

namespace {
uint32_t csid_for(MediaType t) {
  switch (t) {
    case MediaType::Audio:
      return kRtmpCsidAudio;
    case MediaType::Video:
      return kRtmpCsidVideo;
    case MediaType::Data:
      return kRtmpCsidData;
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

const BufferRef& MediaFrame::flv_tag() const {
  if (!flv_cache_)
    flv_cache_ = protocol::serialize_flv_tag(static_cast<uint8_t>(type), timestamp, payload.span());
  return flv_cache_;
}

const BufferRef& MediaFrame::flv_chunk() const {
  if (!flv_chunk_cache_) {
    const std::string size_line = protocol::http_chunk_size_line(protocol::flv_tag_size(payload.size()));
    flv_chunk_cache_ = protocol::serialize_flv_tag_framed(static_cast<uint8_t>(type), timestamp,
                                                          payload.span(), size_line, "\r\n");
  }
  return flv_chunk_cache_;
}

}  // namespace rill::media
