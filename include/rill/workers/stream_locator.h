#pragma once
// StreamLocator: where a stream lives, asked in one place. Sessions call it instead of touching
// the StreamRegistry for publish and play:
//  - claim_for_publish: claims the stream in the cross-process OwnershipTable (a second publisher
//    of the same name on ANY worker is refused), then attaches the publisher to the local stream;
//  - released: the publisher left; the table entry is freed;
//  - find_for_play: the local stream if this worker owns it; else a local stream fed by a worker link
//    link to the owning worker (one link per stream, shared by all local players); else, with
//    no publisher anywhere, the local stream if one exists (players waiting) or nullptr.
//
// With one worker the locator still claims in the table (cheap) but opens a link only after a
// reload, to the retiring worker of the previous generation.
#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rill/workers/ownership_table.h"
#include "rill/workers/worker_link.h"
#include "rill/media/stream.h"
#include "rill/net/worker_core.h"

namespace rill::workers {

struct LocatorOptions {
  OwnershipTable* table = nullptr;  // null: no table (unit tests); everything stays local
  int slot = 0;
  pid_t pid = 0;
  uint32_t workers = 1;
  int generation = 0;
  std::string runtime_dir;
  std::chrono::milliseconds idle_grace{5000};
  std::chrono::milliseconds poll_interval{200};
};

enum class ClaimResult { Ok, Busy, Invalid };

struct PublishClaim {
  ClaimResult result = ClaimResult::Busy;
  media::Stream* stream = nullptr;  // Ok: the local stream, publisher attached
  std::string reason;               // Busy/Invalid: for the log and the client
};

class StreamLocator {
 public:
  StreamLocator(net::WorkerCore& ctx, LocatorOptions opts);
  ~StreamLocator();
  StreamLocator(const StreamLocator&) = delete;
  StreamLocator& operator=(const StreamLocator&) = delete;

  PublishClaim claim_for_publish(const media::StreamKey& key, const config::AppConfig& cfg,
                                 const void* publisher,
                                 media::PublishOrigin origin = media::PublishOrigin::Ingest);
  // After the publisher detached from the stream (the stream may be gone already).
  void released(const media::StreamKey& key);
  media::Stream* find_for_play(const media::StreamKey& key, const config::AppConfig& cfg);

  // This worker holds the table entry of key (and its publisher is local).
  bool owns(const std::string& key) const { return owned_.count(key) != 0; }
  const WorkerLink* link(const std::string& key) const;
  // The live owner of key when it is another worker (and streams are shared across workers), else nothing. HLS
  // requests for such a stream are answered from the owner's store (workers/hls_fetcher.h).
  std::optional<OwnershipTable::Owner> remote_owner(const std::string& key) const;
  // The worker whose HlsStore answers HLS requests for key when it is another one: the live
  // owner, or, with no publisher anywhere, the worker that made the stream's HLS and still keeps
  // its ended playlist (the grace after the publisher left; HlsSequenceMemo's holder). Nothing:
  // this worker's own store answers (404 when it has nothing).
  std::optional<OwnershipTable::Owner> hls_source(const std::string& key) const;
  template <typename F>
  void for_each_link(F&& f) const {
    for (const auto& [k, l] : links_) f(*l);
  }
  size_t link_count() const { return links_.size(); }

  // Closes every link (worker stopping).
  void close_all();

  const LocatorOptions& options() const { return opts_; }
  // Several workers, or a later generation (after a reload even a single worker must reach the
  // streams its retiring predecessor still carries).
  bool shares_streams() const { return opts_.table != nullptr && (opts_.workers > 1 || opts_.generation > 0); }

 private:
  WorkerLink& make_link(const media::StreamKey& key, const config::AppConfig& cfg);
  void retire(WorkerLink& link, const char* why);
  void watch_for_republish(const media::StreamKey& key);

  net::WorkerCore& ctx_;
  LocatorOptions opts_;
  std::set<std::string> owned_;
  std::map<std::string, std::unique_ptr<WorkerLink>> links_;
  std::vector<std::unique_ptr<WorkerLink>> retired_;
  std::optional<TimerId> reap_timer_;
};

}  // namespace rill::workers
