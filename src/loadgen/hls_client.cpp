#include "hls_client.h"

#include <algorithm>
#include <stdexcept>

namespace rill::loadgen {

HlsClient::HlsClient(ThreadContext& ctx, ClientRecord& rec, const Endpoint& ep, Url url, bool http10)
    : Client(ctx, rec, ep), playlist_url_(std::move(url)), http10_(http10) {
  rec_.kind = ClientRecord::Kind::HlsPlayer;
  rec_.stall_threshold_ns = 0;  // set from the target duration
  current_ = playlist_url_;
  fetch_ = Fetch::Playlist;
}

void HlsClient::request(const Url& url, Fetch what) {
  current_ = url;
  fetch_ = what;
  status_ = 0;
  body_.clear();
  http_.reset();
  if (!open()) {
    start();  // on_connected sends the request
    return;
  }
  std::string r = "GET " + url.path + (http10_ ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n");
  r += "Host: " + url.host_header() + "\r\nUser-Agent: rill-bench\r\nAccept: */*\r\n\r\n";
  send_copy({reinterpret_cast<const uint8_t*>(r.data()), r.size()});
}

void HlsClient::on_connected() {
  if (!rec_.play_ns) {
    rec_.play_ns = now_ns();
    last_poll_ns_ = rec_.play_ns;
  }
  std::string r = "GET " + current_.path + (http10_ ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n");
  r += "Host: " + current_.host_header() + "\r\nUser-Agent: rill-bench\r\nAccept: */*\r\n\r\n";
  send_copy({reinterpret_cast<const uint8_t*>(r.data()), r.size()});
}

void HlsClient::on_data(std::span<const uint8_t> bytes) {
  try {
    while (!bytes.empty() && open()) {
      size_t used = http_.feed(bytes, *this);
      bytes = bytes.subspan(used);
      if (http_.complete() && !bytes.empty()) {
        // Pipelining is not used: bytes after a complete response are a protocol error.
        fail("http_parse");
        return;
      }
    }
  } catch (const std::exception& e) {
    fail("http_parse", e.what());
  }
}

void HlsClient::on_peer_closed() {
  if (fetch_ == Fetch::None || http_.complete()) {
    // Idle keep-alive connection closed by the server: reconnect on the next request.
    close_socket();
    return;
  }
  try {
    http_.on_eof(*this);  // completes a close-delimited body
    return;
  } catch (const std::runtime_error&) {
  }
  fail("eof");
}

void HlsClient::on_head(const HttpHead& head) {
  status_ = head.status;
  reconnect_ = !http_.keep_alive();
  if (status_ != 200) ctx_.error("http_" + std::to_string(status_));
}

void HlsClient::on_body(std::span<const uint8_t> bytes) {
  if (status_ != 200) return;
  int64_t now = now_ns();
  if (fetch_ == Fetch::Playlist) {
    if (body_.size() + bytes.size() > kMaxPlaylist) throw std::runtime_error("playlist over 1 MiB");
    body_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  } else if (fetch_ == Fetch::Segment) {
    if (!rec_.first_video_ns) rec_.first_video_ns = now;
    if (uint64_t bad = ts_.feed(bytes)) {
      for (uint64_t i = 0; i < bad; ++i) ctx_.error("ts_sync");
    }
  }
}

void HlsClient::on_complete() {
  int64_t now = now_ns();
  Fetch done = fetch_;
  fetch_ = Fetch::None;
  if (reconnect_) close_socket();
  if (done == Fetch::Playlist) {
    if (status_ == 200) {
      on_playlist(now);
    }
    if (!open() && (rec_.failed || rec_.dropped)) return;
  } else if (done == Fetch::Segment && status_ == 200) {
    if (!ts_.aligned()) ctx_.error("ts_size");
    ++rec_.segments;
    rec_.on_media(now);
  }
  next_request();
}

void HlsClient::on_playlist(int64_t now) {
  M3u8 m = parse_m3u8(body_);
  if (!m.valid) {
    ctx_.error("hls_bad_playlist");
    return;
  }
  if (m.master) {
    if (m.variants.empty()) {
      ctx_.error("hls_bad_playlist");
      return;
    }
    std::string err;
    auto v = resolve_reference(playlist_url_, m.variants.front(), &err);
    if (!v) {
      fail("hls_bad_uri");
      return;
    }
    playlist_url_ = *v;
    pending_.clear();
    last_poll_ns_ = 0;  // fetch the media playlist at once
    return;
  }
  target_duration_ = m.target_duration > 0 ? m.target_duration : 2;
  // New segments arrive every target duration, seen up to half a target duration late (the poll
  // interval): a longer wait than that plus a second is a stall.
  rec_.stall_threshold_ns = static_cast<int64_t>((target_duration_ * 1.5 + 1.0) * 1e9);
  if (have_playlist_ && m.media_sequence < last_media_sequence_) ctx_.error("hls_seq_backwards");
  have_playlist_ = true;
  last_media_sequence_ = m.media_sequence;
  if (m.segments.empty()) return;
  mark_streaming(now);
  if (!started_) {
    size_t first = m.segments.size() > size_t(kLiveEdgeSegments) && !m.endlist
                       ? m.segments.size() - kLiveEdgeSegments
                       : 0;
    next_sequence_ = m.segments[first].sequence;
    started_ = true;
  }
  if (m.segments.front().sequence > next_sequence_) {
    ctx_.error("hls_skipped_segment");  // fell behind: they left the playlist
    next_sequence_ = m.segments.front().sequence;
  }
  uint64_t queued_up_to = pending_.empty() ? next_sequence_ : pending_.back().first + 1;
  for (const auto& s : m.segments) {
    if (s.sequence < queued_up_to) continue;
    std::string err;
    auto u = resolve_reference(playlist_url_, s.uri, &err);
    if (!u) {
      ctx_.error("hls_bad_uri");
      continue;
    }
    pending_.emplace_back(s.sequence, *u);
    queued_up_to = s.sequence + 1;
  }
}

void HlsClient::next_request() {
  if (rec_.failed || rec_.dropped) return;
  if (!pending_.empty()) {
    auto [seq, url] = pending_.front();
    pending_.pop_front();
    next_sequence_ = seq + 1;
    ts_.reset();
    request(url, Fetch::Segment);
    return;
  }
  // Nothing to fetch: poll the playlist target-duration / 2 after the last poll.
  int64_t now = now_ns();
  int64_t interval = static_cast<int64_t>((target_duration_ > 0 ? target_duration_ / 2 : 0.5) * 1e9);
  int64_t when = last_poll_ns_ ? last_poll_ns_ + interval : now;
  if (!have_playlist_ && last_poll_ns_) when = last_poll_ns_ + kNsPerSec / 2;  // not there yet: retry
  if (when <= now) {
    poll();
  } else if (!poll_scheduled_) {
    poll_scheduled_ = true;
    ctx_.loop.at(when, [this]() {
      poll_scheduled_ = false;
      if (!ctx_.loop.stopping()) poll();
    });
  }
}

void HlsClient::poll() {
  if (rec_.failed || rec_.dropped || fetch_ != Fetch::None) return;
  last_poll_ns_ = now_ns();
  request(playlist_url_, Fetch::Playlist);
}

}  // namespace rill::loadgen
