// The connections of one task to the tasks it exchanges frames with: it listens, dials (the lower
// task number dials the higher), authenticates every connection with the handshake, keeps K
// connections per peer, sends heartbeats on quiet connections and fails a peer that stays silent.
// Until every peer is connected it refuses strangers with one logged line and keeps waiting;
// after that, a peer's broken connection or bad frame is fatal (the job needs every peer).
// Strangers cannot exhaust its descriptors: unauthenticated connections are bounded (the oldest is
// dropped past a few per expected dialer), and a reserve descriptor lets it accept and close a
// connection when the process has none left. Single-threaded on its io_context.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <asio.hpp>

#include "real/cluster.h"
#include "real/transport/connection.h"
#include "real/transport/handshake.h"

namespace replisim::real {

struct MeshConfig {
  HandshakeConfig handshake;        // token, plan hash, this task's number
  std::vector<ClusterTask> tasks;   // every task of the cluster (addresses, names)
  std::vector<uint32_t> peers;      // the tasks this one exchanges frames with
  int connections_per_peer = 1;     // K (platform.transport.connections_per_peer)
  double connect_timeout_s = 30;    // every peer connected and authenticated by then
  double handshake_timeout_s = 10;  // one connection's handshake
  double heartbeat_every_s = 1;     // a heartbeat on a connection quiet this long
  double silence_timeout_s = 30;    // a peer that sends nothing this long has failed
  // TCP congestion control of every connection ("": the system's default, which runs use; the
  // transport benchmark sets one to compare like with like). A name the kernel does not offer
  // leaves the default.
  std::string congestion_control;
  // Whether frames after the handshake carry a MAC (frame_mac.h). Off: `--insecure-frames` (the
  // MACs cost about 5x of the goodput on loopback: bench_transport --mac-cost), and the transport
  // benchmark's baseline. Every task must agree: the handshake refuses a peer of the other mode.
  bool frame_macs = true;
};

// An unauthenticated connection a listener keeps: its source host, and whether it has sent a
// hello the handshake took.
struct PendingSource {
  std::string host;
  bool heard_hello = false;
};

// Which of `pending` (oldest first, not empty) a listener drops when one more arrives past its
// bound: from the host that holds the most of them (a flood from one address then displaces only
// its own connections, not a dialer's handshake from another host), the oldest that sent no hello,
// else its oldest. Throws std::invalid_argument when `pending` is empty.
size_t pending_to_drop(const std::vector<PendingSource>& pending);

class Mesh : private Connection::Handler {
 public:
  class Handler {
   public:
    virtual ~Handler() = default;
    // Every peer is connected on every slot.
    virtual void on_connected() = 0;
    // An authenticated peer's frame (heartbeats are not passed on). May throw FrameError:
    // the peer then fails with it.
    virtual void on_frame(uint32_t peer, const FrameHeader& header, const uint8_t* payload) = 0;
    // Where tensor chunk `header` from `peer` goes (see Connection::Handler).
    virtual uint8_t* tensor_destination(uint32_t peer, const FrameHeader& header) = 0;
    // Fatal: a peer failed (or never connected): why, in one line naming it.
    virtual void on_failure(const std::string& why) = 0;
    // A connected peer is gone: one of its connections broke without its saying STOP or ERROR,
    // or it stayed silent past the deadline (`why`: one line naming it). Called once per peer.
    // The handler either accepts the loss (drop_peer: a death the plan has) or fails; by
    // default it fails.
    virtual void on_peer_lost(uint32_t peer, const std::string& why) {
      (void)peer;
      on_failure(why);
    }
    // A stranger refused (not fatal): one line.
    virtual void on_refused(const std::string& line) = 0;
  };

  // `acceptor` is open and listening (run's launcher passes it in; node binds it). `handler`
  // must outlive the mesh.
  Mesh(asio::io_context& io, MeshConfig config, asio::ip::tcp::acceptor acceptor, Handler& handler);
  ~Mesh();
  void start();

  // Queues a frame to `peer` on connection `slot` (mod K). See Connection::send for `data`.
  void send(uint32_t peer, FrameHeader header, const uint8_t* data = nullptr, size_t size = 0,
            std::shared_ptr<const void> keep = {}, std::function<void()> written = {},
            int slot = 0);
  void send(uint32_t peer, const FrameHeader& header, const std::string& payload);
  // The same frame on each of the peer's connections (a stop, an error: each connection then
  // knows that the end of stream that follows is expected). Does nothing for a peer not
  // connected yet.
  void send_on_every_slot(uint32_t peer, FrameHeader header, const std::string& payload = {});
  // The peers, connected or not, but not those dropped.
  std::vector<uint32_t> peer_tasks() const;
  // Forgets a peer that is gone (Handler::on_peer_lost): its connections close, frames to it are
  // dropped, its silence is no failure.
  void drop_peer(uint32_t peer);
  bool dropped(uint32_t peer) const;
  // A slot for the next tensor to `peer` (round robin over its K connections).
  int next_slot(uint32_t peer);
  // Frames still queued to any peer.
  size_t queued_frames() const;
  // Calls `done` once every queued frame is written (or after `timeout_s`).
  void flush_then(std::function<void()> done, double timeout_s = 5);
  // Closes everything; no callback follows.
  void shutdown();
  const std::string& name_of(uint32_t task) const { return names_[task]; }
  const MeshConfig& config() const { return config_; }
  // How many connections it refused or dropped before their handshake ended, and from where, in
  // one line ("" when none): what a run says at its end.
  std::string refusal_summary() const;
  // Unauthenticated connections it keeps at once: a few per connection it expects to be dialled.
  size_t max_pending_accepted() const;

 private:
  struct Peer {
    std::vector<std::shared_ptr<Connection>> slots;  // null until established
    std::string last_refusal;  // the last handshake refused with it (either side)
    std::string last_attempt;  // why the last connection attempt failed before a handshake
    int next_slot = 0;
    bool lost = false;     // on_peer_lost was called
    bool dropped = false;  // drop_peer: gone for good
  };
  // A connection whose handshake is in progress.
  struct Pending {
    std::shared_ptr<Connection> connection;
    std::unique_ptr<HandshakeDialer> dialer;
    std::unique_ptr<HandshakeListener> listener;
    uint32_t peer = 0;  // the dialled task (dialer side)
    int slot = 0;
    Clock::time_point deadline;
  };
  void accept();
  // accept() failed: EMFILE or ENFILE take a connection off the backlog with the reserve
  // descriptor and close it; any error waits a moment before the next accept.
  void accept_failed(const asio::error_code& ec);
  // A connection this task accepted that is not authenticated yet: keeps it, dropping one of
  // them (pending_to_drop) past max_pending_accepted().
  void keep_accepted(std::unique_ptr<Pending> pending);
  // Counts a connection from `remote` refused or dropped before its handshake ended.
  void count_refusal(const std::string& remote);
  // Handler::on_refused(line) about a connection from `remote`, for the first kLinesPerHost of
  // its host (then once that the rest are not logged), and only for the first kHostsLogged hosts.
  void log_refusal(const std::string& remote, const std::string& line);
  void dial(uint32_t peer, int slot);
  void redial(uint32_t peer, int slot, const std::string& why, bool refused = false);
  void tick();
  void established(Pending& pending, uint32_t peer, int slot);
  bool all_connected() const;
  void flush_poll(std::shared_ptr<asio::steady_timer> timer, Clock::time_point deadline,
                  std::function<void()> done);
  // Ends a connection whose handshake failed; `tell`: the other side gets an ERROR frame saying
  // why first. `refusal`: a side refused the other (else the connection itself failed: for a
  // dialer a failed attempt, which does not hide a refusal heard before).
  void refuse(Pending& pending, const std::string& why, bool tell = true, bool refusal = true);
  // An established peer is gone: Handler::on_peer_lost, once.
  void lose(uint32_t peer, const std::string& why);
  Pending* pending_of(Connection& connection);
  // A connection not yet authenticated (small frames only), with the configured congestion
  // control.
  std::shared_ptr<Connection> new_connection(asio::ip::tcp::socket socket);
  // Connection::Handler
  void on_frame(Connection& connection, const FrameHeader& header, const uint8_t* payload) override;
  uint8_t* tensor_destination(Connection& connection, const FrameHeader& header) override;
  void on_failure(Connection& connection, const std::string& why) override;
  std::string peer_text(uint32_t task) const;
  Connection::Handler* handler_self() { return this; }

  asio::io_context& io_;
  MeshConfig config_;
  asio::ip::tcp::acceptor acceptor_;
  Handler& handler_;
  std::vector<std::string> names_;
  std::map<uint32_t, Peer> peers_;
  std::vector<std::unique_ptr<Pending>> pending_;
  std::set<Nonce> seen_challenges_;
  std::string last_refusal_logged_;          // the reason last logged (not the address)
  size_t refused_ = 0;                       // connections refused or dropped (refusal_summary)
  std::set<std::string> refused_from_;       // their hosts, the first few
  std::set<std::string> flood_logged_;       // hosts whose dropped connections were logged
  std::map<std::string, int> lines_logged_;  // refusal lines logged per host (log_refusal)
  int reserve_fd_ = -1;                      // a descriptor kept for accept_failed()
  asio::steady_timer ticker_;
  Clock::time_point connect_deadline_;
  bool connected_ = false;
  bool stopped_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// An IPv4/IPv6 listening socket on host:port (port 0: any free port), SO_REUSEADDR set.
// Throws std::system_error naming the address.
asio::ip::tcp::acceptor listen_on(asio::io_context& io, const std::string& host, uint16_t port);

}  // namespace replisim::real
