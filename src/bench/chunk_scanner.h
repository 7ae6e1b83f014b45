#pragma once
// rill-bench: an RTMP chunk stream reader (RTMP spec 1.0, section 5.3) that does not keep media.
//
// protocol::ChunkReader assembles every message into its own buffer, which is what a server needs
// (it forwards them) but not what a load generator holding 5000 players wants: while a keyframe
// arrives, every player would pin a copy of it. This scanner keeps, per chunk stream, only the
// header state and the first kHeadBytes of the message in progress; audio and video payloads are
// counted and dropped, while the payloads of the other (small) messages - commands, control,
// metadata - are kept whole, up to kMaxKeptBody, so the session can parse them.
//
// Header semantics follow protocol::ChunkReader: fmt 1/2 deltas accumulate, a fmt 3 header that
// starts a message reuses the previous delta, and an extended timestamp is expected on fmt 3
// chunks when the stream's last fmt 0/1/2 header carried one (what Rill, nginx-rtmp, ffmpeg and
// librtmp send). Set Chunk Size is applied by the scanner; Abort drops the message in progress.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rill/protocol/error.h"

namespace rill::bench {

struct ScannedMessage {
  uint8_t type_id = 0;
  uint32_t stream_id = 0;
  uint32_t timestamp = 0;
  uint32_t csid = 0;
  uint32_t length = 0;
  std::span<const uint8_t> head;  // the first min(length, kHeadBytes) payload bytes
  std::span<const uint8_t> body;  // the whole payload when kept (not audio/video), else empty
};

class ChunkScanner {
 public:
  static constexpr size_t kHeadBytes = 16;
  static constexpr uint32_t kMaxKeptBody = 1 << 20;
  static constexpr uint32_t kMaxChunkSize = 0xFFFFFF;
  static constexpr size_t kMaxChunkStreams = 64;

  class Sink {
   public:
    virtual void on_message(const ScannedMessage& m) = 0;

   protected:
    ~Sink() = default;
  };

  static bool keeps_body(uint8_t type_id) { return type_id != 8 && type_id != 9; }

  // Consumes all of `in`, calling sink.on_message for each completed message. Throws
  // protocol::ProtocolError on malformed input (then the scanner is unusable).
  void feed(std::span<const uint8_t> in, Sink& sink);

  uint32_t chunk_size() const { return chunk_size_; }
  uint64_t bytes_received() const { return bytes_; }

 private:
  struct Stream {
    uint32_t csid = 0;
    uint32_t timestamp = 0;
    uint32_t ts_field = 0;
    uint32_t length = 0;
    uint32_t stream_id = 0;
    uint32_t done = 0;        // payload bytes of the message in progress received so far
    uint8_t type_id = 0;
    bool has_header = false;
    bool extended = false;
    bool in_progress = false;
    uint8_t head_len = 0;
    uint8_t head[kHeadBytes] = {};
    std::vector<uint8_t> body;  // kept payloads only
  };

  Stream* find(uint32_t csid);
  Stream& find_or_create(uint32_t csid, uint8_t fmt);
  void on_header();
  void on_payload(const uint8_t* p, size_t n);
  void deliver(Stream& s, Sink& sink);

  uint32_t chunk_size_ = 128;
  uint64_t bytes_ = 0;
  std::vector<Stream> streams_;
  size_t cur_ = 0;
  uint8_t hdr_[18] = {};
  uint8_t hdr_len_ = 0;
  uint8_t hdr_need_ = 1;
  uint8_t hdr_stage_ = 0;
  bool in_payload_ = false;
  uint32_t chunk_left_ = 0;
};

}  // namespace rill::bench
