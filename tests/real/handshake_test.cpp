// Mutual authentication over the cluster token: the happy path, and every refusal.
#include "real/transport/handshake.h"

#include "real/transport/mesh.h"

#include <gtest/gtest.h>

namespace replisim::real {
namespace {

constexpr const char* kPlan = "0123456789abcdef";

struct Pair {
  HandshakeConfig dialer_config{"secret token", kPlan, 2};
  HandshakeConfig listener_config{"secret token", kPlan, 5};
  std::set<Nonce> seen;
};

// Runs the four messages; returns the first error ("" when both sides are done).
std::string shake(Pair& p, const std::function<void(Frame&, int)>& tamper = nullptr) {
  HandshakeDialer dialer(p.dialer_config, 5, random_nonce());
  HandshakeListener listener(
      p.listener_config, [](uint32_t task) { return task < 8; }, p.seen, random_nonce());
  try {
    Frame f = dialer.hello();
    if (tamper) tamper(f, 0);
    Frame reply = listener.on_hello(f.header, f.payload);
    if (tamper) tamper(reply, 1);
    Frame auth = dialer.on_hello_reply(reply.header, reply.payload);
    if (tamper) tamper(auth, 2);
    Frame ok = listener.on_auth(auth.header, auth.payload);
    if (tamper) tamper(ok, 3);
    dialer.on_auth_ok(ok.header, ok.payload);
  } catch (const HandshakeError& e) {
    return e.what();
  }
  EXPECT_TRUE(dialer.done() && listener.done());
  EXPECT_EQ(listener.peer(), 2u);
  // Each side's send key is the other's receive key; the two directions differ.
  const FrameKeys d = dialer.frame_keys(), l = listener.frame_keys();
  EXPECT_EQ(d.send, l.receive);
  EXPECT_EQ(d.receive, l.send);
  EXPECT_NE(d.send, d.receive);
  return "";
}

void expect_refused(const std::string& error, const std::string& needle) {
  EXPECT_NE(error.find(needle), std::string::npos) << "error: " << error;
}

TEST(Handshake, BothSidesProveTheTokenWithoutSendingIt) {
  Pair p;
  std::string wire;
  EXPECT_EQ(shake(p, [&wire](Frame& f, int) { wire += f.payload; }), "");
  EXPECT_EQ(wire.find("secret token"), std::string::npos);
}

TEST(Handshake, AWrongTokenIsRefusedOnBothSides) {
  Pair dialer_wrong;
  dialer_wrong.dialer_config.token = "guess";
  expect_refused(shake(dialer_wrong), "does not hold this cluster's token");
  Pair listener_wrong;
  listener_wrong.listener_config.token = "guess";
  expect_refused(shake(listener_wrong), "does not hold this cluster's token");
}

// The listener proves nothing, and says nothing of its plan, to a dialer that has not proved it
// holds the token (issue 37: any peer obtained a proof for a challenge of its choosing).
TEST(Handshake, TheListenerProvesItselfOnlyAfterTheDialer) {
  Pair p;
  HandshakeListener listener(
      p.listener_config, [](uint32_t task) { return task < 8; }, p.seen, random_nonce());
  HandshakeDialer honest(p.dialer_config, 5, random_nonce());
  const Frame hello = honest.hello();
  const Frame reply = listener.on_hello(hello.header, hello.payload);
  EXPECT_EQ(reply.payload.size(), sizeof(Nonce));  // a challenge, no proof, no plan hash
  EXPECT_EQ(reply.payload.find(kPlan), std::string::npos);
  // A guesser's proof (and another plan's hash) gets a refusal that names no plan.
  Frame guess = honest.on_hello_reply(reply.header, reply.payload);
  guess.payload = std::string("fedcba9876543210") + std::string(32, 'x');
  try {
    listener.on_auth(guess.header, guess.payload);
    ADD_FAILURE() << "a guessed proof was accepted";
  } catch (const HandshakeError& e) {
    expect_refused(e.what(), "does not hold this cluster's token");
    EXPECT_EQ(std::string(e.what()).find(kPlan), std::string::npos) << e.what();
  }
  // A forged acceptance does not finish the dialer.
  Pair q;
  expect_refused(shake(q,
                       [](Frame& f, int k) {
                         if (k == 3) f.payload[20] ^= 1;
                       }),
                 "does not hold this cluster's token");
}

// --insecure-frames must be given to every task or none: a listener refuses a dialer of the other
// mode, naming the flag.
TEST(Handshake, FramesWithAndWithoutMacsDoNotMix) {
  Pair p;
  p.dialer_config.frame_macs = false;
  expect_refused(shake(p), "sends frames without MACs, this task with them (--insecure-frames");
  Pair q;
  q.listener_config.frame_macs = false;
  expect_refused(shake(q), "sends frames with MACs, this task without them");
  Pair both;
  both.dialer_config.frame_macs = both.listener_config.frame_macs = false;
  EXPECT_EQ(shake(both), "");
}

TEST(Handshake, AnotherPlanIsRefusedNamingBothHashes) {
  Pair p;
  p.dialer_config.plan_hash = "fedcba9876543210";
  expect_refused(shake(p), "plan hash fedcba9876543210, this task's 0123456789abcdef");
}

TEST(Handshake, UnknownTasksAndMisaddressedHellosAreRefused) {
  Pair p;
  p.dialer_config.self = 9;  // the listener accepts tasks below 8
  expect_refused(shake(p), "says it is task 9, which does not connect to this task");
  Pair q;
  expect_refused(shake(q,
                       [](Frame& f, int k) {
                         if (k == 0) f.header.destination = 4;
                       }),
                 "addressed to task 4, this is task 5");
}

TEST(Handshake, ReplayedOrTamperedMessagesAreRefused) {
  Pair p;
  Frame recorded;
  EXPECT_EQ(shake(p,
                  [&recorded](Frame& f, int k) {
                    if (k == 0) recorded = f;
                  }),
            "");
  // The same hello again (its challenge already used).
  HandshakeListener again(
      p.listener_config, [](uint32_t) { return true; }, p.seen, random_nonce());
  try {
    again.on_hello(recorded.header, recorded.payload);
    ADD_FAILURE() << "a replayed hello was accepted";
  } catch (const HandshakeError& e) {
    expect_refused(e.what(), "replays a challenge");
  }
  // A proof recorded from one session does not open another: the listener's challenge differs.
  Pair q;
  Frame proof;
  shake(q, [&proof](Frame& f, int k) {
    if (k == 2) proof = f;
  });
  HandshakeDialer dialer(q.dialer_config, 5, random_nonce());
  HandshakeListener listener(
      q.listener_config, [](uint32_t) { return true; }, q.seen, random_nonce());
  const Frame hello = dialer.hello();
  listener.on_hello(hello.header, hello.payload);
  try {
    listener.on_auth(proof.header, proof.payload);
    ADD_FAILURE() << "a replayed proof was accepted";
  } catch (const HandshakeError& e) {
    expect_refused(e.what(), "does not hold this cluster's token");
  }
  // Truncated and out-of-turn messages.
  Pair r;
  expect_refused(shake(r,
                       [](Frame& f, int k) {
                         if (k == 1) f.payload.resize(10);
                       }),
                 "bytes where 32 were due");
  Pair s;
  expect_refused(shake(s,
                       [](Frame& f, int k) {
                         if (k == 2) f.header.type = FrameType::kHello;
                       }),
                 "expected frame type \"auth\", got hello");
}

// A review of issue 37's change: every stranger's hello entered the set of seen challenges, which
// grew by about 80 bytes a hello without bound. A challenge is kept only with an accepted proof.
TEST(Handshake, AStrangersHellosLeaveNothingBehind) {
  Pair p;
  for (int i = 0; i < 1000; ++i) {
    HandshakeListener listener(
        p.listener_config, [](uint32_t task) { return task < 8; }, p.seen, random_nonce());
    HandshakeDialer stranger(p.dialer_config, 5, random_nonce());
    const Frame hello = stranger.hello();
    const Frame reply = listener.on_hello(hello.header, hello.payload);
    if (i % 2 == 0) continue;  // it goes quiet, or it guesses a proof
    Frame guess = stranger.on_hello_reply(reply.header, reply.payload);
    guess.payload.back() ^= 1;
    EXPECT_THROW(listener.on_auth(guess.header, guess.payload), HandshakeError);
  }
  EXPECT_TRUE(p.seen.empty()) << p.seen.size();
  EXPECT_EQ(shake(p), "");
  EXPECT_EQ(p.seen.size(), 1u);
}

// The listener's bound on unauthenticated connections drops from the host holding the most of
// them, one without a hello first: a flood from one address does not evict a dialer's handshake in
// progress from another.
TEST(Handshake, AFloodDisplacesOnlyItsOwnConnections) {
  std::vector<PendingSource> pending = {{"10.0.0.2", true}};  // a dialer mid-handshake
  for (int i = 0; i < 15; ++i) pending.push_back({"10.0.0.66", i % 2 == 0});
  EXPECT_EQ(pending_to_drop(pending), 2u);  // the flood's oldest without a hello
  for (auto& p : pending) p.heard_hello = true;
  EXPECT_EQ(pending_to_drop(pending), 1u);  // else the flood's oldest
  // Two hosts with as many: the first in arrival order gives one up.
  EXPECT_EQ(pending_to_drop({{"a", true}, {"b", false}, {"b", true}, {"a", true}}), 0u);
  EXPECT_EQ(pending_to_drop({{"a", true}}), 0u);
  EXPECT_THROW(pending_to_drop({}), std::invalid_argument);
}

}  // namespace
}  // namespace replisim::real
