#include "rill/workers/worker_stats.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "rill/workers/hls_fetcher.h"
#include "rill/workers/link_query.h"
#include "rill/workers/stream_locator.h"
#include "rill/workers/worker_details.h"
#include "rill/workers/worker_endpoint.h"
#include "rill/workers/worker_sockets.h"

namespace rill::workers {

namespace {

using nlohmann::json;

// Relay senders: connections from other workers pulling a stream of ours (counted per stream).
json link_senders(net::WorkerCore& ctx, std::map<std::string, int>& per_key) {
  json senders = json::array();
  ctx.sessions->for_each([&](net::Session& s) {
    if (s.protocol() != net::SessionProtocol::WorkerLink) return;
    const net::SessionInfo i = s.describe();
    if (i.stream.empty()) return;  // a STATS or HLS answer
    ++per_key[i.stream];
    senders.push_back({{"key", i.stream},
                       {"frames", i.frames_out},
                       {"bytes", i.bytes_out},
                       {"queued_bytes", i.queued_bytes},
                       {"dropped", i.dropped_frames}});
  });
  return senders;
}

json streams_of(net::WorkerCore& ctx, const StreamLocator* loc,
                const std::map<std::string, int>& senders_per_key) {
  json streams = json::array();
  ctx.streams->for_each([&](media::Stream& s) {
    const std::string key = s.key_text();
    const WorkerLink* link = loc ? loc->link(key) : nullptr;
    const auto it = senders_per_key.find(key);
    const size_t out = it == senders_per_key.end() ? 0 : static_cast<size_t>(it->second);
    const size_t subs = s.subscriber_count();
    streams.push_back({{"key", key},
                       {"publisher", s.has_publisher()},
                       {"owner", loc && loc->owns(key)},
                       {"linked", link != nullptr && link->attached()},
                       {"subscribers", subs},
                       {"players", subs >= out ? subs - out : 0},
                       {"links_out", out},
                       {"link_in", link != nullptr ? 1 : 0},
                       {"frames_in", s.info().frames_in},
                       {"bytes_in", s.info().bytes_in}});
  });
  return streams;
}

json links_of(const StreamLocator* loc) {
  json links = json::array();
  if (!loc) return links;
  loc->for_each_link([&](const WorkerLink& l) {
    links.push_back({{"key", l.key()},
                     {"state", l.state_name()},
                     {"attached", l.attached()},
                     {"owner_slot", l.owner_slot()},
                     {"owner_pid", l.owner_pid()},
                     {"subscribers", l.local_subscribers()},
                     {"connects", l.connects()},
                     {"frames", l.frames_in()},
                     {"bytes", l.bytes_in()}});
  });
  return links;
}

json hls_fetch(const HlsFetcher& f) {
  return {{"playlist_requests", f.playlist_requests()},
          {"segment_requests", f.segment_requests()},
          {"cache_hits", f.cache_hits()},
          {"in_flight", f.in_flight()},
          {"cache_entries", f.cache().size()},
          {"cache_bytes", f.cache().bytes()},
          {"cache_max_bytes", f.cache().max_bytes()}};
}

}  // namespace

// WorkerDetails' own statistics, here with the rest of the STATS answer they complete.
json WorkerDetails::stats() {
  net::WorkerCore& ctx = core_;
  std::map<std::string, int> senders_per_key;
  json senders = link_senders(ctx, senders_per_key);
  const size_t link_connections = ctx.sessions->count(net::SessionProtocol::WorkerLink);
  json connections = json::object();  // live sessions per protocol
  for (size_t p = 0; p < net::kSessionProtocols; ++p) {
    const auto protocol = static_cast<net::SessionProtocol>(p);
    connections[net::session_protocol_name(protocol)] = ctx.sessions->count(protocol);
  }
  json out = {{"slot", ctx.worker_id},
              {"pid", static_cast<int>(::getpid())},
              {"sessions", ctx.sessions->size() - link_connections},
              {"link_connections", link_connections},
              {"connections", connections},
              {"streams", streams_of(ctx, locator_, senders_per_key)},
              {"links", links_of(locator_)},
              {"link_senders", senders}};
  if (fetcher_) out["hls_fetch"] = hls_fetch(*fetcher_);
  add_details(out);
  if (const StreamLocator* loc = locator_) {
    out["generation"] = loc->options().generation;
    out["workers"] = loc->options().workers;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

struct StatsGatherer::Peer {
  int slot = 0;
  bool retiring = false;  // found by its per-pid socket: it may leave at any time
  std::unique_ptr<LinkQuery> query;
  json answer;  // the worker's statistics, once it answered
};

StatsGatherer::StatsGatherer(WorkerDetails& details, Done done, std::chrono::milliseconds timeout,
                             protocol::LinkRequest request, Local local)
    : details_(details),
      ctx_(details.core()),
      done_(std::move(done)),
      timeout_(timeout),
      request_(std::move(request)),
      local_answer_(std::move(local)) {}

StatsGatherer::~StatsGatherer() {
  if (timer_) ctx_.timers->cancel(*timer_);
}

void StatsGatherer::start() {
  local_ = local_answer_ ? local_answer_() : details_.stats();
  if (!local_.contains("slot")) local_["slot"] = ctx_.worker_id;
  if (!local_.contains("pid")) local_["pid"] = static_cast<int>(::getpid());
  const StreamLocator* loc = details_.locator();
  const int workers = loc ? static_cast<int>(loc->options().workers) : 1;
  const std::string dir = loc ? loc->options().runtime_dir : ctx_.config->runtime_dir;
  // This process may be a retiring worker (an API connection opened before a reload): it is
  // skipped by its socket, not by its slot, so that the slot's new worker is asked too.
  const auto own = socket_inode(worker_process_socket_path(dir, ctx_.worker_id, ::getpid()));
  std::set<ino_t> current;
  for (int slot = 0; slot < workers; ++slot) {
    const std::string path = worker_socket_path(dir, slot);
    const auto inode = socket_inode(path);
    if (inode) current.insert(*inode);
    if (own ? inode == own : slot == ctx_.worker_id) continue;
    add_peer(slot, path, false);
  }
  // Retiring workers (an older generation after a reload) answer on their per-pid name only.
  for (const WorkerSocket& w : list_worker_sockets(dir)) {
    if (w.pid == ::getpid() || current.contains(w.inode)) continue;
    add_peer(w.slot, w.path, true);
  }
  pending_ = peers_.size();
  for (auto& p : peers_) p->query->start();
  if (pending_ == 0) {
    timer_ = ctx_.timers->schedule(std::chrono::milliseconds(0), [this] {
      timer_.reset();
      finish();
    });
  }
}

void StatsGatherer::add_peer(int slot, const std::string& path, bool retiring) {
  auto p = std::make_unique<Peer>();
  p->slot = slot;
  p->retiring = retiring;
  Peer& peer = *p;
  p->query = std::make_unique<LinkQuery>(ctx_, path, request_, protocol::LinkReaderLimits{}, timeout_,
                                         [this, &peer](LinkQuery::Result&& r) { answered(peer, std::move(r)); });
  peers_.push_back(std::move(p));
}

void StatsGatherer::answered(Peer& p, LinkQuery::Result&& r) {
  std::string error = std::move(r.failure);
  if (const auto* stats = r.answer ? std::get_if<protocol::LinkStats>(&*r.answer) : nullptr) {
    p.answer = json::parse(stats->json, nullptr, /*allow_exceptions=*/false);
    if (!p.answer.is_object()) error = "answer is not JSON";
    else if (!p.answer.contains("slot")) p.answer["slot"] = p.slot;
  } else if (const auto* refused = r.answer ? std::get_if<protocol::LinkError>(&*r.answer) : nullptr) {
    error = "refused: " + refused->reason;
  } else if (r.answer) {
    error = "not a statistics answer";
  }
  // A retiring worker that left meanwhile is no error: what it carried has gone with it.
  if (!error.empty() && !(p.retiring && !r.answer)) {
    errors_.push_back("worker " + std::to_string(p.slot) + ": " + error);
  }
  if (--pending_ == 0) finish();  // may destroy *this
}

void StatsGatherer::finish() {
  json workers = json::array();
  workers.push_back(local_);
  for (const auto& p : peers_) {
    if (p->answer.is_object()) workers.push_back(std::move(p->answer));
  }
  // By slot, then the older generation (retiring) before the newer one.
  const auto order = [](const json& w) {
    return std::tuple(w.value("slot", 0), w.value("generation", 0), w.value("pid", 0));
  };
  std::sort(workers.begin(), workers.end(), [&](const json& a, const json& b) { return order(a) < order(b); });
  json all = {{"workers", workers}, {"errors", errors_}};
  Done done = std::move(done_);
  done(std::move(all));  // may destroy *this
}

}  // namespace rill::workers
