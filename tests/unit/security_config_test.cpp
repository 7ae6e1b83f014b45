// apps.NAME.auth / access / callbacks and max_connections_per_ip (config/security_config.cpp).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "config_test_util.h"
#include "rill/config/config.h"

namespace rill::config {
namespace {

TEST(SecurityConfig, DefaultsAreOpen) {
  const Config c = load(kLive);
  const AppConfig& app = c.apps.at("live");
  EXPECT_EQ(app.auth.publish, AuthMode::Open);
  EXPECT_EQ(app.auth.play, AuthMode::Open);
  EXPECT_FALSE(app.auth.secret);
  EXPECT_TRUE(app.access.empty());
  EXPECT_FALSE(app.callbacks.on_publish);
  EXPECT_EQ(app.callbacks.timeout, Duration(3000));
  EXPECT_EQ(app.callbacks.update_interval, Duration(30000));
  EXPECT_EQ(c.rtmp.max_connections_per_ip, 0u);
  EXPECT_EQ(c.http.max_connections_per_ip, 0u);
}

TEST(SecurityConfig, ReadsEveryKey) {
  const Config c =
      load("rtmp: {max_connections_per_ip: 5}\nhttp: {max_connections_per_ip: 7}\n" + kLive +
           "    auth: {secret: s3, publish: token+callback, play: token}\n"
           "    access: ['allow publish 127.0.0.1', 'deny publish all', 'allow play ::/0']\n"
           "    callbacks:\n      on_publish: http://127.0.0.1:9000/auth\n      on_update: http://h/u\n"
           "      on_record_done: https://h/rec\n      update_interval: 5s\n      timeout: 500ms\n");
  const AppConfig& app = c.apps.at("live");
  EXPECT_EQ(*app.auth.secret, "s3");
  EXPECT_EQ(app.auth.publish, AuthMode::TokenAndCallback);
  EXPECT_EQ(app.auth.play, AuthMode::Token);
  ASSERT_EQ(app.access.size(), 3u);
  EXPECT_FALSE(app.access[1].allow);
  EXPECT_EQ(*app.callbacks.on_publish, "http://127.0.0.1:9000/auth");
  EXPECT_EQ(*app.callbacks.on_update, "http://h/u");
  EXPECT_EQ(*app.callbacks.on_record_done, "https://h/rec");
  EXPECT_EQ(app.callbacks.update_interval, Duration(5000));
  EXPECT_EQ(app.callbacks.timeout, Duration(500));
  EXPECT_EQ(c.rtmp.max_connections_per_ip, 5u);
  EXPECT_EQ(c.http.max_connections_per_ip, 7u);
}

TEST(SecurityConfig, SecretFileIsReadAtLoad) {
  const std::string path = testing::TempDir() + "/rill_secret_test";
  {
    std::ofstream(path) << "from-file\n";
  }
  const Config c = load(kLive + "    auth: {secret_file: " + path + ", play: token}\n");
  EXPECT_EQ(*c.apps.at("live").auth.secret, "from-file");
  std::remove(path.c_str());
  EXPECT_CONTAINS(error_of(kLive + "    auth: {secret_file: " + path + ", play: token}\n"),
                  "cannot read secret_file " + path);
}

TEST(SecurityConfig, ApiTokenFile) {
  const std::string path = testing::TempDir() + "/rill_api_token_test";
  const std::string yaml = "api:\n  token_file: " + path + "\n" + kLive;
  { std::ofstream(path) << "t0ken-from-file\n"; }
  const Config c = load(yaml);
  EXPECT_EQ(c.api.token, std::optional<std::string>("t0ken-from-file"));
  EXPECT_EQ(c.api.token_file, std::optional<std::string>(path));
  EXPECT_CONTAINS(error_of("api:\n  token: x\n  token_file: " + path + "\n" + kLive),
                  "either api.token or api.token_file");
  { std::ofstream(path) << "\n"; }
  EXPECT_CONTAINS(error_of(yaml), "api.token_file " + path + " is empty");
  { std::ofstream(path) << "two words\n"; }
  EXPECT_CONTAINS(error_of(yaml), "printable ASCII");
  std::remove(path.c_str());
  EXPECT_CONTAINS(error_of(yaml), "cannot read api.token_file " + path + ": No such file");
}

TEST(SecurityConfig, Errors) {
  EXPECT_CONTAINS(error_of(kLive + "    auth: {publish: token}\n"), "a token mode needs a secret");
  EXPECT_CONTAINS(error_of(kLive + "    auth: {publish: tokens, secret: x}\n"), "apps.live.auth.publish");
  EXPECT_CONTAINS(error_of(kLive + "    auth: {secret: ''}\n"), "must not be empty");
  EXPECT_CONTAINS(error_of(kLive + "    auth: {secret: a, secret_file: /x}\n"), "either secret or secret_file");
  EXPECT_CONTAINS(error_of(kLive + "    auth: {publish: callback}\n"), "callback needs callbacks.on_publish");
  EXPECT_CONTAINS(error_of(kLive + "    access: ['allow publish 10.0.0.0/40']\n"), "t.yaml:3:");
  EXPECT_CONTAINS(error_of(kLive + "    access: ['allow publish 10.0.0.0/40']\n"), "0 to 32");
  EXPECT_CONTAINS(error_of(kLive + "    access: {a: 1}\n"), "expected a list of rules");
  EXPECT_CONTAINS(error_of(kLive + "    callbacks: {on_publish: 'ftp://x/'}\n"),
                  "expected an http:// or https:// URL");
  EXPECT_CONTAINS(error_of(kLive + "    callbacks: {on_publish: 'https:///x'}\n"),
                  "expected an http:// or https:// URL");
  EXPECT_CONTAINS(error_of(kLive + "    callbacks: {on_pubish: 'http://x/'}\n"), "did you mean 'on_publish'");
  EXPECT_CONTAINS(error_of("rtmp: {max_connections_per_ip: -1}\n" + kLive), "max_connections_per_ip");
}

TEST(SecurityConfig, HttpsCallbacks) {
  const std::string ca = testing::TempDir() + "/rill_callback_ca_test.pem";
  { std::ofstream(ca) << "pem\n"; }
  const Config c =
      load(kLive + "    callbacks: {on_publish: 'https://hooks.example/auth', tls_ca_file: " + ca + "}\n");
  EXPECT_EQ(*c.apps.at("live").callbacks.on_publish, "https://hooks.example/auth");
  EXPECT_EQ(c.apps.at("live").callbacks.tls_ca_file, std::optional<std::string>(ca));
  EXPECT_FALSE(
      load(kLive + "    callbacks: {on_play: 'https://h/'}\n").apps.at("live").callbacks.tls_ca_file);
  EXPECT_CONTAINS(error_of(kLive + "    callbacks: {on_publish: 'http://h/', tls_ca_file: " + ca + "}\n"),
                  "tls_ca_file is for https:// callback URLs only");
  std::remove(ca.c_str());
  EXPECT_CONTAINS(error_of(kLive + "    callbacks: {on_publish: 'https://h/', tls_ca_file: " + ca + "}\n"),
                  "cannot read tls_ca_file " + ca);
}

TEST(SecurityConfig, RtmpsKeys) {
  const Config c = load("rtmp: {listen: ['127.0.0.1:1935'], tls_listen: ['127.0.0.1:1936'], tls_cert: /c.pem, "
                        "tls_key: /k.pem}\n" + kLive);
  ASSERT_EQ(c.rtmp.tls_listen.size(), 1u);
  EXPECT_EQ(c.rtmp.tls_listen[0].port, 1936);
  EXPECT_EQ(*c.rtmp.tls_cert, "/c.pem");
  EXPECT_EQ(*c.rtmp.tls_key, "/k.pem");
  EXPECT_TRUE(load(kLive).rtmp.tls_listen.empty());
  EXPECT_CONTAINS(error_of("rtmp: {tls_listen: ['127.0.0.1:1936']}\n" + kLive), "TLS needs rtmp.tls_cert and rtmp.tls_key");
  EXPECT_CONTAINS(error_of("rtmp: {listen: ['0.0.0.0:1935'], tls_listen: ['127.0.0.1:1935'], tls_cert: a, tls_key: b}\n" +
                           kLive),
                  "overlaps rtmp.listen");
  EXPECT_CONTAINS(error_of("rtmp: {tls_listen: ['nope:x'], tls_cert: a, tls_key: b}\n" + kLive), "rtmp.tls_listen");
}

TEST(SecurityConfig, HttpsKeys) {
  const Config c = load("http: {listen: ['127.0.0.1:8080'], tls_listen: ['127.0.0.1:8443'], tls_cert: /c.pem, "
                        "tls_key: /k.pem}\n" + kLive);
  ASSERT_EQ(c.http.tls_listen.size(), 1u);
  EXPECT_EQ(c.http.tls_listen[0].port, 8443);
  EXPECT_EQ(*c.http.tls_key, "/k.pem");
  EXPECT_CONTAINS(error_of("http: {tls_listen: ['127.0.0.1:8443'], tls_key: k}\n" + kLive),
                  "needs http.tls_cert and http.tls_key");
  EXPECT_CONTAINS(error_of("http: {listen: ['[::]:8080'], tls_listen: ['[::1]:8080'], tls_cert: a, tls_key: b}\n" + kLive),
                  "overlaps http.listen");
}

TEST(SecurityConfig, ApiHttpsKeys) {
  // The API's HTTPS uses http:'s certificate; http.tls_listen itself may stay empty.
  const Config c = load("http: {tls_cert: /c.pem, tls_key: /k.pem}\napi: {tls_listen: ['127.0.0.1:8444']}\n" + kLive);
  ASSERT_EQ(c.api.tls_listen.size(), 1u);
  EXPECT_EQ(c.api.tls_listen[0].port, 8444);
  EXPECT_TRUE(load(kLive).api.tls_listen.empty());
  EXPECT_CONTAINS(error_of("http: {tls_cert: /c.pem}\napi: {tls_listen: ['127.0.0.1:8444']}\n" + kLive),
                  "api.tls_listen needs http.tls_cert and http.tls_key");
  EXPECT_CONTAINS(error_of("http: {tls_cert: a, tls_key: b}\napi: {listen: ['127.0.0.1:8081'], tls_listen: ['0.0.0.0:8081']}\n" +
                           kLive),
                  "overlaps api.listen");
  EXPECT_CONTAINS(error_of("http: {tls_cert: a, tls_key: b}\napi: {tls_listen: ['x:y']}\n" + kLive), "x:y");
}

}  // namespace
}  // namespace rill::config
