#pragma once
// RTMP chunk stream reader (RTMP spec 1.0, section 5.3): turns the bytes that follow the handshake
// into complete messages.
//
// Delivery: a callback given at construction, called synchronously from feed() once per completed
// message, in completion order. The payload is a SharedBuffer allocated once with
// capacity == message length and filled in place, so it can be shared downstream zero-copy.
// The callback must not call feed() nor destroy the reader; a session that wants to pause
// processing (e.g. while an on_publish hook runs) queues the messages itself. If the callback
// throws, the exception propagates out of feed() and the reader must be discarded.
//
// Errors: malformed or over-limit input throws ProtocolError; the reader is then unusable and the
// connection should be closed.
//
// Header-only mode (load generators such as rill-bench, which hold thousands of players): audio and
// video payloads keep only their first `keep_prefix` bytes (enough to classify a frame) and the
// rest of their chunks is skipped; the handler gets the full message header plus the announced
// length. Every other message type (protocol control 1-6, commands and data 15-20, aggregates) is
// still delivered whole, since the client must parse it. Chunk parsing, limits and errors are the
// same in both modes; only the payload copy differs.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "rill/protocol/rtmp_message.h"

namespace rill::protocol {

struct ChunkReaderLimits {
  // Largest chunk size a peer may announce with Set Chunk Size (5.4.1 allows up to 0x7FFFFFFF;
  // anything beyond the largest message length is pointless).
  uint32_t max_chunk_size = 0xFFFFFF;
  // Largest message length a chunk header may announce.
  uint32_t max_message_size = 16 * 1024 * 1024;
  // Chunk streams with a partially received message at the same time.
  size_t max_partial_messages = 64;
  // Sum of the payload bytes allocated for all partially received messages, i.e. their lengths
  // (in header-only mode, what is kept of them): bounds the memory a peer can pin.
  size_t max_partial_bytes = 64 * 1024 * 1024;
  // Distinct chunk stream ids remembered (each keeps its last header for fmt 1/2/3).
  size_t max_chunk_streams = 256;
};

class ChunkReader {
 public:
  using Handler = std::function<void(RtmpMessage&&)>;
  // Header-only mode: `length` is the message length announced by the chunk header; the payload
  // holds min(length, keep_prefix) bytes for audio/video, all `length` bytes for other types (so a
  // keep_prefix of UINT32_MAX keeps everything, with the length-reporting handler).
  using HeaderHandler = std::function<void(RtmpMessage&&, uint32_t length)>;

  explicit ChunkReader(Handler on_message, ChunkReaderLimits limits = {});
  ChunkReader(HeaderHandler on_message, uint32_t keep_prefix, ChunkReaderLimits limits = {});

  // Payload buffers from `pool` from now on (null: the heap); the messages then stay on the pool's
  // thread. A server's ingest: its payloads become the frames of the stream.
  void use_pool(BufferPool* pool) { pool_ = pool; }

  // Message types whose payload header-only mode truncates: audio (8) and video (9).
  static bool truncatable(uint8_t type_id) {
    return type_id == msg_type::Audio || type_id == msg_type::Video;
  }

  // Consumes all of `bytes` (partial headers and payloads are kept internally) and returns
  // bytes.size(). Delivers completed messages to the handler. Set Chunk Size (type 1) and Abort
  // (type 2) are applied by the reader itself before they are delivered too.
  size_t feed(std::span<const uint8_t> bytes);

  // Incoming chunk size (128 until the peer sends Set Chunk Size; spec 5.4.1).
  uint32_t chunk_size() const { return chunk_size_; }
  // Total bytes fed so far (chunk stream only; the session adds the handshake if it wants
  // acknowledgements to count it). Used for Acknowledgement (5.4.3) against the peer's window.
  uint64_t bytes_received() const { return bytes_received_; }
  // Messages currently partially received.
  size_t partial_messages() const { return partial_messages_; }
  // Bytes allocated for them (in header-only mode, what is kept rather than what is announced).
  size_t partial_bytes() const { return partial_bytes_; }
  const ChunkReaderLimits& limits() const { return limits_; }

 private:
  // Per chunk stream id (created by its first fmt 0/1 header): the last header seen (for fmt 1/2/3
  // compression, spec 5.3.1.2) and the message being assembled.
  struct Stream {
    uint32_t csid = 0;
    uint32_t timestamp = 0;  // absolute timestamp of the current/last message
    uint32_t ts_field = 0;   // last timestamp / delta value (fmt 0: timestamp; 1/2: delta)
    uint32_t length = 0;
    uint32_t stream_id = 0;
    uint32_t received = 0;  // payload bytes of the message in progress received so far
    uint8_t type_id = 0;
    bool extended = false;  // the last fmt 0/1/2 header used an extended timestamp
    BufferRef payload;      // non-null while a message is in progress; capacity = bytes kept
  };

  size_t step(const uint8_t* p, size_t n);
  size_t step_header(const uint8_t* p, size_t n);
  size_t step_payload(const uint8_t* p, size_t n);
  bool header_complete();  // advances hdr_need_; true when the whole header is in hdr_
  bool extended_timestamp_follows(const uint8_t* h, uint8_t fmt, uint8_t basic);
  // A whole chunk header of `size` bytes at `h` (hdr_, or the input when it held all of it).
  void on_header(const uint8_t* h, size_t size);
  // ext: the extended timestamp field when the header carried one, else nullptr.
  void continue_message(Stream& s, uint8_t fmt, const uint8_t* mh, const uint8_t* ext);
  void start_message(Stream& s, uint8_t fmt, const uint8_t* mh, const uint8_t* ext);
  void start_payload(Stream& s);
  void end_chunk();
  void append(Stream& s, const uint8_t* p, size_t n);
  uint32_t kept_size(const Stream& s) const;
  void deliver(Stream& s);
  void drop_partial(Stream& s);
  Stream* find(uint32_t csid);
  Stream& find_or_create(uint32_t csid, uint8_t fmt);
  void drain_replay();

  Handler handler_;
  HeaderHandler header_handler_;  // set in header-only mode (then handler_ is empty)
  uint32_t keep_prefix_ = 0;      // header-only mode: audio/video payload bytes kept
  ChunkReaderLimits limits_;
  BufferPool* pool_ = nullptr;
  uint32_t chunk_size_ = 128;  // 5.4.1: "The default maximum chunk size is 128 bytes"
  uint64_t bytes_received_ = 0;
  size_t partial_messages_ = 0;
  size_t partial_bytes_ = 0;

  std::vector<Stream> streams_;
  // Chunk streams 2..63 (the one-byte basic header's: an encoder's commands, audio and video)
  // by id: their index in streams_ plus one, 0 for none (or past 254). A chunk's stream is found
  // with one load rather than a search (audio and video chunks alternate); the rest are searched.
  std::array<uint8_t, 64> small_ids_{};

  // Chunk header being assembled: basic header (1-3) + message header (0-11) + ext ts (0-4).
  uint8_t hdr_[18] = {};
  uint8_t hdr_len_ = 0;
  uint8_t hdr_need_ = 1;
  uint8_t hdr_stage_ = 0;  // 0: need basic byte 0; 1: need basic + message header; 2: + ext ts
  bool in_payload_ = false;
  size_t cur_ = 0;           // index into streams_ of the chunk being read
  uint32_t chunk_left_ = 0;  // payload bytes left in the current chunk

  // Bytes taken as a possible extended timestamp that turned out to belong to the next chunk
  // (see on_header); replayed before further input. At most 3.
  uint8_t replay_[4] = {};
  uint8_t replay_len_ = 0;
};

}  // namespace rill::protocol
