// The memory a real run keeps a GPU's values in (real/compute/device_memory.h): the host stand-in
// everywhere, the CUDA device's where there is one (the same calls, the same op sequence and the
// same values, or skipped saying why), and a real run whose GPUs keep their tensors there.
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/values/gradient_fill.h"
#include "real/compute/device_memory.h"
#include "real/compute/gpu.h"
#include "tests/real/real_support.h"

namespace replisim::real {
namespace {

using namespace testing;

std::vector<float> download_floats(DeviceMemory& m, DeviceTensor t, size_t n) {
  std::vector<float> out(n);
  m.download(t, out.data(), 4 * n);
  return out;
}

// A script of every call, as a step's values take them: a pulled variable uploaded, a gradient
// made from the pattern, a mean of two, an SGD update, a tensor downloaded.
std::vector<std::vector<float>> run_script(DeviceMemory& m) {
  const size_t n = 1000;
  const DeviceTensor table = pattern_table(m);
  const DeviceTensor variable = m.allocate(4 * n);
  const DeviceTensor gradient = m.allocate(4 * n);
  const DeviceTensor other = m.allocate(4 * n);
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = float(i % 17) / 16.0f;
  m.upload(variable, host.data(), 4 * n);
  fill_pattern(m, gradient, n, table, 12345);
  fill_pattern(m, other, n, table, 777);
  m.axpy(gradient, 1.0f, other, n);  // the sum of two towers' gradients
  m.scal(gradient, 0.5f, n);         // their mean
  m.axpy(variable, -0.25f, gradient, n);
  return {download_floats(m, variable, n), download_floats(m, gradient, n)};
}

TEST(DeviceMemory, TheStandInKeepsATensorsBytes) {
  StandInMemory m("w0/gpu0");
  EXPECT_EQ(m.name(), "w0/gpu0 (stand-in)");
  const DeviceTensor t = m.allocate(64);
  EXPECT_EQ(t.bytes, 64u);
  const std::vector<uint8_t> zeros(64, 0);
  EXPECT_EQ(m.bytes(t), zeros);  // allocated zeroed
  std::vector<uint8_t> in(40);
  for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(3 * i + 1);
  m.upload(t, in.data(), in.size());
  std::vector<uint8_t> out(40, 0);
  m.download(t, out.data(), out.size());
  EXPECT_EQ(out, in);
  m.copy(t, 40, t, 0, 24);  // within the device
  EXPECT_EQ(std::memcmp(m.bytes(t).data() + 40, in.data(), 24), 0);
  const DeviceMemoryCounts c = m.counts();
  EXPECT_EQ(c.allocations, 1);
  EXPECT_EQ(c.uploads, 1);
  EXPECT_EQ(c.downloads, 1);
  EXPECT_EQ(c.device_copies, 1);
  EXPECT_DOUBLE_EQ(c.upload_bytes, 40);
}

// The pattern made on the device is core::fill_gradient's, bit for bit, at every length and
// offset (the doubling copies' edges: 0, 1, 7, 8, 9, a power of two and more).
TEST(DeviceMemory, TheDevicesGradientPatternIsTheHostsBitForBit) {
  StandInMemory m("w0/gpu0");
  const DeviceTensor table = pattern_table(m);
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(8), size_t(9), size_t(64), size_t(1000),
                   size_t(4099)}) {
    for (int64_t g : {0, 3}) {
      for (int64_t step : {0, 5}) {
        const int64_t v = 2, op = 11;
        const DeviceTensor t = m.allocate(4 * n);
        fill_pattern(m, t, n, table, core::gradient_offset(g, step, v, op));
        std::vector<float> want(n);
        core::fill_gradient(want.data(), n, g, step, v, op);
        EXPECT_EQ(std::memcmp(m.bytes(t).data(), want.data(), 4 * n), 0) << n << " " << g;
      }
    }
  }
}

TEST(DeviceMemory, UpdatesAndPeerCopiesDoTheirArithmetic) {
  StandInMemory a("w0/gpu0"), b("w0/gpu1");
  const std::vector<std::vector<float>> got = run_script(a);
  // By hand: the mean of the two patterns, then v - 0.25 mean.
  const size_t n = 1000;
  for (size_t i = 0; i < n; ++i) {
    const float g1 = float(1 + (12345 + i) % 8) / 64, g2 = float(1 + (777 + i) % 8) / 64;
    const float mean = (g1 + g2) * 0.5f;
    EXPECT_EQ(got[1][i], mean) << i;
    EXPECT_EQ(got[0][i], float(i % 17) / 16.0f - 0.25f * mean) << i;
  }
  const DeviceTensor from = a.allocate(16), to = b.allocate(16);
  const float four[4] = {1, 2, 3, 4};
  a.upload(from, four, 16);
  b.peer_copy(to, a, from, 16);
  EXPECT_EQ(download_floats(b, to, 4), std::vector<float>({1, 2, 3, 4}));
  EXPECT_EQ(b.counts().peer_copies, 1);
}

// A call outside a tensor is refused with the device's name, not a write past its end.
TEST(DeviceMemory, ACallOutsideATensorIsRefusedNamingTheDevice) {
  StandInMemory m("w0/gpu0");
  const DeviceTensor t = m.allocate(16);
  std::vector<uint8_t> big(32);
  const auto refused = [](const std::function<void()>& call, const std::string& what) {
    try {
      call();
      ADD_FAILURE() << "not refused: " << what;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("w0/gpu0 (stand-in)"), std::string::npos) << e.what();
    }
  };
  refused([&] { m.upload(t, big.data(), 32); }, "an upload past the end");
  refused([&] { m.download(t, big.data(), 17); }, "a download past the end");
  refused([&] { m.copy(t, 8, t, 0, 9); }, "a copy past the end");
  refused([&] { m.axpy(t, 1, DeviceTensor{7, 16}, 4); }, "a tensor never allocated");
  refused([&] { m.scal(DeviceTensor{}, 1, 1); }, "no tensor");
  EXPECT_EQ(m.counts().uploads, 0);
}

// The CUDA device's memory does the same calls in the same order as the stand-in, and its values
// come out the same (float32 axpy and scal are exact on these values).
TEST(DeviceMemory, TheCudaDeviceDoesTheStandInsCallsWithItsValues) {
  std::string why;
  if (gpu_count(&why) == 0) GTEST_SKIP() << "no GPU here: " << why;
  std::unique_ptr<GpuDevice> gpu = open_gpu(0, &why);
  ASSERT_NE(gpu, nullptr) << why;
  StandInMemory stand_in("gpu0");
  gpu->memory().record(true);
  stand_in.record(true);
  EXPECT_EQ(run_script(gpu->memory()), run_script(stand_in));
  EXPECT_EQ(gpu->memory().recorded(), stand_in.recorded());
  EXPECT_TRUE(gpu->memory().on_device());
  // Larger than a pinned half (32 MiB): the double-buffered staging in both directions.
  const size_t n = size_t(20) << 20;  // 80 MB of floats
  std::vector<float> in(n), out(n, -1.0f);
  for (size_t i = 0; i < n; ++i) in[i] = float(i % 1021);
  const DeviceTensor t = gpu->memory().allocate(4 * n);
  gpu->memory().upload(t, in.data(), 4 * n);
  gpu->memory().download(t, out.data(), 4 * n);
  EXPECT_EQ(in, out);
}

TEST(DeviceMemory, APeerCopyBetweenTwoCudaDevicesKeepsTheValues) {
  std::string why;
  if (gpu_count(&why) < 2) GTEST_SKIP() << "fewer than two GPUs here: " << why;
  std::unique_ptr<GpuDevice> a = open_gpu(0, &why), b = open_gpu(1, &why);
  ASSERT_TRUE(a && b) << why;
  const std::vector<float> values = {1, 2, 3, 4, 5, 6, 7, 8};
  const DeviceTensor from = a->memory().allocate(32), to = b->memory().allocate(32);
  a->memory().upload(from, values.data(), 32);
  b->memory().peer_copy(to, a->memory(), from, 32);
  EXPECT_EQ(download_floats(b->memory(), to, 8), values);
}

// The notes of a run's tasks on what their devices' memories did, by "task device" ("worker0
// w0/gpu0"): a parameter server placed on a GPU is a task of its own beside the tower's.
struct MemoryNote {
  int64_t tensors = -1, uploads = -1, downloads = -1, peer_copies = -1, updates = -1;
};
std::map<std::string, MemoryNote> memory_notes(const core::Trace& trace) {
  std::map<std::string, MemoryNote> out;
  const std::regex line(
      R"(task (\S+) kept values in (\S+)(?: \(stand-in\)| on .*?): (\d+) tensors .* allocated once; )"
      R"((\d+) uploads .*, (\d+) downloads .*, (\d+) peer copies .*, (\d+) SGD updates on it)");
  for (const std::string& note : trace.outcome.notes) {
    std::smatch m;
    if (!std::regex_search(note, m, line)) continue;
    out[m[1].str() + " " + m[2].str()] = {std::stoll(m[3]), std::stoll(m[4]), std::stoll(m[5]),
                                          std::stoll(m[6]), std::stoll(m[7])};
  }
  return out;
}

// A two-tower worker (async, and distributed_replicated) and an in-graph model-parallel tower
// over two GPUs: each GPU keeps its
// tensors in its memory (the stand-in without a CUDA device). The tensors are allocated once (as
// many for 3 steps as for 6), every pulled variable is uploaded and every pushed gradient
// downloaded each step, and the variables the run leaves are those the gradient pattern gives, bit
// for bit: the values went through the device's memory.
TEST(DeviceMemory, ARunsGpusKeepTheirTensorsInTheirMemoryAllocatedOnce) {
  const auto two_towers = [](const std::string& strategy, int steps) {
    std::vector<nlohmann::json> machines = {
        test::machine("ps", "100 GFLOPS", {}, "10 Gbps"),
        test::machine("w0", "100 GFLOPS", {"1 TFLOPS", "1 TFLOPS"}, "10 Gbps")};
    nlohmann::json training = {{"batch_per_replica", 4},
                               {"steps", steps},
                               {"warmup_steps", 1},
                               {"replicas", {{{"towers", "w0/gpu*"}}}},
                               {"client", "w0"}};
    if (strategy == "in_graph") {  // one model-parallel tower over the two GPUs
      training["placement"] = {{{"layers", "a"}, {"device", "w0/gpu0"}},
                               {{"layers", "b"}, {"device", "w0/gpu1"}}};
    } else {
      training["ps"] = {"ps/cpu"};
    }
    if (strategy == "distributed_replicated") training["sync"] = strategy;
    const nlohmann::json s =
        test::scenario_json(machines, small_model(), training, "lv08", "100 Gbps");
    return core::compile_plan(test::parse(s), strategy == "in_graph" ? strategy : "between_graph",
                              {1});
  };
  for (const std::string strategy : {"between_graph", "in_graph", "distributed_replicated"}) {
    SCOPED_TRACE(strategy);
    std::map<std::string, MemoryNote> notes[2];
    for (int i = 0; i < 2; ++i) {
      const core::Plan plan = two_towers(strategy, 3 * (i + 1));
      const RealRun run = run_real(plan);
      notes[i] = memory_notes(run.trace);
      Expected expected(plan);
      for (int c = 0; c < int(plan.clients.size()); ++c) {
        for (int s = 0; s < plan.steps; ++s) expected.step(c, s);
      }
      expected.expect_equal(run.final);
    }
    ASSERT_EQ(notes[0].size(), 2u) << "a note per GPU";
    const std::vector<std::string> gpus =
        strategy == "in_graph" ? std::vector<std::string>{"worker0 w0/gpu0", "worker1 w0/gpu1"}
                               : std::vector<std::string>{"worker0 w0/gpu0", "worker0 w0/gpu1"};
    for (const std::string& gpu : gpus) {
      ASSERT_TRUE(notes[0].count(gpu) && notes[1].count(gpu)) << gpu;
      const MemoryNote& three = notes[0][gpu];
      const MemoryNote& six = notes[1][gpu];
      EXPECT_GT(three.tensors, 0) << gpu;
      EXPECT_EQ(three.tensors, six.tensors) << gpu;  // allocated once, whatever the steps
      // Less the pattern table's one upload.
      EXPECT_EQ(six.uploads - 1 + six.peer_copies, 2 * (three.uploads - 1 + three.peer_copies))
          << gpu;
      EXPECT_EQ(six.downloads, 2 * three.downloads) << gpu;
    }
    // Tensors reach and leave each GPU through host memory, except under distributed_replicated,
    // whose worker keeps its own copy of the variables on its first tower's GPU and hands the
    // other tower its reads and takes its gradients by peer copies. (In-graph's devices are tasks
    // of their own; an async worker's towers meet on its CPU.)
    for (const std::string& gpu : gpus) {
      EXPECT_GT(notes[0][gpu].uploads, 1) << gpu;
      EXPECT_GT(notes[0][gpu].downloads, 0) << gpu;
      if (strategy == "distributed_replicated") {
        EXPECT_GT(notes[0][gpu].peer_copies, 0) << gpu;
      } else {
        EXPECT_EQ(notes[0][gpu].peer_copies, 0) << gpu;
      }
    }
  }
}

// In-graph towers whose variables the client keeps on one of the GPUs (training.variables_on):
// the variables live in that GPU's memory, each step's applies are axpys there (one per variable
// per step), reads that other tasks take download them, and the values the run leaves are those
// of SGD on the host, bit for bit. Under momentum, whose slots stay in host memory, nothing is
// placed.
TEST(DeviceMemory, VariablesOnAGpuLiveThereAndAreUpdatedThere) {
  for (const std::string optimizer : {"sgd", "momentum"}) {
    SCOPED_TRACE(optimizer);
    std::vector<nlohmann::json> machines = {
        test::machine("w0", "100 GFLOPS", {"1 TFLOPS", "1 TFLOPS"}, "10 Gbps")};
    nlohmann::json training = {{"batch_per_replica", 4}, {"steps", 4},
                               {"warmup_steps", 1},      {"replicas", {{{"towers", "w0/gpu*"}}}},
                               {"client", "w0"},         {"variables_on", "w0/gpu0"},
                               {"optimizer", optimizer}, {"learning_rate", 0.5}};
    const nlohmann::json s =
        test::scenario_json(machines, small_model(), training, "lv08", "100 Gbps");
    const core::Plan plan = core::compile_plan(test::parse(s), "in_graph", {1});
    const RealRun run = run_real(plan);
    std::map<std::string, MemoryNote> notes = memory_notes(run.trace);
    // The variables' task, on gpu0 beside the first tower's.
    ASSERT_TRUE(notes.count("ps0 w0/gpu0"));
    const int64_t variables = 2;  // a and b
    if (optimizer == "sgd") {
      Expected expected(plan);  // SGD's updates
      for (int st = 0; st < plan.steps; ++st) expected.step(0, st);
      expected.expect_equal(run.final);
      EXPECT_EQ(notes["ps0 w0/gpu0"].updates, variables * plan.steps);
      // The pattern's table, and per variable its value and the recv its mean gradient arrives
      // in (uploaded there; the apply's axpy takes it from there).
      EXPECT_EQ(notes["ps0 w0/gpu0"].tensors, 1 + 2 * variables);
    } else {
      EXPECT_EQ(notes["ps0 w0/gpu0"].updates, 0);
    }
  }
}

}  // namespace
}  // namespace replisim::real
