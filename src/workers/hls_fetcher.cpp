#include "rill/workers/hls_fetcher.h"

#include <vector>

#include "rill/workers/link_query.h"
#include "rill/workers/worker_endpoint.h"

namespace rill::workers {

namespace {
constexpr std::chrono::milliseconds kSweepInterval{5000};
constexpr std::chrono::milliseconds kHeldObjectGrace{60000};

std::string cache_key(pid_t pid, const std::string& key, const protocol::HlsObjectName& object) {
  return std::to_string(pid) + " " + key + " " + protocol::format_hls_object(object);
}

// The owner's answer (or its absence) as a fetch result.
HlsFetchResult fetch_result(LinkQuery::Result&& q) {
  HlsFetchResult r;
  if (!q.answer) {
    r.failure = std::move(q.failure);
  } else if (auto* object = std::get_if<protocol::LinkHlsObject>(&*q.answer)) {
    r.answered = true;
    r.answer.head = object->head;
    if (r.answer.ok()) {
      r.answer.body = std::move(object->body);
    } else {
      r.answer.reason = std::string(object->body ? object->body->view() : std::string_view());
    }
  } else if (auto* error = std::get_if<protocol::LinkError>(&*q.answer)) {
    r.answered = true;  // a request the owner could not take (a name it refused)
    r.answer.head.status = 404;
    r.answer.reason = std::move(error->reason);
  } else {
    r.failure = std::string("unexpected ") +
                protocol::link_frame_type_name(protocol::link_message_type(*q.answer)) + " frame";
  }
  return r;
}
}  // namespace

struct HlsFetcher::Fetch {
  std::string id;    // fetches_ key
  std::string what;  // for logs: "live/cam 12.ts from worker 1 (pid 42)"
  std::string key;   // app/name
  protocol::HlsObjectName object;
  pid_t owner_pid = 0;
  std::unique_ptr<LinkQuery> query;
  std::vector<std::pair<Ticket, Callback>> waiters;
};

HlsFetcher::HlsFetcher(net::WorkerCore& ctx, HlsFetcherOptions opts)
    : ctx_(ctx), opts_(std::move(opts)), cache_(opts_.cache_bytes) {}

HlsFetcher::~HlsFetcher() {
  if (sweep_timer_) ctx_.timers->cancel(*sweep_timer_);
  fetches_.clear();
}

const HlsSegmentCache::Entry* HlsFetcher::cached(const OwnershipTable::Owner& owner, const std::string& key,
                                                 const protocol::HlsObjectName& object) {
  const HlsSegmentCache::Entry* e = cache_.find(cache_key(owner.pid, key, object), ctx_.timers->now_ms());
  if (e) ++cache_hits_;
  return e;
}

HlsFetcher::Ticket HlsFetcher::fetch(const OwnershipTable::Owner& owner, const std::string& app,
                                     const std::string& name, const protocol::HlsObjectName& object, Callback cb) {
  const std::string key = app + "/" + name;
  const std::string obj = protocol::format_hls_object(object);
  const std::string id = std::to_string(owner.pid) + " " + key + " " + obj;
  const Ticket t = next_ticket_++;
  tickets_[t] = id;
  auto it = fetches_.find(id);
  if (it != fetches_.end()) {  // one request in flight: wait for its answer
    it->second->waiters.emplace_back(t, std::move(cb));
    return t;
  }
  auto f = std::make_unique<Fetch>();
  f->id = id;
  f->key = key;
  f->object = object;
  f->owner_pid = owner.pid;
  f->what = key + " " + obj + " from worker " + std::to_string(owner.slot) + " (pid " + std::to_string(owner.pid) + ")";
  f->waiters.emplace_back(t, std::move(cb));
  Fetch& ref = *f;
  fetches_.emplace(id, std::move(f));
  start(ref, owner, app, name);
  return t;
}

void HlsFetcher::start(Fetch& f, const OwnershipTable::Owner& owner, const std::string& app, const std::string& name) {
  ++(f.object.playlist ? playlist_requests_ : segment_requests_);
  protocol::LinkReaderLimits lim;
  lim.max_body = opts_.max_object;
  // An LL-HLS blocking reload or hinted part may be held by the owner (up to three target
  // durations, then it answers itself): wait for it longer than for a plain object.
  const bool held = (f.object.playlist && !f.object.directives.empty()) || f.object.form == protocol::HlsSegmentForm::Part;
  const auto timeout = held ? opts_.timeout + kHeldObjectGrace : opts_.timeout;
  f.query = std::make_unique<LinkQuery>(ctx_, worker_process_socket_path(opts_.runtime_dir, owner.slot, owner.pid),
                                        protocol::LinkHlsRequest{app, name, f.object}, lim, timeout,
                                        [this, &f](LinkQuery::Result&& q) { complete(f, fetch_result(std::move(q))); });
  f.query->start();
}

void HlsFetcher::complete(Fetch& f, HlsFetchResult&& r) {
  auto it = fetches_.find(f.id);
  if (it == fetches_.end() || it->second.get() != &f) return;
  std::unique_ptr<Fetch> owned = std::move(it->second);  // goes (with its query) when this returns
  fetches_.erase(it);
  if (!r.answered) {
    ctx_.log->warn("hls: fetching {} failed: {}", f.what, r.failure);
  } else if (!r.answer.ok()) {
    ctx_.log->debug("hls: {}: {}: {}", f.what, r.answer.head.status, r.answer.reason);
  } else if (!f.object.playlist) {
    if (cache_.put(cache_key(f.owner_pid, f.key, f.object), r.answer.body, r.answer.head.cache.max_age_s,
                   ctx_.timers->now_ms())) {
      schedule_sweep();
    }
  }
  auto waiters = std::move(f.waiters);
  for (auto& [t, cb] : waiters) tickets_.erase(t);
  for (auto& [t, cb] : waiters) cb(r);
}

void HlsFetcher::cancel(Ticket t) {
  auto tk = tickets_.find(t);
  if (tk == tickets_.end()) return;
  auto it = fetches_.find(tk->second);
  tickets_.erase(tk);
  if (it == fetches_.end()) return;
  auto& w = it->second->waiters;
  std::erase_if(w, [t](const auto& p) { return p.first == t; });
  // The request itself goes on: its answer still fills the cache for the next client.
}

void HlsFetcher::schedule_sweep() {
  if (sweep_timer_) return;
  sweep_timer_ = ctx_.timers->schedule(kSweepInterval, [this] {
    sweep_timer_.reset();
    cache_.prune(ctx_.timers->now_ms());
    if (cache_.size() > 0) schedule_sweep();
  });
}

}  // namespace rill::workers
