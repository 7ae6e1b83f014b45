#pragma once
// TLS for net::Connection (OpenSSL 3). A TlsContext holds what every connection of a listener
// (server: certificate chain + key) or of a kind of pull (client: trust anchors) shares; a
// TlsConnection runs one TLS session over a non-blocking socket through its own BIO (recv/send
// with MSG_NOSIGNAL, errno kept for the log), driving SSL_do_handshake / SSL_read / SSL_write and
// their WANT_READ / WANT_WRITE from the connection's two events. Outgoing buffers are copied
// into records of up to 16 KiB (one SSL_write each); incoming bytes reach the handler decrypted,
// exactly as a PlainConnection delivers them — so RTMPS is an RtmpSession on a TlsConnection.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "rill/net/connection.h"

struct ssl_ctx_st;
struct ssl_st;
struct bio_st;

namespace rill::net {

// A certificate or key that cannot be used; the message names the file and the reason.
class TlsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class TlsContext {
 public:
  // Server side: a PEM certificate chain (leaf first) and its PEM private key. Throws TlsError
  // ("tls: cannot load certificate chain '/etc/rill/cert.pem': No such file or directory").
  static std::shared_ptr<TlsContext> server(const std::string& cert_chain_pem, const std::string& key_pem);
  // Client side: verifies the server against ca_file (PEM), or the system's trust store when
  // empty; verify_peer=false accepts any certificate (tests, links inside one host).
  static std::shared_ptr<TlsContext> client(const std::string& ca_file = {}, bool verify_peer = true);

  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  ssl_ctx_st* native() const { return ctx_; }
  bool server_side() const { return server_; }

 private:
  TlsContext(ssl_ctx_st* ctx, bool server) : ctx_(ctx), server_(server) {}
  ssl_ctx_st* ctx_;
  bool server_;
};

class TlsConnection final : public Connection {
 public:
  // The context's side decides the role. server_name (client side): SNI and the name the
  // certificate must carry when the context verifies.
  TlsConnection(event_base* base, FlushScheduler& flusher, UniqueFd fd, std::string peer,
                std::shared_ptr<TlsContext> tls, const std::string& server_name = {});
  ~TlsConnection() override;

  void flush() override;
  bool secure() const override { return true; }
  bool handshake_done() const { return !handshaking_; }

 private:
  friend struct TlsBio;
  ReadResult read_some(uint8_t* buf, size_t len) override;
  bool buffered_input() const override;
  bool wants_read_event() const override;
  void on_readable() override;
  void on_writable() override;
  void before_close() override;
  // Drives the handshake; true once it is done (false: still going, or the connection ended).
  bool handshake();
  void stage();  // moves up to one record's worth of queued bytes into staged_
  std::string error_text(const char* what, int ssl_error);

  std::shared_ptr<TlsContext> tls_;
  ssl_st* ssl_ = nullptr;
  bool handshaking_ = true;
  bool read_wants_write_ = false;  // SSL_read needs the socket writable (renegotiation, key update)
  bool write_wants_read_ = false;  // SSL_write needs a record from the peer
  bool fatal_ = false;             // no close_notify after a protocol or socket error
  int io_errno_ = 0;               // the socket error behind SSL_ERROR_SYSCALL
  std::vector<uint8_t> staged_;    // the record being written; retried as-is after WANT_*
};

}  // namespace rill::net
