#include "rill/protocol/notify_callback.h"

#include "rill/core/name_rule.h"
#include "rill/protocol/query_string.h"

namespace rill::protocol {

namespace {

constexpr std::string_view kFieldNames[] = {"call",    "addr",    "clientid", "app",  "flashver",
                                            "swfurl",  "tcurl",   "pageurl",  "name", "type"};

bool is_field_name(std::string_view key) {
  for (auto f : kFieldNames) {
    if (f == key) return true;
  }
  return false;
}

}  // namespace

std::string notify_form_body(const NotifyFields& f) {
  QueryParams form = {{"call", f.call},         {"addr", f.addr},       {"clientid", f.clientid},
                      {"app", f.app},           {"flashver", f.flashver}, {"swfurl", f.swfurl},
                      {"tcurl", f.tcurl},       {"pageurl", f.pageurl}, {"name", f.name},
                      {"type", "live"}};
  for (auto& [k, v] : parse_query(f.query)) {
    if (!is_field_name(k)) form.emplace_back(std::move(k), std::move(v));
  }
  return encode_form(form);
}

NotifyAnswer interpret_notify_answer(int status, std::string_view location, std::string_view failure) {
  NotifyAnswer a;
  if (status >= 200 && status < 300) {
    a.allowed = true;
    return a;
  }
  if (status == 0) {
    a.refusal = "callback failed: " + std::string(failure.empty() ? "no answer" : failure);
    return a;
  }
  if (status >= 300 && status < 400) {
    // nginx-rtmp: a Location that is not a URL is a new stream name (its query, if any, is dropped).
    std::string_view name = location.substr(0, location.find('?'));
    if (name.find("://") != std::string_view::npos) {
      a.refusal = "callback answered " + std::to_string(status) + " to a URL (only a stream name renames)";
    } else if (auto why = core::name_error(name)) {
      a.refusal = "callback answered " + std::to_string(status) + " with an invalid Location: " + *why;
    } else {
      a.allowed = true;
      a.rename = std::string(name);
    }
    return a;
  }
  a.refusal = "callback answered " + std::to_string(status);
  return a;
}

}  // namespace rill::protocol
