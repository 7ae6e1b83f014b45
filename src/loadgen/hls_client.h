#pragma once
// rill-bench: one HLS player (RFC 8216 section 6.3, the basics). It fetches the playlist (a
// master playlist: its first variant), starts three segments from the live edge, fetches new
// segments in order, and re-polls the playlist every target-duration / 2. Requests go one at a
// time over one keep-alive connection, reconnecting when the server closes it.
//
// Checks: HTTP status (404 and others counted as errors), MPEG-TS framing of every segment
// (0x47 every 188 bytes, whole packets), media sequence never going backwards, and no segment
// skipped because the player fell behind.
#include <cstdint>
#include <deque>
#include <span>
#include <string>

#include "client.h"
#include "http_response.h"
#include "m3u8.h"
#include "url.h"

namespace rill::loadgen {

class HlsClient final : public Client, private HttpResponseParser::Sink {
 public:
  HlsClient(ThreadContext& ctx, ClientRecord& rec, const Endpoint& ep, Url url, bool http10);

  static constexpr size_t kMaxPlaylist = 1 << 20;
  static constexpr int kLiveEdgeSegments = 3;

 private:
  enum class Fetch { None, Playlist, Segment };

  void on_connected() override;
  void on_data(std::span<const uint8_t> bytes) override;
  void on_peer_closed() override;

  void on_head(const HttpHead& head) override;
  void on_body(std::span<const uint8_t> bytes) override;
  void on_complete() override;

  void request(const Url& url, Fetch what);
  void next_request();  // the next segment, else schedule the playlist poll
  void on_playlist(int64_t now);
  void poll();

  Url playlist_url_;
  bool http10_;
  HttpResponseParser http_;
  Fetch fetch_ = Fetch::None;
  Url current_;
  int status_ = 0;
  std::string body_;  // playlist being fetched
  TsChecker ts_;
  bool reconnect_ = false;  // the server closes after this response

  double target_duration_ = 0;
  bool have_playlist_ = false;
  uint64_t last_media_sequence_ = 0;
  uint64_t next_sequence_ = 0;  // next segment to fetch
  bool started_ = false;        // next_sequence_ is valid
  std::deque<std::pair<uint64_t, Url>> pending_;  // segments to fetch, in order
  int64_t last_poll_ns_ = 0;
  bool poll_scheduled_ = false;
};

}  // namespace rill::loadgen
