#include "rill/workers/stream_locator.h"

#include <chrono>

#include "rill/workers/hls_sequence_memo.h"

namespace rill::workers {

StreamLocator::StreamLocator(net::WorkerCore& ctx, LocatorOptions opts)
    : ctx_(ctx), opts_(std::move(opts)) {
  // The HLS this worker segments is recorded as held here (hls_source on the other workers).
  if (opts_.table) opts_.table->hls_memo().set_holder(opts_.slot, opts_.pid);
}

StreamLocator::~StreamLocator() {
  close_all();
  if (reap_timer_) ctx_.timers->cancel(*reap_timer_);
}

void StreamLocator::close_all() {
  auto links = std::move(links_);
  links_.clear();
  for (auto& [k, l] : links) l->shutdown("worker stopping");
  links.clear();
  retired_.clear();
  // Whatever this worker still owns is released; the master does the same when it reaps us.
  if (opts_.table) {
    for (const auto& key : owned_) opts_.table->release(key, opts_.pid);
  }
  owned_.clear();
}

const WorkerLink* StreamLocator::link(const std::string& key) const {
  auto it = links_.find(key);
  return it == links_.end() ? nullptr : it->second.get();
}

std::optional<OwnershipTable::Owner> StreamLocator::remote_owner(const std::string& key) const {
  if (!shares_streams() || owned_.count(key)) return std::nullopt;
  auto owner = opts_.table->lookup(key);
  // An owner in our own slot with another pid is an older generation serving its publisher
  // after a reload: reachable at its own pid's socket (worker_endpoint.h).
  if (!owner || owner->pid == opts_.pid || OwnershipTable::process_gone(owner->pid)) {
    return std::nullopt;
  }
  return owner;
}

std::optional<OwnershipTable::Owner> StreamLocator::hls_source(const std::string& key) const {
  if (!shares_streams() || owned_.count(key)) return std::nullopt;
  if (auto owner = opts_.table->lookup(key)) {
    // A publisher somewhere: its worker has the HLS (this one's store, or a worker being reaped:
    // none, as remote_owner says).
    if (owner->pid == opts_.pid || OwnershipTable::process_gone(owner->pid)) return std::nullopt;
    return owner;
  }
  const auto h = opts_.table->hls_memo().holder(key);
  if (!h || h->pid == opts_.pid || OwnershipTable::process_gone(h->pid)) return std::nullopt;
  return OwnershipTable::Owner{h->slot, h->pid, 0};
}

PublishClaim StreamLocator::claim_for_publish(const media::StreamKey& skey, const config::AppConfig& cfg,
                                              const void* publisher, media::PublishOrigin origin) {
  PublishClaim out;
  const std::string key = skey.str();
  if (owned_.count(key)) {
    out.reason = "already publishing on this worker";
    return out;
  }
  if (opts_.table) {
    const auto c = opts_.table->claim(key, opts_.slot, opts_.pid);
    if (c == OwnershipTable::Claim::TooLong || c == OwnershipTable::Claim::Full) {
      out.result = ClaimResult::Invalid;
      out.reason = to_string(c);
      return out;
    }
    if (c == OwnershipTable::Claim::Busy) {
      auto o = opts_.table->lookup(key);
      out.reason = o ? "already publishing on worker " + std::to_string(o->slot) + " (pid " + std::to_string(o->pid) + ")"
                     : std::string("another worker is claiming it");
      return out;
    }
  }
  // A local worker link feeding this stream gives way to the real publisher: its players see
  // UnpublishNotify then PublishNotify, and stay.
  if (auto it = links_.find(key); it != links_.end()) retire(*it->second, "a local publisher took over");
  media::Stream& s = ctx_.streams->get_or_create(skey, cfg);
  if (!s.attach_publisher(publisher, origin)) {
    if (opts_.table) opts_.table->release(key, opts_.pid);
    out.reason = "already publishing on this worker";
    return out;
  }
  owned_.insert(key);
  out.result = ClaimResult::Ok;
  out.stream = &s;
  return out;
}

void StreamLocator::released(const media::StreamKey& skey) {
  const std::string key = skey.str();
  if (owned_.erase(key) == 0) return;
  if (opts_.table) opts_.table->release(key, opts_.pid);
  // Players still attached here wait for the publisher: if it comes back on another worker,
  // a link brings it to them.
  watch_for_republish(skey);
}

void StreamLocator::watch_for_republish(const media::StreamKey& skey) {
  if (!shares_streams()) return;
  const std::string key = skey.str();
  media::Stream* s = ctx_.streams->find(skey);
  if (!s || s->has_publisher() || s->subscriber_count() == 0 || links_.count(key)) return;
  make_link(skey, s->app_config()).start_waiting();
}

media::Stream* StreamLocator::find_for_play(const media::StreamKey& skey, const config::AppConfig& cfg) {
  const std::string key = skey.str();
  media::Stream* local = ctx_.streams->find(skey);
  if (owned_.count(key) || !shares_streams()) return local;
  if (local && local->has_publisher()) return local;  // fed by our link already
  const auto owner = remote_owner(key);
  const bool owner_live = owner.has_value();
  if (auto it = links_.find(key); it != links_.end()) {
    // The link lost its publisher and waits. If the table knows an owner already, go now.
    if (owner_live) {
      if (media::Stream* s = it->second->start_attached(*owner)) return s;
    }
    if (local) return local;
    if (cfg.play_wait.count() > 0) return &ctx_.streams->get_or_create(skey, cfg);
    return nullptr;
  }
  if (owner_live) {
    WorkerLink& l = make_link(skey, cfg);
    if (media::Stream* s = l.start_attached(*owner)) return s;
    return ctx_.streams->find(skey);
  }
  // No publisher anywhere. A player that may wait (play_wait) gets a link that waits for one.
  if (cfg.play_wait.count() > 0) {
    media::Stream& s = ctx_.streams->get_or_create(skey, cfg);
    make_link(skey, cfg).start_waiting();
    return &s;
  }
  return local;
}

WorkerLink& StreamLocator::make_link(const media::StreamKey& skey, const config::AppConfig& cfg) {
  WorkerLinkOptions lo;
  lo.table = opts_.table;
  lo.self_slot = opts_.slot;
  lo.self_pid = opts_.pid;
  lo.runtime_dir = opts_.runtime_dir;
  lo.poll_interval = opts_.poll_interval;
  lo.idle_grace = opts_.idle_grace;
  lo.max_frame_body = static_cast<uint32_t>(ctx_.config->rtmp.max_message_size);
  auto link = std::make_unique<WorkerLink>(ctx_, skey, cfg, lo,
                                          [this](WorkerLink& l) { retire(l, "idle"); });
  WorkerLink& ref = *link;
  links_[skey.str()] = std::move(link);
  return ref;
}

void StreamLocator::retire(WorkerLink& link, const char* why) {
  auto it = links_.find(link.key());
  if (it == links_.end() || it->second.get() != &link) return;
  std::unique_ptr<WorkerLink> owned = std::move(it->second);
  links_.erase(it);
  owned->shutdown(why);
  // Destroyed from the event loop: this may run inside the link's own callback.
  retired_.push_back(std::move(owned));
  if (!reap_timer_) {
    reap_timer_ = ctx_.timers->schedule(std::chrono::milliseconds(0), [this] {
      reap_timer_.reset();
      retired_.clear();
    });
  }
}

}  // namespace rill::workers
