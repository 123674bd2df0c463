// The real backend's transport against iperf3 over loopback: the throughput replisim's mesh
// (authenticated connections, 52-byte frame headers, tensors cut into frames of at most 1 MiB and
// read in place) gets for tensors of 64 KiB to 64 MiB over 1 and 4 connections, against iperf3's
// TCP throughput with the same write size and streams, measured in the same run, alternating,
// the median of --trials trials each (iperf3 writes at most 1 MiB at a time: its -l limit). Prints
// the ratio (target: >= 0.95 for tensors of 1 MiB and
// more). Also the CPU seconds per GiB moved, both ends together, and their ratio (iperf3's client
// and server are this process's children): a cost the neighbours' load barely moves. Usage:
// bench_transport [--trials N] [--mib-per-trial M]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/resource.h>
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

// One end of the mesh: its own io_context on its own thread.
class End : public Mesh::Handler {
 public:
  End(uint32_t self, int connections) : self_(self), connections_(connections) {
    acceptor_.emplace(listen_on(io_, "127.0.0.1", 0));
    port_ = acceptor_->local_endpoint().port();
  }
  void start(const std::vector<ClusterTask>& tasks) {
    MeshConfig config;
    config.handshake = {kToken, kPlanHash, self_};
    config.tasks = tasks;
    config.peers = {1 - self_};
    config.connections_per_peer = connections_;
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
  // Sender: `count` tensors of `bytes`, at most `window` in flight. `hot`: every chunk from the
  // same buffer of one chunk (in cache, as iperf3's), not from a tensor's own memory.
  void send(size_t bytes, size_t count, size_t window, bool hot) {
    auto data = std::make_shared<std::vector<uint8_t>>(
        hot ? std::min<size_t>(bytes, kDefaultChunkBytes) : bytes, 7);
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
            mesh_->send(1 - self_, h, data->data() + (hot ? 0 : offset),
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
Rate replisim_rate(End& sender, End& receiver, size_t bytes, size_t total, bool hot) {
  const size_t count = std::max<size_t>(1, total / bytes);
  const size_t window = std::max<size_t>(2, (64u << 20) / bytes);  // 64 MiB in flight
  const double cpu0 = cpu_s(RUSAGE_SELF);
  const auto start = Clock::now();
  std::thread send([&] { sender.send(bytes, count, window, hot); });
  const Clock::time_point end = receiver.wait_bytes(count * bytes);
  send.join();
  const double moved = double(count * bytes);
  return {moved / std::chrono::duration<double>(end - start).count(),
          (cpu_s(RUSAGE_SELF) - cpu0) / (moved / double(1u << 30))};
}

// iperf3: the receiver's bytes/s (end.sum_received), client and server started here.
Rate iperf3_rate(size_t bytes, size_t total, int streams, int port) {
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
  const std::string command = "iperf3 -J -c 127.0.0.1 -p " + std::to_string(port) + " -l " +
                              std::to_string(bytes) + " -n " + std::to_string(total) + " -P " +
                              std::to_string(streams) + " 2>/dev/null";
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

}  // namespace

int main(int argc, char** argv) {
  const int trials = std::max(1, replisim::bench::int_flag(argc, argv, "--trials", 5));
  const size_t total =
      size_t(std::max(64, replisim::bench::int_flag(argc, argv, "--mib-per-trial", 1024))) << 20;
  std::printf("%-12s %5s %14s %14s %7s %12s %12s %7s\n", "tensor", "conns", "replisim MB/s",
              "iperf3 MB/s", "ratio", "replisim cpu", "iperf3 cpu", "ratio");
  int port = 25201;
  for (int connections : {1, 4}) {
    closing = false;
    End sender(0, connections), receiver(1, connections);
    const std::vector<ClusterTask> tasks = {{"ps", 0, "127.0.0.1", sender.port()},
                                            {"worker", 0, "127.0.0.1", receiver.port()}};
    sender.start(tasks);
    receiver.start(tasks);
    sender.wait_connected();
    receiver.wait_connected();
    // The last row is a control: 64 MiB tensors sent from one hot 1 MiB buffer, as iperf3 sends;
    // what it gains over the row above is memory traffic, not the transport.
    for (const auto& [bytes, hot] :
         std::vector<std::pair<size_t, bool>>{{size_t(64) << 10, false},
                                              {size_t(1) << 20, false},
                                              {size_t(4) << 20, false},
                                              {size_t(64) << 20, false},
                                              {size_t(64) << 20, true}}) {
      const size_t n = bytes < (1u << 20) ? total / 4 : total;
      std::vector<double> ours, theirs, our_cpu, their_cpu;
      for (int t = 0; t < trials; ++t) {  // alternating, so a noisy neighbour hits both
        const Rate r = replisim_rate(sender, receiver, bytes, n, hot);
        const Rate i = iperf3_rate(bytes, n, connections, port++);
        ours.push_back(r.bytes_per_s);
        our_cpu.push_back(r.cpu_s_per_gib);
        theirs.push_back(i.bytes_per_s);
        their_cpu.push_back(i.cpu_s_per_gib);
      }
      const double a = median(ours), b = median(theirs);
      const double ca = median(our_cpu), cb = median(their_cpu);
      std::printf("%-12s %5d %14.0f %14.0f %7.3f %12.3f %12.3f %7.3f\n",
                  ((bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB"
                                        : std::to_string(bytes >> 10) + " KiB") +
                   (hot ? " hot" : ""))
                      .c_str(),
                  connections, a / 1e6, b / 1e6, a / b, ca, cb, ca / cb);
      std::fflush(stdout);
    }
    closing = true;
  }
  return 0;
}
