// HttpRouteTable: methods + exact/prefix paths -> handler; the most specific mount wins, 405 with
// the Allow list computed from the table, 404, HEAD through the GET handler, OPTIONS answered from
// the table unless an entry handles it. What the server mounts (healthz, the stream paths) plus
// the JSON API and console that will mount next.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <string_view>

#include "rill/http/http_router.h"

using rill::http::HttpExchange;
using rill::http::HttpMethod;
using rill::http::HttpMethods;
using rill::http::HttpRouteTable;
using rill::http::PathMatch;

namespace {

// A handler that carries its name. Running a handler takes an exchange on a live connection, so
// the test reads the name of the entry that matched (std::function::target) instead.
struct Named {
  std::string name;
  void operator()(HttpExchange&) const {}
};

std::string name_of(const HttpRouteTable::Handler* h) {
  const Named* n = h ? h->target<Named>() : nullptr;
  return n ? n->name : "?";
}

// A table like the server's (healthz, the stream mount) plus an API and a console, whose
// handlers are named.
struct Table {
  HttpRouteTable t;

  Table() {
    add(HttpMethod::Get, "/healthz", PathMatch::Exact, "health");
    add(HttpMethod::Get, "/", PathMatch::Prefix, "streams");
    add(HttpMethod::Get, "/api/v1/streams", PathMatch::Exact, "list");
    add(HttpMethod::Post, "/api/v1/streams", PathMatch::Exact, "create");
    add(HttpMethod::Get | HttpMethod::Delete, "/api/v1/streams/", PathMatch::Prefix, "stream");
    add(HttpMethod::Get, "/console/", PathMatch::Prefix, "console");
    add(HttpMethod::Get | HttpMethod::Options, "/cors/", PathMatch::Prefix, "own-options");
  }
  void add(HttpMethods m, std::string path, PathMatch match, std::string name) {
    t.add(m, std::move(path), match, Named{std::move(name)});
  }
  // The handler that runs for method + path ("405 ALLOW", "404", "OPTIONS ALLOW").
  std::string operator()(HttpMethod m, std::string_view path) const {
    auto r = t.match(m, path);
    switch (r.status) {
      case HttpRouteTable::Result::Status::Found:
        return name_of(r.handler);
      case HttpRouteTable::Result::Status::Options:
        return "OPTIONS " + r.allow.list();
      case HttpRouteTable::Result::Status::MethodNotAllowed:
        return "405 " + r.allow.list();
      case HttpRouteTable::Result::Status::NotFound:
        return "404";
    }
    return "?";
  }
};

// What runs for a method and a path: a handler's name, "405 <Allow>", "OPTIONS <Allow>", "404".
struct Case {
  HttpMethod method;
  const char* path;
  const char* want;
};

constexpr Case kCases[] = {
    // An exact path beats any prefix; the longest prefix wins.
    {HttpMethod::Get, "/healthz", "health"},
    {HttpMethod::Get, "/healthz/", "streams"},
    {HttpMethod::Get, "/HEALTHZ", "streams"},
    {HttpMethod::Get, "/live/test.flv", "streams"},
    {HttpMethod::Get, "/api/v1/streams", "list"},
    {HttpMethod::Post, "/api/v1/streams", "create"},
    {HttpMethod::Get, "/api/v1/streams/live/cam", "stream"},
    {HttpMethod::Delete, "/api/v1/streams/live/cam", "stream"},
    {HttpMethod::Get, "/console/", "console"},
    {HttpMethod::Get, "/console/app.js", "console"},
    // A prefix covers only what is below it: "/console" and "/consolex" are stream-mount paths.
    {HttpMethod::Get, "/console", "streams"},
    {HttpMethod::Get, "/consolex/a.flv", "streams"},
    // An app called "api" still has its streams: only /api/v1/... is mounted elsewhere.
    {HttpMethod::Get, "/api/cam.flv", "streams"},
    // 405 lists the methods of the path's mount.
    {HttpMethod::Post, "/live/test.flv", "405 GET, HEAD, OPTIONS"},
    {HttpMethod::Put, "/live/test.flv", "405 GET, HEAD, OPTIONS"},
    {HttpMethod::Delete, "/nothing", "405 GET, HEAD, OPTIONS"},
    {HttpMethod::Post, "/healthz", "405 GET, HEAD, OPTIONS"},
    {HttpMethod::Delete, "/api/v1/streams", "405 GET, HEAD, POST, OPTIONS"},
    {HttpMethod::Post, "/api/v1/streams/x", "405 GET, HEAD, DELETE, OPTIONS"},
    // The most specific mount decides: no fallback to a less specific one that would allow it.
    {HttpMethod::Patch, "/console/x", "405 GET, HEAD, OPTIONS"},
    // HEAD goes to the GET handler.
    {HttpMethod::Head, "/healthz", "health"},
    {HttpMethod::Head, "/live/test.flv", "streams"},
    {HttpMethod::Head, "/api/v1/streams", "list"},
    // OPTIONS is answered from the table, unless an entry handles it.
    {HttpMethod::Options, "/live/test.flv", "OPTIONS GET, HEAD, OPTIONS"},
    {HttpMethod::Options, "/api/v1/streams", "OPTIONS GET, HEAD, POST, OPTIONS"},
    {HttpMethod::Options, "/api/v1/streams/a/b", "OPTIONS GET, HEAD, DELETE, OPTIONS"},
    {HttpMethod::Options, "/cors/x", "own-options"},
};

}  // namespace

TEST(HttpRouteTable, Outcomes) {
  Table t;
  for (const Case& c : kCases) {
    EXPECT_EQ(t(c.method, c.path), c.want) << rill::http::method_name(c.method) << " " << c.path;
  }
}

TEST(HttpRouteTable, HeadWithoutGetAndHeadOfItsOwn) {
  // A mount without GET has no HEAD either.
  HttpRouteTable only_post;
  only_post.add(HttpMethod::Post, "/api/", PathMatch::Prefix, [](HttpExchange&) {});
  auto r = only_post.match(HttpMethod::Head, "/api/x");
  EXPECT_EQ(r.status, HttpRouteTable::Result::Status::MethodNotAllowed);
  EXPECT_EQ(r.allow.list(), "POST, OPTIONS");
  // An entry that lists HEAD itself is preferred to the GET one.
  HttpRouteTable own_head;
  own_head.add(HttpMethod::Get, "/x", PathMatch::Exact, Named{"get"});
  own_head.add(HttpMethod::Head, "/x", PathMatch::Exact, Named{"head"});
  r = own_head.match(HttpMethod::Head, "/x");
  ASSERT_EQ(r.status, HttpRouteTable::Result::Status::Found);
  EXPECT_EQ(name_of(r.handler), "head");
}

TEST(HttpRouteTable, NothingMountedIsNotFound) {
  HttpRouteTable t;
  EXPECT_EQ(t.match(HttpMethod::Get, "/").status, HttpRouteTable::Result::Status::NotFound);
  t.add(HttpMethod::Get, "/healthz", PathMatch::Exact, [](HttpExchange&) {});
  for (HttpMethod m : {HttpMethod::Get, HttpMethod::Post, HttpMethod::Options}) {
    auto r = t.match(m, "/live/test.flv");
    EXPECT_EQ(r.status, HttpRouteTable::Result::Status::NotFound);
    EXPECT_EQ(r.handler, nullptr);
    EXPECT_TRUE(r.allow.empty());
  }
}

TEST(HttpRouteTable, BadEntriesAreRefused) {
  HttpRouteTable t;
  auto h = [](HttpExchange&) {};
  EXPECT_THROW(t.add(HttpMethod::Get, "", PathMatch::Exact, h), std::invalid_argument);
  EXPECT_THROW(t.add(HttpMethod::Get, "api", PathMatch::Exact, h), std::invalid_argument);
  EXPECT_THROW(t.add(HttpMethod::Get, "/console", PathMatch::Prefix, h), std::invalid_argument);
  EXPECT_NO_THROW(t.add(HttpMethod::Get, "/console", PathMatch::Exact, h));
  EXPECT_NO_THROW(t.add(HttpMethod::Get, "/console/", PathMatch::Prefix, h));
}
