#pragma once
// The names of the HTTP stack (http/) that server/'s handlers are written against, usable
// unqualified in rill::server: the sessions and handlers here speak HTTP all the time, and a
// parameter or member called `http` (the HttpServer they answer on) reads better next to
// `HttpExchange& ex` than next to `http::HttpExchange& ex`.
#include "rill/http/http_exchange.h"
#include "rill/http/http_router.h"

namespace rill::http {
class HttpBodyStream;  // http_body_stream.h
}  // namespace rill::http

namespace rill::server {

using http::HttpBodyStream;
using http::HttpExchange;
using http::HttpHeld;
using http::HttpHeldState;
using http::HttpMethod;
using http::HttpMethods;
using http::HttpRequestInfo;
using http::HttpRouteTable;
using http::HttpServer;
using http::HttpStreamHandover;
using http::PathMatch;

}  // namespace rill::server
