// TlsConnection: OpenSSL over a non-blocking socket, through a BIO of our own.
#include "rill/net/tls_connection.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <cstring>

namespace rill::net {

namespace {
constexpr size_t kRecord = 16 * 1024;  // the largest TLS record's plaintext
}  // namespace

// The socket BIO: recv/send on the connection's descriptor, MSG_NOSIGNAL, errno kept for the log.
struct TlsBio {
  static TlsConnection& conn(BIO* b) { return *static_cast<TlsConnection*>(BIO_get_data(b)); }

  // A send or recv result as a BIO answer: EAGAIN asks OpenSSL to retry, other errors are kept.
  static int result(BIO* b, ssize_t n, bool writing) {
    if (n >= 0) return static_cast<int>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      writing ? BIO_set_retry_write(b) : BIO_set_retry_read(b);
    } else {
      conn(b).io_errno_ = errno;
    }
    return -1;
  }
  static int write(BIO* b, const char* in, int len) {
    BIO_clear_retry_flags(b);
    ssize_t n;
    do n = ::send(conn(b).fd_.get(), in, static_cast<size_t>(len), MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return result(b, n, true);
  }
  static int read(BIO* b, char* out, int len) {
    BIO_clear_retry_flags(b);
    ssize_t n;
    do n = ::recv(conn(b).fd_.get(), out, static_cast<size_t>(len), 0);
    while (n < 0 && errno == EINTR);
    return result(b, n, false);
  }
  static long ctrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }
  static int create(BIO* b) {
    BIO_set_init(b, 1);
    return 1;
  }
  static BIO_METHOD* method() {
    static BIO_METHOD* const m = [] {
      BIO_METHOD* bm = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "rill socket");
      BIO_meth_set_write(bm, &TlsBio::write);
      BIO_meth_set_read(bm, &TlsBio::read);
      BIO_meth_set_ctrl(bm, &TlsBio::ctrl);
      BIO_meth_set_create(bm, &TlsBio::create);
      return bm;
    }();
    return m;
  }
};

TlsConnection::TlsConnection(event_base* base, FlushScheduler& flusher, UniqueFd fd, std::string peer,
                             std::shared_ptr<TlsContext> tls, const std::string& server_name)
    : Connection(base, flusher, std::move(fd), std::move(peer)), tls_(std::move(tls)), ssl_(SSL_new(tls_->native())) {
  staged_.reserve(kRecord);
  if (!ssl_) return;  // handshake() reports it
  BIO* bio = BIO_new(TlsBio::method());
  BIO_set_data(bio, this);
  SSL_set_bio(ssl_, bio, bio);
  if (tls_->server_side()) {
    SSL_set_accept_state(ssl_);
    return;
  }
  SSL_set_connect_state(ssl_);
  if (!server_name.empty()) {
    // SNI carries host names only (RFC 6066); SSL_set1_host checks an IP address as one.
    in6_addr ip;
    const bool literal = inet_pton(AF_INET, server_name.c_str(), &ip) == 1 ||
                         inet_pton(AF_INET6, server_name.c_str(), &ip) == 1;
    if (!literal) SSL_set_tlsext_host_name(ssl_, server_name.c_str());
    if (SSL_get_verify_mode(ssl_) & SSL_VERIFY_PEER) SSL_set1_host(ssl_, server_name.c_str());
  }
}

TlsConnection::~TlsConnection() {
  close("destroyed");  // here, not in ~Connection: before_close() needs the SSL session
  SSL_free(ssl_);
}

bool TlsConnection::wants_read_event() const {
  if (read_wants_write_) return write_wants_read_;  // a read waits for writability, not input
  return handshaking_ || write_wants_read_ || Connection::wants_read_event();
}

bool TlsConnection::buffered_input() const { return ssl_ && SSL_pending(ssl_) > 0; }

std::string TlsConnection::error_text(const char* what, int ssl_error) {
  std::string s = std::string("tls ") + what + ": ";
  const unsigned long e = ERR_get_error();
  if (e != 0) {
    const char* reason = ERR_reason_error_string(e);
    s += reason ? reason : "error " + std::to_string(e);
  } else if (ssl_error == SSL_ERROR_SYSCALL) {
    s += io_errno_ ? std::strerror(io_errno_) : "connection closed during the exchange";
  } else {
    s += "error " + std::to_string(ssl_error);
  }
  const long verify = ssl_ ? SSL_get_verify_result(ssl_) : X509_V_OK;
  if (verify != X509_V_OK) s += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
  ERR_clear_error();
  return s;
}

bool TlsConnection::handshake() {
  if (!handshaking_) return true;
  if (!ssl_) {
    fatal_ = true;
    fail("tls: cannot create a session");
    return false;
  }
  ERR_clear_error();
  const int rc = SSL_do_handshake(ssl_);
  if (rc == 1) {
    handshaking_ = false;
    update_read_event();
    kick_read();  // application data may have come with the last flight
    return true;
  }
  const int err = SSL_get_error(ssl_, rc);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    wait_writable(err == SSL_ERROR_WANT_WRITE);  // the read event is on while handshaking
    return false;
  }
  fatal_ = true;
  fail(error_text("handshake", err));
  return false;
}

void TlsConnection::on_readable() {
  const bool was_handshaking = handshaking_;
  if (handshaking_ && !handshake()) return;
  if (was_handshaking || std::exchange(write_wants_read_, false)) {
    update_read_event();
    // Writes held back by the handshake or by a record the peer owed us.
    if (!survives([this] { flush(); }) || state_ == State::Closed) return;
  }
  read_loop();
}

void TlsConnection::on_writable() {
  if (std::exchange(read_wants_write_, false)) {
    write_event_pinned_ = false;
    update_read_event();
    if (!read_loop()) return;
  }
  flush();
}

Connection::ReadResult TlsConnection::read_some(uint8_t* buf, size_t len) {
  size_t n = 0;
  ERR_clear_error();
  if (SSL_read_ex(ssl_, buf, len, &n) == 1) return {ReadResult::Data, n, true, {}};
  const int err = SSL_get_error(ssl_, 0);
  switch (err) {
    case SSL_ERROR_WANT_READ:
      return {};
    case SSL_ERROR_WANT_WRITE:
      read_wants_write_ = write_event_pinned_ = true;
      wait_writable(true);
      update_read_event();
      return {};
    case SSL_ERROR_ZERO_RETURN:  // close_notify, or EOF (SSL_OP_IGNORE_UNEXPECTED_EOF)
      return {ReadResult::Eof, 0, false, {}};
    default:
      fatal_ = true;
      return {ReadResult::Error, 0, false, error_text("read", err)};
  }
}

void TlsConnection::stage() {
  iovec iov[64];
  while (staged_.size() < kRecord && !queue_.empty()) {
    const size_t count = queue_.fill_iov(iov, 64);
    size_t taken = 0;
    for (size_t i = 0; i < count && staged_.size() < kRecord; ++i) {
      const size_t n = std::min(iov[i].iov_len, kRecord - staged_.size());
      const auto* p = static_cast<const uint8_t*>(iov[i].iov_base);
      staged_.insert(staged_.end(), p, p + n);
      taken += n;
    }
    queue_.consume(taken);
  }
  staged_bytes_ = staged_.size();
}

void TlsConnection::flush() {
  if (state_ == State::Closed) return;
  if (handshaking_ && !handshake()) return;
  if (write_wants_read_) return;  // on_readable() retries
  while (!staged_.empty() || !queue_.empty()) {
    if (staged_.empty()) stage();
    size_t n = 0;
    ERR_clear_error();
    // Without partial writes, SSL_write takes the whole record or asks to be called again with it.
    if (SSL_write_ex(ssl_, staged_.data(), staged_.size(), &n) == 1) {
      bytes_out_ += n;
      staged_.clear();
      staged_bytes_ = 0;
      continue;
    }
    const int err = SSL_get_error(ssl_, 0);
    if (err == SSL_ERROR_WANT_WRITE) return wait_writable(true);
    if (err == SSL_ERROR_WANT_READ) {
      write_wants_read_ = true;
      if (!write_event_pinned_) wait_writable(false);
      update_read_event();
      return;
    }
    fatal_ = true;
    return fail(error_text("write", err));
  }
  flushed();
}

void TlsConnection::before_close() {
  if (!ssl_ || handshaking_ || fatal_) return;
  ERR_clear_error();
  SSL_shutdown(ssl_);  // close_notify, best effort: the socket closes right after
  ERR_clear_error();
}

// ---------------------------------------------------------------- TlsContext

namespace {

// The reasons OpenSSL queued, "no start line; ...", and the queue cleared.
std::string openssl_reasons() {
  std::string s;
  while (const unsigned long e = ERR_get_error()) {
    const char* r = ERR_reason_error_string(e);
    if (!s.empty()) s += "; ";
    s += r ? r : "error " + std::to_string(e);
  }
  return s.empty() ? "unknown error" : s;
}

void require_readable(const std::string& path, const char* what) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw TlsError(std::string("tls: cannot load ") + what + " '" + path + "': " + std::strerror(errno));
  std::fclose(f);
}

SSL_CTX* new_context(const SSL_METHOD* method) {
  SSL_CTX* ctx = SSL_CTX_new(method);
  if (!ctx) throw TlsError("tls: cannot create a context: " + openssl_reasons());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // A peer that closes without close_notify ends the stream like EOF (RTMP clients do that).
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  return ctx;
}

}  // namespace

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

std::shared_ptr<TlsContext> TlsContext::server(const std::string& cert_chain_pem, const std::string& key_pem) {
  ERR_clear_error();
  std::shared_ptr<TlsContext> t(new TlsContext(new_context(TLS_server_method()), true));
  require_readable(cert_chain_pem, "certificate chain");
  if (SSL_CTX_use_certificate_chain_file(t->ctx_, cert_chain_pem.c_str()) != 1) {
    throw TlsError("tls: cannot load certificate chain '" + cert_chain_pem + "': " + openssl_reasons());
  }
  require_readable(key_pem, "private key");
  const bool loaded = SSL_CTX_use_PrivateKey_file(t->ctx_, key_pem.c_str(), SSL_FILETYPE_PEM) == 1;
  if (!loaded && ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH) {
    throw TlsError("tls: cannot load private key '" + key_pem + "': " + openssl_reasons());
  }
  if (!loaded || SSL_CTX_check_private_key(t->ctx_) != 1) {
    ERR_clear_error();
    throw TlsError("tls: private key '" + key_pem + "' does not match certificate '" + cert_chain_pem + "'");
  }
  return t;
}

std::shared_ptr<TlsContext> TlsContext::client(const std::string& ca_file, bool verify_peer) {
  ERR_clear_error();
  std::shared_ptr<TlsContext> t(new TlsContext(new_context(TLS_client_method()), false));
  if (!verify_peer) {
    SSL_CTX_set_verify(t->ctx_, SSL_VERIFY_NONE, nullptr);
    return t;
  }
  SSL_CTX_set_verify(t->ctx_, SSL_VERIFY_PEER, nullptr);
  if (ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(t->ctx_) != 1) {
      throw TlsError("tls: cannot load the system's trust store: " + openssl_reasons());
    }
  } else {
    require_readable(ca_file, "CA file");
    if (SSL_CTX_load_verify_locations(t->ctx_, ca_file.c_str(), nullptr) != 1) {
      throw TlsError("tls: cannot load CA file '" + ca_file + "': " + openssl_reasons());
    }
  }
  return t;
}

}  // namespace rill::net
