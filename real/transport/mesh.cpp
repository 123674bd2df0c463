#include "real/transport/mesh.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

namespace replisim::real {
namespace {

constexpr auto kTick = std::chrono::milliseconds(100);
constexpr auto kRedialAfter = std::chrono::milliseconds(100);
// A handshake frame is small: nothing bigger is read before a peer is authenticated.
constexpr uint32_t kHandshakePayloadBytes = 256;
// Unauthenticated connections kept per connection this task expects to be dialled (and at least
// kMinPending): a flood of idle connects then costs a bounded number of descriptors.
constexpr size_t kPendingPerDialer = 4;
constexpr size_t kMinPending = 16;
constexpr auto kAcceptRetry = std::chrono::milliseconds(10);
// Hosts refusal_summary() names.
constexpr size_t kHostsNamed = 4;
// Lines logged about the refused connections of one host (the run's end sums up the rest), and
// hosts logged at all: a flood, from one address or many, costs a bounded log.
constexpr int kLinesPerHost = 3;
constexpr size_t kHostsLogged = 64;

// "127.0.0.1:5000" -> "127.0.0.1", "[::1]:5000" -> "[::1]".
std::string host_of(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", s);
  return text;
}

}  // namespace

asio::ip::tcp::acceptor listen_on(asio::io_context& io, const std::string& host, uint16_t port) {
  asio::ip::tcp::resolver resolver(io);
  const auto results =
      resolver.resolve(host, std::to_string(port), asio::ip::resolver_base::passive);
  const asio::ip::tcp::endpoint endpoint = *results.begin();
  asio::ip::tcp::acceptor acceptor(io);
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen(asio::socket_base::max_listen_connections);
  return acceptor;
}

Mesh::Mesh(asio::io_context& io, MeshConfig config, asio::ip::tcp::acceptor acceptor,
           Handler& handler)
    : io_(io),
      config_(std::move(config)),
      acceptor_(std::move(acceptor)),
      handler_(handler),
      ticker_(io) {
  for (const ClusterTask& t : config_.tasks) names_.push_back(t.name());
  config_.handshake.frame_macs = config_.frame_macs;
  const int k = std::max(1, config_.connections_per_peer);
  config_.connections_per_peer = k;
  for (uint32_t p : config_.peers) peers_[p].slots.assign(size_t(k), nullptr);
}

Mesh::~Mesh() {
  *alive_ = false;
  shutdown();
  if (reserve_fd_ >= 0) ::close(reserve_fd_);
}

std::string Mesh::peer_text(uint32_t task) const {
  return "task " + names_[task] + " (" + config_.tasks[task].address() + ")";
}

void Mesh::start() {
  connect_deadline_ = Clock::now() + seconds(config_.connect_timeout_s);
  reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  accept();
  for (auto& [peer, state] : peers_) {
    if (peer <= config_.handshake.self) continue;  // it dials this task
    for (int slot = 0; slot < config_.connections_per_peer; ++slot) dial(peer, slot);
  }
  if (all_connected()) {  // no peer at all
    connected_ = true;
    asio::post(io_, [this, alive = std::weak_ptr<bool>(alive_)] {
      if (!alive.expired() && !stopped_) handler_.on_connected();
    });
  }
  tick();
}

void Mesh::accept() {
  acceptor_.async_accept([this, alive = std::weak_ptr<bool>(alive_)](const asio::error_code& ec,
                                                                     asio::ip::tcp::socket socket) {
    if (alive.expired() || stopped_) return;
    if (ec) {
      accept_failed(ec);
      return;
    }
    auto pending = std::make_unique<Pending>();
    pending->connection = new_connection(std::move(socket));
    pending->listener = std::make_unique<HandshakeListener>(
        config_.handshake,
        [this](uint32_t task) { return task < config_.handshake.self && peers_.count(task) > 0; },
        seen_challenges_, random_nonce());
    pending->deadline = Clock::now() + seconds(config_.handshake_timeout_s);
    keep_accepted(std::move(pending));
    accept();
  });
}

void Mesh::accept_failed(const asio::error_code& ec) {
  if ((ec.value() == EMFILE || ec.value() == ENFILE) && reserve_fd_ >= 0) {
    // Out of descriptors: the reserve one takes the connection off the backlog, which is then
    // closed (otherwise every accept fails at once, again and again).
    ::close(reserve_fd_);
    reserve_fd_ = -1;
    // Non-blocking: the kernel may say EMFILE before it looks at the backlog, which can then be
    // empty, and a blocking accept would wait there for the next connection, timers and
    // heartbeats with it.
    asio::ip::tcp::socket socket(io_);
    asio::error_code again;
    acceptor_.non_blocking(true, again);
    if (!again) acceptor_.accept(socket, again);
    if (!again) {
      asio::error_code ignored;
      const auto endpoint = socket.remote_endpoint(ignored);
      const std::string remote =
          endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
      count_refusal(remote);
      log_refusal(remote, "closed a connection from " + remote + ": no descriptor left for it (" +
                              ec.message() + ")");
      socket.close(ignored);
    }
    asio::error_code ignored;
    acceptor_.non_blocking(false, ignored);
    reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  auto timer = std::make_shared<asio::steady_timer>(io_, kAcceptRetry);
  timer->async_wait([this, timer, alive = std::weak_ptr<bool>(alive_)](const asio::error_code& e) {
    if (!e && !alive.expired() && !stopped_) accept();
  });
}

size_t Mesh::max_pending_accepted() const {
  size_t dialers = 0;
  for (const auto& [peer, state] : peers_) dialers += peer < config_.handshake.self;
  return std::max(kMinPending, kPendingPerDialer * dialers * size_t(config_.connections_per_peer));
}

void Mesh::keep_accepted(std::unique_ptr<Pending> pending) {
  size_t accepted = 0;
  for (const auto& p : pending_) accepted += p->listener != nullptr;
  if (accepted >= max_pending_accepted()) {
    std::vector<size_t> where;  // the accepted ones' places in pending_, oldest first
    std::vector<PendingSource> sources;
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (!pending_[i]->listener) continue;
      where.push_back(i);
      sources.push_back(
          {host_of(pending_[i]->connection->remote()), pending_[i]->listener->heard_hello()});
    }
    const auto victim = pending_.begin() + std::ptrdiff_t(where[pending_to_drop(sources)]);
    const std::string remote = (*victim)->connection->remote();
    (*victim)->connection->close();
    pending_.erase(victim);
    count_refusal(remote);
    // A flood is logged once per host, with the address of the connection dropped.
    if (flood_logged_.insert(host_of(remote)).second) {
      log_refusal(remote, "dropped an unauthenticated connection from " + remote + ": more than " +
                              std::to_string(max_pending_accepted()) +
                              " connections waited for their handshake at once");
    }
  }
  Connection& c = *pending->connection;
  pending_.push_back(std::move(pending));
  c.start();
}

size_t pending_to_drop(const std::vector<PendingSource>& pending) {
  if (pending.empty()) throw std::invalid_argument("pending_to_drop: nothing pending");
  std::map<std::string, size_t> count;
  for (const PendingSource& p : pending) ++count[p.host];
  size_t most = 0;
  std::string host;
  for (const PendingSource& p : pending) {  // the first host, in arrival order, of the most
    if (count[p.host] > most) most = count[p.host], host = p.host;
  }
  size_t oldest = pending.size();
  for (size_t i = 0; i < pending.size(); ++i) {
    if (pending[i].host != host) continue;
    if (!pending[i].heard_hello) return i;
    if (oldest == pending.size()) oldest = i;
  }
  return oldest;
}

void Mesh::log_refusal(const std::string& remote, const std::string& line) {
  const std::string host = host_of(remote);
  auto found = lines_logged_.find(host);
  if (found == lines_logged_.end()) {
    if (lines_logged_.size() >= kHostsLogged) {
      if (lines_logged_.size() == kHostsLogged) {
        lines_logged_[""] = 0;  // said once
        handler_.on_refused("refusals from more than " + std::to_string(kHostsLogged) +
                            " hosts: those of further hosts are not logged (the end sums them up)");
      }
      return;
    }
    found = lines_logged_.emplace(host, 0).first;
  }
  const int logged = found->second++;
  if (logged < kLinesPerHost) {
    handler_.on_refused(line);
  } else if (logged == kLinesPerHost) {
    handler_.on_refused("further refusals of connections from " + host +
                        " are not logged (the end sums them up)");
  }
}

void Mesh::count_refusal(const std::string& remote) {
  ++refused_;
  if (refused_from_.size() < kHostsNamed) refused_from_.insert(host_of(remote));
}

std::string Mesh::refusal_summary() const {
  if (refused_ == 0) return "";
  std::string hosts;
  for (const std::string& h : refused_from_) hosts += (hosts.empty() ? "" : ", ") + h;
  return "refused " + std::to_string(refused_) + " connection" + (refused_ == 1 ? "" : "s") +
         " that did not authenticate as a task of this cluster (from " + hosts +
         (refused_from_.size() == kHostsNamed ? ", ..." : "") + ")";
}

void Mesh::dial(uint32_t peer, int slot) {
  if (stopped_) return;
  auto resolver = std::make_shared<asio::ip::tcp::resolver>(io_);
  const ClusterTask& task = config_.tasks[peer];
  resolver->async_resolve(
      task.host, std::to_string(task.port),
      [this, resolver, peer, slot, alive = std::weak_ptr<bool>(alive_)](
          const asio::error_code& ec, asio::ip::tcp::resolver::results_type results) {
        if (alive.expired() || stopped_) return;
        if (ec) {
          redial(peer, slot, "cannot resolve its host: " + ec.message());
          return;
        }
        auto socket = std::make_shared<asio::ip::tcp::socket>(io_);
        asio::async_connect(*socket, results,
                            [this, socket, peer, slot, alive](const asio::error_code& ec2,
                                                              const asio::ip::tcp::endpoint&) {
                              if (alive.expired() || stopped_) return;
                              if (ec2) {
                                redial(peer, slot, "cannot connect: " + ec2.message());
                                return;
                              }
                              auto pending = std::make_unique<Pending>();
                              pending->connection = new_connection(std::move(*socket));
                              pending->dialer = std::make_unique<HandshakeDialer>(
                                  config_.handshake, peer, random_nonce());
                              pending->peer = peer;
                              pending->slot = slot;
                              pending->deadline =
                                  Clock::now() + seconds(config_.handshake_timeout_s);
                              Frame hello = pending->dialer->hello();
                              hello.header.tensor = uint64_t(slot);
                              Connection& c = *pending->connection;
                              pending_.push_back(std::move(pending));
                              c.send(hello.header, hello.payload);
                              c.start();
                            });
      });
}

void Mesh::redial(uint32_t peer, int slot, const std::string& why, bool refused) {
  // A refusal in the handshake says more than the failed attempts after it (the peer may have
  // given up meanwhile): both are kept.
  (refused ? peers_[peer].last_refusal : peers_[peer].last_attempt) = why;
  if (connected_ || Clock::now() >= connect_deadline_) return;
  auto timer = std::make_shared<asio::steady_timer>(io_, kRedialAfter);
  timer->async_wait(
      [this, timer, peer, slot, alive = std::weak_ptr<bool>(alive_)](const asio::error_code& ec) {
        if (!ec && !alive.expired() && !stopped_) dial(peer, slot);
      });
}

std::shared_ptr<Connection> Mesh::new_connection(asio::ip::tcp::socket socket) {
  auto connection = std::make_shared<Connection>(std::move(socket), handler_self());
  connection->set_max_payload(kHandshakePayloadBytes);
  if (!config_.congestion_control.empty()) {
    connection->set_congestion_control(config_.congestion_control);
  }
  return connection;
}

Mesh::Pending* Mesh::pending_of(Connection& connection) {
  for (auto& p : pending_) {
    if (p->connection.get() == &connection) return p.get();
  }
  return nullptr;
}

void Mesh::refuse(Pending& pending, const std::string& why, bool tell, bool refusal) {
  std::shared_ptr<Connection> connection = pending.connection;
  if (tell && !connection->closed()) {
    // The other side learns why (its own connect-timeout line names it), then the connection
    // closes; no secret is in a refusal (plan hashes, a proof that did not match).
    FrameHeader h;
    h.type = FrameType::kError;
    h.source = config_.handshake.self;
    const std::string reason = why.substr(0, 900);
    auto copy = std::make_shared<std::string>(reason);
    connection->send(h, reinterpret_cast<const uint8_t*>(copy->data()), copy->size(), copy,
                     [connection] { connection->close(); });
  } else {
    connection->close();
  }
  if (pending.dialer) {
    redial(pending.peer, pending.slot, refusal ? peer_text(pending.peer) + " refused: " + why : why,
           refusal);
  } else {
    count_refusal(connection->remote());
    std::string line = "refused a connection from " + connection->remote() + ": " + why;
    if (pending.listener->heard_hello()) {
      // The dialer said who it is (a claim): its connect-timeout line names this too; the
      // connection's own address is the source.
      const uint32_t peer = pending.listener->peer();
      line = "refused " + peer_text(peer) + "'s connection from " + connection->remote() + ": " +
             why +
             (why.find("closed") != std::string::npos
                  ? " (after this task's answer: does it hold this cluster's token and plan?)"
                  : "");
      auto found = peers_.find(peer);
      if (found != peers_.end()) found->second.last_refusal = line;
    }
    // The same refusal again and again (a peer redialling) is logged once.
    if (line.substr(line.find(": ")) != last_refusal_logged_) {
      last_refusal_logged_ = line.substr(line.find(": "));
      log_refusal(connection->remote(), line);
    }
  }
  pending_.erase(
      std::remove_if(pending_.begin(), pending_.end(),
                     [&pending](const std::unique_ptr<Pending>& p) { return p.get() == &pending; }),
      pending_.end());
}

void Mesh::established(Pending& pending, uint32_t peer, int slot) {
  std::shared_ptr<Connection> connection = pending.connection;
  connection->peer = peer;
  connection->slot = slot;
  connection->set_max_payload(kMaxFramePayloadBytes);
  peers_[peer].slots[size_t(slot)] = connection;
  pending_.erase(
      std::remove_if(pending_.begin(), pending_.end(),
                     [&pending](const std::unique_ptr<Pending>& p) { return p.get() == &pending; }),
      pending_.end());
  if (!connected_ && all_connected()) {
    connected_ = true;
    handler_.on_connected();
  }
}

bool Mesh::all_connected() const {
  for (const auto& [peer, state] : peers_) {
    for (const auto& c : state.slots) {
      if (!c) return false;
    }
  }
  return true;
}

void Mesh::on_frame(Connection& connection, const FrameHeader& header, const uint8_t* payload) {
  if (connection.peer >= 0) {
    if (header.source != uint32_t(connection.peer) ||
        header.destination != config_.handshake.self) {
      throw FrameError("a frame from task " + std::to_string(header.source) + " to task " +
                       std::to_string(header.destination) + " on this connection");
    }
    if (header.type == FrameType::kHeartbeat) return;
    if (header.type == FrameType::kStop || header.type == FrameType::kError) {
      connection.peer_stopping = true;
    }
    handler_.on_frame(uint32_t(connection.peer), header, payload);
    return;
  }
  Pending* pending = pending_of(connection);
  if (pending == nullptr) return;
  std::string text(reinterpret_cast<const char*>(payload), header.length);
  if (header.type == FrameType::kError) {  // the other side refused this one, saying why
    for (char& c : text) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    refuse(*pending, "it refused this task, saying: " + text, false);
    return;
  }
  try {
    if (pending->dialer) {
      if (header.type == FrameType::kHelloReply) {
        const Frame auth = pending->dialer->on_hello_reply(header, text);
        connection.send(auth.header, auth.payload);
      } else {
        pending->dialer->on_auth_ok(header, text);
        if (config_.frame_macs) connection.enable_macs(pending->dialer->frame_keys());
        established(*pending, pending->peer, pending->slot);
      }
      return;
    }
    if (header.type == FrameType::kHello) {
      const int slot = int(header.tensor);
      if (header.tensor >= uint64_t(config_.connections_per_peer)) {
        throw HandshakeError("asks for connection " + std::to_string(header.tensor) + " of " +
                             std::to_string(config_.connections_per_peer));
      }
      const Frame reply = pending->listener->on_hello(header, text);
      const auto& slots = peers_[header.source].slots;
      if (slots[size_t(slot)]) {
        throw HandshakeError("task " + names_[header.source] + "'s connection " +
                             std::to_string(slot) + " is already up");
      }
      pending->slot = slot;
      connection.send(reply.header, reply.payload);
    } else {
      const Frame ok = pending->listener->on_auth(header, text);
      connection.send(ok.header, ok.payload);  // the last frame without a MAC
      if (config_.frame_macs) connection.enable_macs(pending->listener->frame_keys());
      established(*pending, pending->listener->peer(), pending->slot);
    }
  } catch (const HandshakeError& e) {
    // A hello refused names the task it claims to be: that task's connect-timeout line says why
    // (a claim, not yet proven: only a diagnosis rests on it).
    if (!pending->dialer && header.type == FrameType::kHello) {
      auto claimed = peers_.find(header.source);
      if (claimed != peers_.end()) {
        claimed->second.last_refusal =
            "refused " + peer_text(header.source) + "'s connection: " + e.what();
      }
    }
    refuse(*pending, e.what());
  }
}

uint8_t* Mesh::tensor_destination(Connection& connection, const FrameHeader& header) {
  if (connection.peer < 0) throw FrameError("a tensor before the handshake");
  return handler_.tensor_destination(uint32_t(connection.peer), header);
}

void Mesh::on_failure(Connection& connection, const std::string& why) {
  if (stopped_) return;
  if (connection.peer >= 0) {
    if (connection.peer_stopping) return;
    lose(uint32_t(connection.peer), peer_text(uint32_t(connection.peer)) + ": " + why);
    return;
  }
  // Mid-handshake: the peer may have refused this task on an earlier attempt and given up since
  // (a reset now); that refusal stays the diagnosis.
  if (Pending* pending = pending_of(connection)) refuse(*pending, why, true, false);
}

void Mesh::tick() {
  if (stopped_) return;
  const Clock::time_point now = Clock::now();
  if (!connected_ && now >= connect_deadline_) {
    for (const auto& [peer, state] : peers_) {
      const bool up = std::all_of(state.slots.begin(), state.slots.end(),
                                  [](const auto& c) { return bool(c); });
      if (up) continue;
      std::string why = state.last_refusal;
      if (!state.last_attempt.empty()) {
        why += (why.empty() ? "last: " : "; last attempt: ") + state.last_attempt;
      }
      handler_.on_failure(peer_text(peer) + " did not connect within " +
                          seconds_text(config_.connect_timeout_s) +
                          (why.empty() ? std::string() : " (" + why + ")"));
      return;
    }
  }
  for (size_t i = 0; i < pending_.size();) {
    if (now >= pending_[i]->deadline) {
      refuse(*pending_[i], "no handshake within " + seconds_text(config_.handshake_timeout_s));
      continue;  // refuse erased it
    }
    ++i;
  }
  for (auto& [peer, state] : peers_) {
    for (auto& c : state.slots) {
      if (!c || c->closed()) continue;
      if (state.lost) break;
      if (now - c->last_read() > seconds(config_.silence_timeout_s)) {
        lose(peer, peer_text(peer) + " sent nothing for " +
                       seconds_text(config_.silence_timeout_s) + ": lost");
        if (stopped_) return;
        break;
      }
      if (!c->writing() && now - c->last_write() > seconds(config_.heartbeat_every_s)) {
        FrameHeader h;
        h.type = FrameType::kHeartbeat;
        h.source = config_.handshake.self;
        h.destination = peer;
        c->send(h, nullptr, 0);
      }
    }
  }
  ticker_.expires_after(kTick);
  ticker_.async_wait([this, alive = std::weak_ptr<bool>(alive_)](const asio::error_code& ec) {
    if (!ec && !alive.expired()) tick();
  });
}

void Mesh::send(uint32_t peer, FrameHeader header, const uint8_t* data, size_t size,
                std::shared_ptr<const void> keep, std::function<void()> written, int slot) {
  auto found = peers_.find(peer);
  if (found == peers_.end()) {
    throw std::logic_error("no connection to task " + std::to_string(peer));
  }
  if (found->second.dropped) return;  // gone: nothing reaches it
  auto& slots = found->second.slots;
  const std::shared_ptr<Connection>& c = slots[size_t(slot) % slots.size()];
  if (!c) throw std::logic_error("task " + std::to_string(peer) + " is not connected");
  header.source = config_.handshake.self;
  header.destination = peer;
  c->send(header, data, size, std::move(keep), std::move(written));
}

void Mesh::send(uint32_t peer, const FrameHeader& header, const std::string& payload) {
  auto copy = std::make_shared<std::string>(payload);
  send(peer, header, reinterpret_cast<const uint8_t*>(copy->data()), copy->size(), copy);
}

void Mesh::send_on_every_slot(uint32_t peer, FrameHeader header, const std::string& payload) {
  auto found = peers_.find(peer);
  if (found == peers_.end() || found->second.dropped) return;
  header.source = config_.handshake.self;
  header.destination = peer;
  for (const auto& c : found->second.slots) {
    if (c && !c->closed()) c->send(header, payload);
  }
}

std::vector<uint32_t> Mesh::peer_tasks() const {
  std::vector<uint32_t> out;
  for (const auto& [peer, state] : peers_) {
    if (!state.dropped) out.push_back(peer);
  }
  return out;
}

void Mesh::lose(uint32_t peer, const std::string& why) {
  Peer& state = peers_[peer];
  if (state.lost) return;
  state.lost = true;
  handler_.on_peer_lost(peer, why);
}

void Mesh::drop_peer(uint32_t peer) {
  auto found = peers_.find(peer);
  if (found == peers_.end()) return;
  found->second.lost = found->second.dropped = true;
  for (auto& c : found->second.slots) {
    if (c) c->close();
  }
}

bool Mesh::dropped(uint32_t peer) const {
  auto found = peers_.find(peer);
  return found != peers_.end() && found->second.dropped;
}

int Mesh::next_slot(uint32_t peer) {
  Peer& p = peers_[peer];
  const int slot = p.next_slot;
  p.next_slot = (p.next_slot + 1) % config_.connections_per_peer;
  return slot;
}

size_t Mesh::queued_frames() const {
  size_t n = 0;
  for (const auto& [peer, state] : peers_) {
    for (const auto& c : state.slots) {
      if (c) n += c->queued_frames();
    }
  }
  return n;
}

void Mesh::flush_then(std::function<void()> done, double timeout_s) {
  flush_poll(std::make_shared<asio::steady_timer>(io_), Clock::now() + seconds(timeout_s),
             std::move(done));
}

void Mesh::flush_poll(std::shared_ptr<asio::steady_timer> timer, Clock::time_point deadline,
                      std::function<void()> done) {
  bool busy = false;
  for (const auto& [peer, state] : peers_) {
    for (const auto& c : state.slots) busy |= c && !c->closed() && c->queued_frames() > 0;
  }
  if (!busy || Clock::now() >= deadline) {
    done();
    return;
  }
  timer->expires_after(std::chrono::milliseconds(5));
  timer->async_wait([this, timer, deadline, done = std::move(done),
                     alive = std::weak_ptr<bool>(alive_)](const asio::error_code& ec) mutable {
    if (!ec && !alive.expired()) flush_poll(timer, deadline, std::move(done));
  });
}

void Mesh::shutdown() {
  if (stopped_) return;
  stopped_ = true;
  asio::error_code ec;
  ticker_.cancel();
  acceptor_.close(ec);
  for (auto& p : pending_) p->connection->close();
  pending_.clear();
  for (auto& [peer, state] : peers_) {
    for (auto& c : state.slots) {
      if (c) c->close();
    }
  }
}

}  // namespace replisim::real
