// The real backend's transport against iperf3 over loopback: the throughput replisim's mesh
// (authenticated connections, 52-byte frame headers, tensors cut into frames of at most 1 MiB and
// read in place) gets for tensors of 64 KiB to 64 MiB over 1 and 4 connections, against
//   - iperf3, with the same streams (-P) and write size (-l, at most 1 MiB: iperf3's limit), which
//     sends one buffer over and over (it stays in the processor's cache), and
//   - bare TCP: a thread of blocking write()s and one of read()s in this process, no framing,
//     sending the very tensors replisim sends (64 MiB tensors come from memory, as real tensors
//     do),
// each trial alternating the three, so a noisy neighbour hits them alike. Prints the medians and
// the median of the trials' ratios (target: >= 0.95 for tensors of 1 MiB and more), and the CPU
// seconds per GiB moved, both ends together (iperf3's are this process's children): a cost the
// neighbours' load barely moves. Every connection uses the system's TCP congestion control, or
// --congestion NAME for all three (iperf3 -C). Usage:
//   bench_transport [--trials N] [--mib-per-trial M] [--congestion NAME]
//   bench_transport --profile-kib N [--trials N] [--mib-per-trial M]   (replisim alone, to profile)
//   bench_transport --mac-cost [--trials N] [--mib-per-trial M]
// --mac-cost measures what the frames' MACs (real/transport/frame_mac.h) cost: the mesh with them
// against the same mesh without them (MeshConfig::frame_macs), alternating, over 1 and 4
// connections: goodput of each, the median of the trials' ratios, and CPU seconds per GiB.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "bench/bench_flags.h"
#include "real/transport/mesh.h"

namespace {

using namespace replisim::real;

std::atomic<bool> closing{false};  // the ends are going: a closed connection is expected
using Clock = std::chrono::steady_clock;

constexpr const char* kToken = "bench-transport-token-0123456789";
constexpr const char* kPlanHash = "0123456789abcdef";

// What one trial sends: `count` tensors of `bytes` from `data` (the tensor's own memory, or, hot,
// one chunk that every chunk is sent from, as iperf3 sends its buffer).
struct Load {
  std::shared_ptr<std::vector<uint8_t>> data;
  size_t bytes = 0;
  size_t count = 0;
  bool hot = false;
  const uint8_t* chunk(size_t offset) const { return data->data() + (hot ? 0 : offset); }
};

Load make_load(size_t bytes, size_t total, bool hot) {
  Load load;
  load.bytes = bytes;
  load.count = std::max<size_t>(1, total / bytes);
  load.hot = hot;
  // Written (faulted in) before any clock starts.
  load.data = std::make_shared<std::vector<uint8_t>>(
      hot ? std::min<size_t>(bytes, kDefaultChunkBytes) : bytes, 7);
  return load;
}

// One end of the mesh: its own io_context on its own thread.
class End : public Mesh::Handler {
 public:
  End(uint32_t self, int connections, const std::string& congestion, bool macs)
      : self_(self), connections_(connections), congestion_(congestion), macs_(macs) {
    acceptor_.emplace(listen_on(io_, "127.0.0.1", 0));
    port_ = acceptor_->local_endpoint().port();
  }
  void start(const std::vector<ClusterTask>& tasks) {
    MeshConfig config;
    config.handshake = {kToken, kPlanHash, self_};
    config.tasks = tasks;
    config.peers = {1 - self_};
    config.connections_per_peer = connections_;
    config.congestion_control = congestion_;
    config.frame_macs = macs_;
    mesh_ = std::make_unique<Mesh>(io_, config, std::move(*acceptor_), *this);
    mesh_->start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~End() {
    asio::post(io_, [this] {
      mesh_->shutdown();
      io_.stop();
    });
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const { return port_; }
  void wait_connected() {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [this] { return connected_; });
  }
  // Sender: the load's tensors, at most `window` in flight.
  void send(const Load& load, size_t window) {
    const auto& data = load.data;
    const size_t bytes = load.bytes, count = load.count;
    std::atomic<size_t> done{0};
    std::promise<void> finished;
    asio::post(io_, [&, data] {
      auto next = std::make_shared<size_t>(0);
      auto pump = std::make_shared<std::function<void()>>();
      *pump = [&, data, next, pump] {
        while (*next < count && *next - done.load() < window) {
          const size_t n = (*next)++;
          const size_t chunks =
              std::max<size_t>(1, (bytes + kDefaultChunkBytes - 1) / kDefaultChunkBytes);
          const int slot = mesh_->next_slot(1 - self_);
          for (size_t i = 0; i < chunks; ++i) {
            FrameHeader h;
            h.type = FrameType::kTensor;
            h.step = int64_t(n);
            h.tensor = 1;
            h.chunk = uint32_t(i);
            h.chunks = uint32_t(chunks);
            const size_t offset = i * kDefaultChunkBytes;
            std::function<void()> written;
            if (i + 1 == chunks) {
              written = [&, pump] {
                if (++done == count) finished.set_value();
                (*pump)();
              };
            }
            mesh_->send(1 - self_, h, load.chunk(offset),
                        std::min<size_t>(kDefaultChunkBytes, bytes - offset), data, written, slot);
          }
        }
      };
      (*pump)();
    });
    finished.get_future().wait();
  }
  // Receiver: waits until `bytes` arrived; returns when the last one did.
  Clock::time_point wait_bytes(size_t bytes) {
    std::unique_lock<std::mutex> lock(mutex_);
    target_ = bytes;
    wake_.wait(lock, [&] { return received_ >= bytes; });
    received_ = 0;
    target_ = SIZE_MAX;
    return last_;
  }

 private:
  void on_connected() override {
    std::lock_guard<std::mutex> lock(mutex_);
    connected_ = true;
    wake_.notify_all();
  }
  void on_frame(uint32_t, const FrameHeader& h, const uint8_t*) override {
    if (h.type != FrameType::kTensor) return;
    std::lock_guard<std::mutex> lock(mutex_);
    received_ += h.length;
    last_ = Clock::now();
    // The waiting thread is woken once, at the end (not per frame: its wake-ups would cost CPU
    // that is the benchmark's, not the transport's).
    if (received_ >= target_) wake_.notify_all();
  }
  uint8_t* tensor_destination(uint32_t, const FrameHeader&) override { return scratch_.data(); }
  void on_failure(const std::string& why) override {
    if (closing) return;
    std::fprintf(stderr, "bench_transport: %s\n", why.c_str());
    std::exit(1);
  }
  void on_refused(const std::string& line) override {
    std::fprintf(stderr, "bench_transport: %s\n", line.c_str());
  }

  uint32_t self_;
  int connections_;
  std::string congestion_;
  bool macs_;
  asio::io_context io_;
  std::optional<asio::ip::tcp::acceptor> acceptor_;
  uint16_t port_ = 0;
  std::unique_ptr<Mesh> mesh_;
  std::thread thread_;
  std::vector<uint8_t> scratch_ = std::vector<uint8_t>(kDefaultChunkBytes);
  std::mutex mutex_;
  std::condition_variable wake_;
  bool connected_ = false;
  size_t received_ = 0;
  size_t target_ = SIZE_MAX;
  Clock::time_point last_;
};

// CPU seconds (user + system) of this process (RUSAGE_SELF) or of its waited-for children.
double cpu_s(int who) {
  rusage u{};
  ::getrusage(who, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Rate {
  double bytes_per_s = 0;
  double cpu_s_per_gib = 0;  // both ends together: a figure the neighbours' load barely moves
};

// replisim: bytes/s from the first send to the last byte received.
Rate replisim_rate(End& sender, End& receiver, const Load& load) {
  const size_t window = std::max<size_t>(2, (64u << 20) / load.bytes);  // 64 MiB in flight
  const double cpu0 = cpu_s(RUSAGE_SELF);
  const auto start = Clock::now();
  std::thread send([&] { sender.send(load, window); });
  const Clock::time_point end = receiver.wait_bytes(load.count * load.bytes);
  send.join();
  const double moved = double(load.count * load.bytes);
  return {moved / std::chrono::duration<double>(end - start).count(),
          (cpu_s(RUSAGE_SELF) - cpu0) / (moved / double(1u << 30))};
}

void set_congestion(int fd, const std::string& congestion) {
  if (congestion.empty()) return;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, congestion.data(),
                   socklen_t(congestion.size())) != 0) {
    std::fprintf(stderr, "bench_transport: the kernel offers no congestion control \"%s\"\n",
                 congestion.c_str());
    std::exit(1);
  }
}

// Bare TCP: `streams` connections between one writer thread (blocking 1 MiB writes, as iperf3's
// -l 1M; tensor i over connection i mod streams) and one reader thread (poll, then 1 MiB reads):
// single-threaded ends, as replisim's and iperf3's.
Rate bare_rate(const Load& load, int streams, const std::string& congestion) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, streams) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    std::perror("bench_transport: bare TCP listener");
    std::exit(1);
  }
  std::vector<int> out, in;
  for (int s = 0; s < streams; ++s) {
    out.push_back(::socket(AF_INET, SOCK_STREAM, 0));
    set_congestion(out.back(), congestion);
    if (::connect(out.back(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      std::perror("bench_transport: bare TCP connect");
      std::exit(1);
    }
    in.push_back(::accept(listener, nullptr, nullptr));
    if (in.back() < 0) {
      std::perror("bench_transport: bare TCP accept");
      std::exit(1);
    }
  }
  ::close(listener);
  const size_t moved = load.count * load.bytes;
  const double cpu0 = cpu_s(RUSAGE_SELF);
  const auto start = Clock::now();
  std::thread writer([&load, &out] {
    for (size_t t = 0; t < load.count; ++t) {
      const int fd = out[t % out.size()];
      for (size_t offset = 0; offset < load.bytes;) {
        const size_t piece = std::min<size_t>(kDefaultChunkBytes, load.bytes - offset);
        const ssize_t n = ::write(fd, load.chunk(offset), piece);
        if (n <= 0) std::exit(1);
        offset += size_t(n);
      }
    }
  });
  std::thread reader([&in, moved] {
    std::vector<uint8_t> buffer(kDefaultChunkBytes);
    std::vector<pollfd> fds;
    for (int fd : in) fds.push_back({fd, POLLIN, 0});
    for (size_t got = 0; got < moved;) {
      if (::poll(fds.data(), fds.size(), 10000) <= 0) std::exit(1);
      for (const pollfd& p : fds) {
        if ((p.revents & POLLIN) == 0) continue;
        const ssize_t n = ::read(p.fd, buffer.data(), buffer.size());
        if (n <= 0) std::exit(1);
        got += size_t(n);
      }
    }
  });
  writer.join();
  reader.join();
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = cpu_s(RUSAGE_SELF) - cpu0;
  for (size_t s = 0; s < out.size(); ++s) {
    ::close(out[s]);
    ::close(in[s]);
  }
  return {double(moved) / elapsed_s, cpu / (double(moved) / double(1u << 30))};
}

// iperf3: the receiver's bytes/s (end.sum_received), client and server started here.
Rate iperf3_rate(size_t bytes, size_t total, int streams, int port, const std::string& congestion) {
  const double cpu0 = cpu_s(RUSAGE_CHILDREN);
  bytes = std::min<size_t>(bytes, size_t(1) << 20);  // iperf3's largest write (-l)
  std::fflush(stdout);
  const pid_t server = ::fork();
  if (server == 0) {
    const std::string p = std::to_string(port);
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    ::execlp("iperf3", "iperf3", "-s", "-1", "-p", p.c_str(), "-B", "127.0.0.1", (char*)nullptr);
    ::_exit(127);
  }
  const std::string command =
      "iperf3 -J -c 127.0.0.1 -p " + std::to_string(port) + " -l " + std::to_string(bytes) +
      " -n " + std::to_string(total) + " -P " + std::to_string(streams) +
      (congestion.empty() ? std::string() : " -C " + congestion) + " 2>/dev/null";
  double rate = -1;
  for (int attempt = 0; attempt < 20 && rate < 0; ++attempt) {  // until the server listens
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    FILE* out = ::popen(command.c_str(), "r");
    std::string text;
    char buffer[4096];
    size_t n;
    while (out != nullptr && (n = std::fread(buffer, 1, sizeof buffer, out)) > 0) {
      text.append(buffer, n);
    }
    if (out != nullptr) ::pclose(out);
    try {
      rate = nlohmann::json::parse(text)
                 .at("end")
                 .at("sum_received")
                 .at("bits_per_second")
                 .get<double>() /
             8;
    } catch (const std::exception&) {
      rate = -1;
    }
  }
  ::kill(server, SIGTERM);
  int status = 0;
  ::waitpid(server, &status, 0);
  if (rate < 0) {
    std::fprintf(stderr, "bench_transport: iperf3 gave no result (is it installed?)\n");
    std::exit(1);
  }
  // The client (through its shell) and the server, both reaped.
  return {rate, (cpu_s(RUSAGE_CHILDREN) - cpu0) / (double(total) / double(1u << 30))};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Two connected ends of the mesh, over `connections` connections each way.
struct Pair {
  Pair(int connections, const std::string& congestion, bool macs = true)
      : sender(0, connections, congestion, macs), receiver(1, connections, congestion, macs) {
    const std::vector<ClusterTask> tasks = {{"ps", 0, "127.0.0.1", sender.port()},
                                            {"worker", 0, "127.0.0.1", receiver.port()}};
    closing = false;
    sender.start(tasks);
    receiver.start(tasks);
    sender.wait_connected();
    receiver.wait_connected();
  }
  ~Pair() { closing = true; }
  End sender, receiver;
};

std::string size_text(size_t bytes, bool hot) {
  return (bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB"
                              : std::to_string(bytes >> 10) + " KiB") +
         (hot ? " hot" : "");
}

}  // namespace

int main(int argc, char** argv) {
  const int trials = std::max(1, replisim::bench::int_flag(argc, argv, "--trials", 7));
  const size_t total =
      size_t(std::max(64, replisim::bench::int_flag(argc, argv, "--mib-per-trial", 1024))) << 20;
  std::string congestion;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--congestion") == 0) congestion = argv[i + 1];
  }
  const int profile_kib = replisim::bench::int_flag(argc, argv, "--profile-kib", 0);
  if (profile_kib > 0) {
    Pair pair(1, congestion);
    const Load load = make_load(size_t(profile_kib) << 10, total, false);
    for (int t = 0; t < trials; ++t) {
      const Rate r = replisim_rate(pair.sender, pair.receiver, load);
      std::printf("%.0f MB/s, %.3f CPU s/GiB\n", r.bytes_per_s / 1e6, r.cpu_s_per_gib);
    }
    return 0;
  }
  if (replisim::bench::has_flag(argc, argv, "--mac-cost")) {
    std::printf("%-8s %5s %13s %13s %6s   %s\n", "tensor", "conns", "with MACs", "without", "ratio",
                "CPU s/GiB (with, without)");
    for (int connections : {1, 4}) {
      Pair with(connections, congestion, true), without(connections, congestion, false);
      for (size_t bytes : {size_t(64) << 10, size_t(1) << 20, size_t(64) << 20}) {
        const Load load = make_load(bytes, bytes < (1u << 20) ? total / 4 : total, false);
        std::vector<double> a, b, ratio, a_cpu, b_cpu;
        for (int t = 0; t < trials; ++t) {  // alternating
          const Rate x = replisim_rate(with.sender, with.receiver, load);
          const Rate y = replisim_rate(without.sender, without.receiver, load);
          a.push_back(x.bytes_per_s);
          b.push_back(y.bytes_per_s);
          ratio.push_back(x.bytes_per_s / y.bytes_per_s);
          a_cpu.push_back(x.cpu_s_per_gib);
          b_cpu.push_back(y.cpu_s_per_gib);
        }
        std::printf("%-8s %5d %8.0f MB/s %8.0f MB/s %6.3f   %.3f %.3f\n",
                    size_text(bytes, false).c_str(), connections, median(a) / 1e6, median(b) / 1e6,
                    median(ratio), median(a_cpu), median(b_cpu));
        std::fflush(stdout);
      }
    }
    return 0;
  }
  std::printf("%-12s %5s %9s %9s %6s %9s %6s   %-22s %s\n", "tensor", "conns", "replisim", "iperf3",
              "ratio", "bare TCP", "ratio", "CPU s/GiB (rs iperf3 bare)", "ratio to iperf3");
  std::printf("%-12s %5s %9s %9s %6s %9s %6s\n", "", "", "MB/s", "MB/s", "", "MB/s", "");
  int port = 25201;
  for (int connections : {1, 4}) {
    Pair pair(connections, congestion);
    // The last row is a control: 64 MiB tensors sent from one hot 1 MiB buffer, as iperf3 sends;
    // what it gains over the row above is memory traffic, not the transport.
    for (const auto& [bytes, hot] :
         std::vector<std::pair<size_t, bool>>{{size_t(64) << 10, false},
                                              {size_t(1) << 20, false},
                                              {size_t(4) << 20, false},
                                              {size_t(64) << 20, false},
                                              {size_t(64) << 20, true}}) {
      const Load load = make_load(bytes, bytes < (1u << 20) ? total / 4 : total, hot);
      const size_t moved = load.count * load.bytes;
      std::vector<double> ours, theirs, bare, to_iperf3, to_bare, our_cpu, their_cpu, bare_cpu;
      for (int t = 0; t < trials; ++t) {  // alternating, so a noisy neighbour hits all three
        const Rate r = replisim_rate(pair.sender, pair.receiver, load);
        const Rate i = iperf3_rate(bytes, moved, connections, port++, congestion);
        const Rate b = bare_rate(load, connections, congestion);
        ours.push_back(r.bytes_per_s);
        theirs.push_back(i.bytes_per_s);
        bare.push_back(b.bytes_per_s);
        to_iperf3.push_back(r.bytes_per_s / i.bytes_per_s);
        to_bare.push_back(r.bytes_per_s / b.bytes_per_s);
        our_cpu.push_back(r.cpu_s_per_gib);
        their_cpu.push_back(i.cpu_s_per_gib);
        bare_cpu.push_back(b.cpu_s_per_gib);
      }
      std::printf("%-12s %5d %9.0f %9.0f %6.3f %9.0f %6.3f   %6.3f %6.3f %6.3f       %6.3f\n",
                  size_text(bytes, hot).c_str(), connections, median(ours) / 1e6,
                  median(theirs) / 1e6, median(to_iperf3), median(bare) / 1e6, median(to_bare),
                  median(our_cpu), median(their_cpu), median(bare_cpu),
                  median(our_cpu) / median(their_cpu));
      std::fflush(stdout);
    }
  }
  return 0;
}
