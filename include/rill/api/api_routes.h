#pragma once
// The routes of the control plane (docs/api.md), mounted on an ApiServer:
//
//   GET    /api/v1/server                   server, workers and totals
//   GET    /api/v1/streams?app=&limit=&offset=
//   GET    /api/v1/streams/{app}/{name}     one stream, or 404
//   DELETE /api/v1/streams/{app}/{name}     disconnect its publisher: 204, or 404
//   GET    /api/v1/clients?app=&name=&kind=&limit=&offset=
//   DELETE /api/v1/clients/{id}             close that connection: 204, or 404
//   GET    /metrics                         Prometheus text format 0.0.4
//
// Every answer is gathered from every worker at request time (no cache).
namespace rill::api {

class ApiServer;

void mount_api_routes(ApiServer& api);

}  // namespace rill::api
