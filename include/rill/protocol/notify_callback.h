#pragma once
// nginx-rtmp notify-module callbacks (docs/security.md): the form a callback POSTs and how its
// answer is read. Pure bytes; the HTTP client is http/http_callback_client.h.
//
// Form (application/x-www-form-urlencoded): call, addr, clientid, app, flashver, swfurl, tcurl,
// pageurl, name, type=live, then every argument of the client's query string as it came — except
// one that would repeat a field above (a client must not pass its own "call" or "addr").
//
// Answer: 2xx allows; 3xx whose Location is a plain stream name renames (publish) or redirects
// (play) to that name; anything else — another status, a 3xx to a URL, no answer — refuses.
#include <optional>
#include <string>
#include <string_view>

namespace rill::protocol {

struct NotifyFields {
  std::string call;  // publish, play, publish_done, play_done, update
  std::string addr;  // the client's IP address, without the port
  std::string clientid;
  std::string app;
  std::string flashver;
  std::string swfurl;
  std::string tcurl;
  std::string pageurl;
  std::string name;
  std::string query;  // the client's, raw
};

std::string notify_form_body(const NotifyFields& f);

struct NotifyAnswer {
  bool allowed = false;
  std::optional<std::string> rename;  // allowed under this name
  std::string refusal;                // not allowed: why
};

// `status` 0 means no answer at all (connection error, timeout, oversized answer): `failure` says which.
NotifyAnswer interpret_notify_answer(int status, std::string_view location, std::string_view failure = {});

}  // namespace rill::protocol
