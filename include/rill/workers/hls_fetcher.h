#pragma once
// HlsFetcher: on a worker that does not own a stream, gets its HLS playlist and segments from the
// worker that does, over the owner's worker socket (an HLS request, answered with one HlsObject or
// Error frame: a LinkQuery; protocol/worker_link_frame.h).
//
//  - One connection per request: a Unix-socket connect costs microseconds, there is no
//    connection state to keep right across owner restarts, and with the segment cache and the
//    coalescing below a worker sends about one request per segment plus one per playlist poll.
//  - Coalescing: concurrent fetches of one object from one owner share one request; every
//    waiter gets the same answer. So fetches of one playlist never overlap, and each answer was
//    produced after the previous one: a client never sees the media sequence go backwards.
//  - Segments (immutable) are cached by owner pid + stream + sequence for the max-age the owner
//    sends with a 200, bounded in bytes (HlsSegmentCache). Playlists and refusals are not cached.
//  - Timeout: an owner that does not answer within `timeout` gives Unavailable to every waiter.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "rill/workers/hls_segment_cache.h"
#include "rill/workers/ownership_table.h"
#include "rill/core/buffer.h"
#include "rill/core/timer_queue.h"
#include "rill/media/hls_responder.h"
#include "rill/protocol/worker_link_frame.h"
#include "rill/net/worker_core.h"

namespace rill::workers {

struct HlsFetchResult {
  bool answered = false;    // the owner answered: `answer`; else it could not be asked or did not
                            // answer in time: `failure`
  media::HlsAnswer answer;  // the owner's responder's answer (status, cache policy, Retry-After,
                            // body or reason); a request it could not take (Error frame): 404
  std::string failure;
};

struct HlsFetcherOptions {
  std::string runtime_dir;
  std::chrono::milliseconds timeout{2000};
  size_t cache_bytes = 64 * 1024 * 1024;
  uint32_t max_object = 64 * 1024 * 1024;  // the largest hls.max_segment_size of any app
};

class HlsFetcher {
 public:
  using Callback = std::function<void(const HlsFetchResult&)>;
  using Ticket = uint64_t;

  HlsFetcher(net::WorkerCore& ctx, HlsFetcherOptions opts);
  ~HlsFetcher();  // drops pending fetches without calling their callbacks
  HlsFetcher(const HlsFetcher&) = delete;
  HlsFetcher& operator=(const HlsFetcher&) = delete;

  // A cached segment of `key` ("app/name") from this owner, or nullptr.
  const HlsSegmentCache::Entry* cached(const OwnershipTable::Owner& owner, const std::string& key,
                                       const protocol::HlsObjectName& object);
  // Asks the owner for the object. `cb` runs once, later, from the event loop (never inside
  // fetch()), unless cancel(ticket) ran first.
  Ticket fetch(const OwnershipTable::Owner& owner, const std::string& app, const std::string& name,
               const protocol::HlsObjectName& object, Callback cb);
  void cancel(Ticket t);

  const HlsSegmentCache& cache() const { return cache_; }
  // Requests sent to owners, and segment answers served from the cache.
  uint64_t playlist_requests() const { return playlist_requests_; }
  uint64_t segment_requests() const { return segment_requests_; }
  uint64_t cache_hits() const { return cache_hits_; }
  size_t in_flight() const { return fetches_.size(); }

 private:
  struct Fetch;
  void start(Fetch& f, const OwnershipTable::Owner& owner, const std::string& app, const std::string& name);
  void complete(Fetch& f, HlsFetchResult&& r);
  void schedule_sweep();

  net::WorkerCore& ctx_;
  HlsFetcherOptions opts_;
  HlsSegmentCache cache_;
  std::unordered_map<std::string, std::unique_ptr<Fetch>> fetches_;  // by owner pid + key + object
  std::unordered_map<Ticket, std::string> tickets_;                  // -> fetches_ key
  Ticket next_ticket_ = 1;
  uint64_t playlist_requests_ = 0, segment_requests_ = 0, cache_hits_ = 0;
  std::optional<TimerId> sweep_timer_;
};

}  // namespace rill::workers
