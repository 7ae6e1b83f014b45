#include "rill/protocol/notify_callback.h"

#include <gtest/gtest.h>

#include "rill/protocol/query_string.h"

using namespace rill::protocol;

TEST(NotifyCallback, FormHasNginxRtmpFieldsThenTheClientsArguments) {
  NotifyFields f;
  f.call = "publish";
  f.addr = "10.1.2.3";
  f.clientid = "42";
  f.app = "live";
  f.flashver = "FMLE/3.0 (compatible; FMSc/1.0)";
  f.tcurl = "rtmp://host:1935/live";
  f.name = "cam1";
  f.query = "token=a%20b&call=play&addr=1.1.1.1&x";
  EXPECT_EQ(notify_form_body(f),
            "call=publish&addr=10.1.2.3&clientid=42&app=live&flashver=FMLE%2F3.0%20%28compatible%3B%20FMSc%2F1.0%29"
            "&swfurl=&tcurl=rtmp%3A%2F%2Fhost%3A1935%2Flive&pageurl=&name=cam1&type=live&token=a%20b&x=");
  // Decoded as a backend (PHP, Python) reads it: the fields are ours, the extra argument kept.
  const QueryParams form = parse_query(notify_form_body(f));
  EXPECT_EQ(*query_value(form, "call"), "publish");
  EXPECT_EQ(*query_value(form, "token"), "a b");
  int calls = 0;
  for (const auto& [k, v] : form) calls += k == "call";
  EXPECT_EQ(calls, 1);
}

TEST(NotifyCallback, AnswerInterpretation) {
  EXPECT_TRUE(interpret_notify_answer(200, "").allowed);
  EXPECT_TRUE(interpret_notify_answer(204, "").allowed);
  EXPECT_FALSE(interpret_notify_answer(200, "").rename);
  NotifyAnswer a = interpret_notify_answer(302, "other");
  EXPECT_TRUE(a.allowed);
  EXPECT_EQ(*a.rename, "other");
  EXPECT_EQ(*interpret_notify_answer(301, "other?x=1").rename, "other");
  a = interpret_notify_answer(302, "http://evil.example/auth");
  EXPECT_FALSE(a.allowed);
  EXPECT_NE(a.refusal.find("to a URL"), std::string::npos);
  a = interpret_notify_answer(302, "../etc");
  EXPECT_FALSE(a.allowed);
  EXPECT_NE(a.refusal.find("invalid Location"), std::string::npos);
  EXPECT_FALSE(interpret_notify_answer(302, "").allowed);
  a = interpret_notify_answer(403, "");
  EXPECT_FALSE(a.allowed);
  EXPECT_EQ(a.refusal, "callback answered 403");
  EXPECT_EQ(interpret_notify_answer(500, "").refusal, "callback answered 500");
  EXPECT_EQ(interpret_notify_answer(100, "").refusal, "callback answered 100");
  EXPECT_EQ(interpret_notify_answer(0, "", "timed out after 3000 ms").refusal, "callback failed: timed out after 3000 ms");
  EXPECT_EQ(interpret_notify_answer(0, "").refusal, "callback failed: no answer");
}
