#include "real/calibrate/microbench.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/backend/backend.h"
#include "core/model/model.h"
#include "core/values/optimizer.h"
#include "real/backend/launcher.h"
#include "real/compute/cpu_engine.h"
#include "real/compute/gpu.h"
#include "real/isolate/netns.h"

namespace replisim::real::calibrate {
namespace {

using Clock = std::chrono::steady_clock;
using core::apply_gradient_descent;

double elapsed_s(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Repeats `once` (which returns the work it did) for about `seconds`; the rate of each repeat.
template <typename F>
std::vector<double> rates(double seconds, F once, const std::function<bool()>& cancelled) {
  std::vector<double> out;
  const Clock::time_point begin = Clock::now();
  do {
    if (cancelled && cancelled()) break;
    const Clock::time_point t = Clock::now();
    const double work = once();
    const double s = elapsed_s(t);
    if (s > 0) out.push_back(work / s);
  } while (elapsed_s(begin) < seconds || out.size() < 3);
  return out;
}

}  // namespace

std::vector<double> sgemm_flop_per_s(int busy_cores, double seconds, int windows,
                                     const std::function<bool()>& cancelled) {
  configure_blas();
  busy_cores = std::max(1, busy_cores);
  windows = std::max(1, windows);
  // 64 blocks of 128 (268 MFLOP, a few milliseconds) per repeat.
  const double flop = 64 * 2.0 * kGemmBlock * kGemmBlock * kGemmBlock;
  const double window_s = seconds / windows;
  // Per window: the rates of the repeats (of every thread) that ended in it.
  std::vector<std::vector<double>> per_window(static_cast<size_t>(windows));
  std::mutex mutex;
  const Clock::time_point begin = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < busy_cores; ++t) {
    threads.emplace_back([&] {
      std::vector<std::pair<size_t, double>> mine;
      for (;;) {
        if (cancelled && cancelled()) break;
        const Clock::time_point t0 = Clock::now();
        const double work = execute_flop(flop, 1);
        const double s = elapsed_s(t0);
        const double at_s = elapsed_s(begin);
        if (at_s >= seconds && !mine.empty()) break;
        if (s > 0)
          mine.emplace_back(std::min(size_t(windows - 1), size_t(at_s / window_s)), work / s);
      }
      const std::lock_guard<std::mutex> lock(mutex);
      for (const auto& [w, rate] : mine) per_window[w].push_back(rate);
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<double> out;
  for (const std::vector<double>& w : per_window) {
    if (!w.empty()) out.push_back(median(w));
  }
  return out;
}

double sgd_apply_s_per_param(double seconds, const std::function<bool()>& cancelled) {
  // 32 Mi floats (128 MiB each for the variable and the gradient): out of any cache, as a PS's
  // variables and the gradients that just arrived are.
  const size_t n = 32u << 20;
  std::vector<float> var(n, 1.0f), grad(n, 0.5f);
  const std::vector<double> per_s = rates(
      seconds,
      [&] {
        apply_gradient_descent(var.data(), grad.data(), n, 0.01f);
        return double(n);
      },
      cancelled);
  return per_s.empty() ? 0 : 1.0 / median(per_s);
}

std::vector<GemmRun> gpu_reference_gemms() {
  const core::ModelPreset* preset = core::find_model_preset("resnet50");
  const core::Model model = preset->build({});
  std::vector<GemmRun> runs;
  for (const core::Layer& layer : model.layers) {
    const core::LayerGemm& g = layer.gemm;
    const int64_t rows = g.rows_per_sample * kGpuReferenceBatch;
    runs.push_back({rows, g.n, g.k, 1});  // forward
    runs.push_back({rows, g.k, g.n, 1});  // input gradient
    runs.push_back({g.k, g.n, rows, 1});  // weight gradient
  }
  return runs;
}

double gpu_sgemm_flop_per_s(double seconds, const std::function<bool()>& cancelled) {
  std::string why_not;
  const std::unique_ptr<GpuDevice> gpu = open_gpu(0, &why_not);
  if (!gpu) return 0;
  const std::vector<GemmRun> gemms = gpu_reference_gemms();
  gpu->execute(gemms, 1);  // warm up: cuBLAS's handle, the first kernels of each shape
  return median(rates(
      seconds, [&gpu, &gemms] { return gpu->execute(gemms, 1).flop; }, cancelled));
}

namespace {

// Connects to `port` at `host` (from the calling thread's network namespace).
int connect_to(const std::string& host, uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw core::BackendError("calibrate: cannot connect to " + host + ": " + why);
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

bool exchange(int fd, bool first) {
  char byte = 1;
  if (first && ::write(fd, &byte, 1) != 1) return false;
  if (::read(fd, &byte, 1) != 1) return false;
  return first || ::write(fd, &byte, 1) == 1;
}

}  // namespace

double tcp_one_way_latency_s(bool shaped) {
  std::unique_ptr<isolate::ShapedNetwork> net;
  int listener = -1;
  uint16_t port = 0;
  std::string host = "127.0.0.1";
  if (shaped) {
    net = std::make_unique<isolate::ShapedNetwork>(
        std::vector<isolate::NicShape>{{"a", 125e6, 125e6}, {"b", 125e6, 125e6}});
    listener = net->listen(0, &port);
    host = net->address(0);
  } else {
    listener = launch::listen_loopback(&port);
  }
  constexpr int kRoundTrips = 200;
  std::thread server([listener] {
    const int fd = ::accept(listener, nullptr, nullptr);
    if (fd < 0) return;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (int i = 0; i < kRoundTrips && exchange(fd, false); ++i) {
    }
    ::close(fd);
  });
  std::vector<double> rtts;
  std::string error;
  // The client, in machine b's namespace when shaped (setns moves only this thread).
  std::thread client([&] {
    try {
      if (net && ::setns(net->namespace_fd(1), CLONE_NEWNET) != 0) {
        error = std::string("setns: ") + std::strerror(errno);
        return;
      }
      const int fd = connect_to(host, port);
      for (int i = 0; i < kRoundTrips; ++i) {
        const Clock::time_point t = Clock::now();
        if (!exchange(fd, true)) break;
        rtts.push_back(elapsed_s(t));
      }
      ::close(fd);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  client.join();
  if (!error.empty()) ::shutdown(listener, SHUT_RDWR);
  server.join();
  ::close(listener);
  if (!error.empty()) throw core::BackendError(error);
  return median(rtts) / 2;
}

double copy_bytes_per_s(double seconds, const std::function<bool()>& cancelled) {
  const size_t bytes = 64u << 20;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  return median(rates(
      seconds,
      [&] {
        std::memcpy(b.data(), a.data(), bytes);
        std::swap(a, b);
        return double(bytes);
      },
      cancelled));
}

}  // namespace replisim::real::calibrate
