// GPU compute on CUDA (REPLISIM_WITH_CUDA): cuBLAS SGEMMs on one stream per device, timed by CUDA
// events, copies through pinned host memory. The CUDA runtime is linked statically and finds the
// driver at run time; cuBLAS (hundreds of MB) is loaded only when a GPU is opened. A machine
// without a GPU, driver or cuBLAS runs the CPU engine (gpu_count and open_gpu say why).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "real/compute/device_memory.h"
#include "real/compute/gpu.h"

namespace replisim::real {
namespace {

std::string cuda_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) throw std::runtime_error(what + ": " + cuda_text(e));
}

void check(cublasStatus_t s, const std::string& what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(what + ": cuBLAS status " + std::to_string(int(s)));
  }
}

// The cuBLAS calls the engine makes, from the library loaded at run time (the toolkit's major
// version's soname first: libcublas.so.13 for CUDA 13).
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasSaxpy_v2) saxpy = nullptr;
  decltype(&cublasSscal_v2) sscal = nullptr;
};

const Cublas* load_cublas(std::string* why_not) {
  static std::once_flag once;
  static Cublas cublas;
  static std::string error;
  std::call_once(once, [] {
    const std::string versioned = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* library = ::dlopen(versioned.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) library = ::dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      error = "cannot load cuBLAS (" + versioned + "): " + ::dlerror();
      return;
    }
    cublas.create = reinterpret_cast<decltype(cublas.create)>(::dlsym(library, "cublasCreate_v2"));
    cublas.destroy =
        reinterpret_cast<decltype(cublas.destroy)>(::dlsym(library, "cublasDestroy_v2"));
    cublas.set_stream =
        reinterpret_cast<decltype(cublas.set_stream)>(::dlsym(library, "cublasSetStream_v2"));
    cublas.sgemm = reinterpret_cast<decltype(cublas.sgemm)>(::dlsym(library, "cublasSgemm_v2"));
    cublas.saxpy = reinterpret_cast<decltype(cublas.saxpy)>(::dlsym(library, "cublasSaxpy_v2"));
    cublas.sscal = reinterpret_cast<decltype(cublas.sscal)>(::dlsym(library, "cublasSscal_v2"));
    if (!cublas.create || !cublas.destroy || !cublas.set_stream || !cublas.sgemm || !cublas.saxpy ||
        !cublas.sscal) {
      error = versioned + " lacks the cuBLAS v2 calls";
    }
  });
  if (!error.empty()) {
    if (why_not != nullptr) *why_not = error;
    return nullptr;
  }
  return &cublas;
}

// A running op's tiles between two looks at its stop flag: at most 64 x 8192^3 x 2 FLOP (70
// TFLOP, about a second at an H100's float32 rate).
constexpr int64_t kTilesBetweenStops = 64;

// Copies larger than this go through the pinned buffer in pieces: 64 MiB.
constexpr size_t kStagingBytes = size_t(64) << 20;

// The device's memory (device_memory.h): cudaMalloc'd tensors; uploads and downloads on a stream
// of their own each, through two halves of a pinned buffer in turn (the host's memcpy of one
// piece beside the DMA of the other, as TF's GPU device overlaps its staging); copies, axpy and
// scal on the compute stream (cuBLAS on the device's handle); peer copies on the upload stream.
class CudaMemory : public DeviceMemory {
 public:
  // Streams and pinned buffers are made here; `compute` and `handle` are the device's. Throws
  // std::runtime_error naming the call.
  CudaMemory(int ordinal, const Cublas& cublas, cudaStream_t compute, cublasHandle_t handle,
             std::string name)
      : ordinal_(ordinal),
        cublas_(cublas),
        compute_(compute),
        handle_(handle),
        name_(std::move(name)) {
    try {
      for (Direction* d : {&up_, &down_}) {
        check(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking),
              where("cudaStreamCreate"));
        check(cudaMallocHost(&d->pinned, 2 * kHalfBytes), where("cudaMallocHost"));
        for (cudaEvent_t& e : d->done) {
          check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), where("cudaEventCreate"));
        }
      }
    } catch (...) {
      release();
      throw;
    }
  }
  ~CudaMemory() override { release(); }
  std::string name() const override { return name_; }
  bool on_device() const override { return true; }

 protected:
  int do_allocate(size_t bytes) override {
    check(cudaSetDevice(ordinal_), where("cudaSetDevice"));
    void* p = nullptr;
    check(cudaMalloc(&p, std::max<size_t>(bytes, 4)), where("cudaMalloc"));
    check(cudaMemsetAsync(p, 0, bytes, compute_), where("cudaMemset"));
    check(cudaStreamSynchronize(compute_), where("cudaStreamSynchronize"));
    std::lock_guard<std::mutex> lock(mutex_);
    tensors_.push_back(p);
    return int(tensors_.size()) - 1;
  }
  void do_upload(int to, const void* host, size_t bytes) override {
    std::lock_guard<std::mutex> lock(up_.mutex);  // one copy at a time through its halves
    check(cudaSetDevice(ordinal_), where("cudaSetDevice"));
    char* device = static_cast<char*>(tensor(to));
    const char* from = static_cast<const char*>(host);
    size_t piece_index = 0;
    for (size_t at = 0; at < bytes; at += kHalfBytes, ++piece_index) {
      const size_t half = piece_index % 2, length = std::min(kHalfBytes, bytes - at);
      char* staging = static_cast<char*>(up_.pinned) + half * kHalfBytes;
      // The DMA of the piece before last read this half: wait for it before overwriting.
      if (piece_index >= 2) check(cudaEventSynchronize(up_.done[half]), where("cudaEventSync"));
      std::memcpy(staging, from + at, length);
      check(cudaMemcpyAsync(device + at, staging, length, cudaMemcpyHostToDevice, up_.stream),
            where("cudaMemcpyAsync"));
      check(cudaEventRecord(up_.done[half], up_.stream), where("cudaEventRecord"));
    }
    check(cudaStreamSynchronize(up_.stream), where("cudaStreamSynchronize"));
  }
  void do_download(int from, void* host, size_t bytes) override {
    std::lock_guard<std::mutex> lock(down_.mutex);  // one copy at a time through its halves
    check(cudaSetDevice(ordinal_), where("cudaSetDevice"));
    const char* device = static_cast<const char*>(tensor(from));
    char* to = static_cast<char*>(host);
    // Piece i's DMA is queued before piece i - 1 is copied out of its half.
    size_t previous_at = 0, previous_length = 0, piece_index = 0;
    const auto copy_out = [&](size_t half, size_t at, size_t length) {
      check(cudaEventSynchronize(down_.done[half]), where("cudaEventSync"));
      std::memcpy(to + at, static_cast<char*>(down_.pinned) + half * kHalfBytes, length);
    };
    for (size_t at = 0; at < bytes; at += kHalfBytes, ++piece_index) {
      const size_t half = piece_index % 2, length = std::min(kHalfBytes, bytes - at);
      check(cudaMemcpyAsync(static_cast<char*>(down_.pinned) + half * kHalfBytes, device + at,
                            length, cudaMemcpyDeviceToHost, down_.stream),
            where("cudaMemcpyAsync"));
      check(cudaEventRecord(down_.done[half], down_.stream), where("cudaEventRecord"));
      if (piece_index >= 1) copy_out(1 - half, previous_at, previous_length);
      previous_at = at;
      previous_length = length;
    }
    if (piece_index >= 1) copy_out((piece_index - 1) % 2, previous_at, previous_length);
  }
  void do_copy(int to, size_t to_offset, int from, size_t from_offset, size_t bytes) override {
    check(cudaSetDevice(ordinal_), where("cudaSetDevice"));
    check(cudaMemcpyAsync(static_cast<char*>(tensor(to)) + to_offset,
                          static_cast<const char*>(tensor(from)) + from_offset, bytes,
                          cudaMemcpyDeviceToDevice, compute_),
          where("cudaMemcpyAsync"));
    check(cudaStreamSynchronize(compute_), where("cudaStreamSynchronize"));
  }
  void do_peer_copy(int to, DeviceMemory& source, int from, size_t bytes) override {
    auto& other = static_cast<CudaMemory&>(source);
    check(cudaSetDevice(ordinal_), where("cudaSetDevice"));
    std::lock_guard<std::mutex> lock(up_.mutex);  // its stream
    if (other.ordinal_ != ordinal_) enable_peer_access(other.ordinal_);
    check(cudaMemcpyPeerAsync(tensor(to), ordinal_, other.tensor(from), other.ordinal_, bytes,
                              up_.stream),
          where("cudaMemcpyPeerAsync"));
    check(cudaStreamSynchronize(up_.stream), where("cudaStreamSynchronize"));
  }
  void do_axpy(int y, float alpha, int x, size_t n) override {
    check(cudaSetDevice(ordinal_), where("cudaSetDevice"));
    for (size_t at = 0; at < n; at += kBlasPiece) {
      const int length = int(std::min(kBlasPiece, n - at));
      check(cublas_.saxpy(handle_, length, &alpha, static_cast<const float*>(tensor(x)) + at, 1,
                          static_cast<float*>(tensor(y)) + at, 1),
            where("cublasSaxpy"));
    }
    check(cudaStreamSynchronize(compute_), where("cudaStreamSynchronize"));
  }
  void do_scal(int y, float alpha, size_t n) override {
    check(cudaSetDevice(ordinal_), where("cudaSetDevice"));
    for (size_t at = 0; at < n; at += kBlasPiece) {
      const int length = int(std::min(kBlasPiece, n - at));
      check(cublas_.sscal(handle_, length, &alpha, static_cast<float*>(tensor(y)) + at, 1),
            where("cublasSscal"));
    }
    check(cudaStreamSynchronize(compute_), where("cudaStreamSynchronize"));
  }

 private:
  // Halves of each direction's pinned buffer: 32 MiB.
  static constexpr size_t kHalfBytes = size_t(32) << 20;
  // cuBLAS's int element counts: at most 2^30 elements a call.
  static constexpr size_t kBlasPiece = size_t(1) << 30;
  struct Direction {
    cudaStream_t stream = nullptr;
    void* pinned = nullptr;
    cudaEvent_t done[2] = {nullptr, nullptr};
    std::mutex mutex;  // held through a copy: callers on several threads take turns
  };
  void* tensor(int id) {
    std::lock_guard<std::mutex> lock(mutex_);
    return tensors_[size_t(id)];
  }
  // Where the pair allows it, once per peer (cudaErrorPeerAccessAlreadyEnabled is fine).
  void enable_peer_access(int peer) {
    int can = 0;
    check(cudaDeviceCanAccessPeer(&can, ordinal_, peer), where("cudaDeviceCanAccessPeer"));
    if (!can) return;
    const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();  // clears it
      return;
    }
    check(e, where("cudaDeviceEnablePeerAccess"));
  }
  std::string where(const char* call) const {
    return std::string(call) + " on CUDA device " + std::to_string(ordinal_);
  }
  void release() {
    cudaSetDevice(ordinal_);
    for (void* p : tensors_) cudaFree(p);
    tensors_.clear();
    for (Direction* d : {&up_, &down_}) {
      if (d->stream != nullptr) cudaStreamSynchronize(d->stream);
      for (cudaEvent_t& e : d->done) {
        if (e != nullptr) cudaEventDestroy(e);
        e = nullptr;
      }
      if (d->pinned != nullptr) cudaFreeHost(d->pinned);
      if (d->stream != nullptr) cudaStreamDestroy(d->stream);
      d->stream = nullptr;
      d->pinned = nullptr;
    }
  }

  int ordinal_;
  const Cublas& cublas_;
  cudaStream_t compute_;
  cublasHandle_t handle_;
  std::string name_;
  Direction up_, down_;
  std::mutex mutex_;  // guards tensors_
  std::vector<void*> tensors_;
};

class CudaDevice : public GpuDevice {
 public:
  // Throws std::runtime_error naming the call and the device.
  CudaDevice(int ordinal, const Cublas& cublas) : ordinal_(ordinal), cublas_(cublas) {
    try {
      open();
    } catch (...) {
      release();
      throw;
    }
  }
  ~CudaDevice() override { release(); }

  // Each GEMM as tiles of at most max_n_ rows, columns and reduction (row-major C = A B is
  // column-major C^T = B^T A^T: cuBLAS gets n, m and B before A), between two CUDA events on the
  // stream: their elapsed time is the GPU's own (not the host's wait for it).
  // The stream is synchronised every kTilesBetweenStops tiles, where `stop` is read, so that a
  // cancelled op ends within that many tiles rather than after all it queued.
  ComputeResult execute(const std::vector<GemmRun>& gemms, int,
                        const std::atomic<bool>* stop) override {
    check(cudaSetDevice(ordinal_), where("cudaSetDevice"));
    const float one = 1.0f, zero = 0.0f;
    check(cudaEventRecord(started_, stream_), where("cudaEventRecord"));
    double done = 0;
    int64_t queued = 0;
    for (const GemmRun& g : gemms) {
      const std::vector<GemmTile> tiles = gemm_tiles(g.m, g.n, max_n_, 1);
      for (int64_t i = 0; i < g.count; ++i) {
        for (const GemmTile& t : tiles) {
          for (int64_t depth = 0; depth < g.k; depth += max_n_) {
            if (++queued % kTilesBetweenStops == 0) {
              check(cudaStreamSynchronize(stream_), where("cudaStreamSynchronize"));
              if (stop != nullptr && stop->load(std::memory_order_relaxed)) return {done, -1};
            }
            const int piece = int(std::min<int64_t>(max_n_, g.k - depth));
            check(cublas_.sgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, int(t.cols), int(t.rows), piece,
                                &one, b_, int(t.cols), a_, piece, depth == 0 ? &zero : &one, c_,
                                int(t.cols)),
                  where("cublasSgemm"));
            done += 2.0 * double(t.rows) * double(t.cols) * double(piece);
          }
        }
      }
    }
    check(cudaEventRecord(ended_, stream_), where("cudaEventRecord"));
    check(cudaEventSynchronize(ended_), where("cudaEventSynchronize"));
    float elapsed_ms = 0;
    check(cudaEventElapsedTime(&elapsed_ms, started_, ended_), where("cudaEventElapsedTime"));
    return {done, double(elapsed_ms) / 1e3};
  }

  std::vector<GemmRun> square_gemms(double flop) const override {
    return gpu_gemm_shapes(flop, max_n_);
  }

  DeviceMemory& memory() override { return *memory_; }
  void to_device(size_t bytes) override { copy(bytes, cudaMemcpyHostToDevice); }
  void to_host(size_t bytes) override { copy(bytes, cudaMemcpyDeviceToHost); }
  std::string description() const override { return description_; }

 private:
  void open() {
    check(cudaSetDevice(ordinal_), where("cudaSetDevice"));
    cudaDeviceProp props{};
    check(cudaGetDeviceProperties(&props, ordinal_), where("cudaGetDeviceProperties"));
    description_ = std::string(props.name) + " (device " + std::to_string(ordinal_) + ")";
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), where("cudaStreamCreate"));
    check(cublas_.create(&handle_), where("cublasCreate"));
    check(cublas_.set_stream(handle_, stream_), where("cublasSetStream"));
    check(cudaEventCreate(&started_), where("cudaEventCreate"));
    check(cudaEventCreate(&ended_), where("cudaEventCreate"));
    // Three n x n float matrices for the largest GEMM (up to 8192) that takes at most a quarter of
    // the free memory.
    size_t free_bytes = 0, total_bytes = 0;
    check(cudaMemGetInfo(&free_bytes, &total_bytes), where("cudaMemGetInfo"));
    while (max_n_ > 128 && 3.0 * 4.0 * double(max_n_) * max_n_ > 0.25 * double(free_bytes)) {
      max_n_ /= 2;
    }
    const size_t matrix = size_t(max_n_) * size_t(max_n_) * sizeof(float);
    for (float** m : {&a_, &b_, &c_}) check(cudaMalloc(m, matrix), where("cudaMalloc"));
    check(cudaMemsetAsync(a_, 0, matrix, stream_), where("cudaMemset"));
    check(cudaMemsetAsync(b_, 0, matrix, stream_), where("cudaMemset"));
    check(cudaMalloc(&scratch_, kStagingBytes), where("cudaMalloc"));
    check(cudaMallocHost(&pinned_, kStagingBytes), where("cudaMallocHost"));
    check(cudaStreamSynchronize(stream_), where("cudaStreamSynchronize"));
    memory_ = std::make_unique<CudaMemory>(ordinal_, cublas_, stream_, handle_, description_);
  }

  void release() {
    memory_.reset();  // before the stream and handle it uses
    cudaSetDevice(ordinal_);
    if (handle_ != nullptr) cublas_.destroy(handle_);
    for (float* m : {a_, b_, c_}) {
      if (m != nullptr) cudaFree(m);
    }
    if (scratch_ != nullptr) cudaFree(scratch_);
    if (pinned_ != nullptr) cudaFreeHost(pinned_);
    if (started_ != nullptr) cudaEventDestroy(started_);
    if (ended_ != nullptr) cudaEventDestroy(ended_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    started_ = ended_ = nullptr;
    handle_ = nullptr;
    a_ = b_ = c_ = nullptr;
    scratch_ = pinned_ = nullptr;
    stream_ = nullptr;
  }

  std::string where(const char* call) const {
    return std::string(call) + " on CUDA device " + std::to_string(ordinal_);
  }

  void copy(size_t bytes, cudaMemcpyKind kind) {
    check(cudaSetDevice(ordinal_), where("cudaSetDevice"));
    for (size_t left = bytes; left > 0;) {
      const size_t piece = std::min(left, kStagingBytes);
      if (kind == cudaMemcpyHostToDevice) {
        check(cudaMemcpyAsync(scratch_, pinned_, piece, kind, stream_), where("cudaMemcpyAsync"));
      } else {
        check(cudaMemcpyAsync(pinned_, scratch_, piece, kind, stream_), where("cudaMemcpyAsync"));
      }
      left -= piece;
    }
    check(cudaStreamSynchronize(stream_), where("cudaStreamSynchronize"));
  }

  int ordinal_;
  const Cublas& cublas_;
  std::string description_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t started_ = nullptr, ended_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  int max_n_ = 8192;
  float *a_ = nullptr, *b_ = nullptr, *c_ = nullptr;
  void* scratch_ = nullptr;
  void* pinned_ = nullptr;
  std::unique_ptr<CudaMemory> memory_;
};

}  // namespace

int gpu_count(std::string* why_not) {
  // No driver at all (a machine without a GPU): say so, rather than the runtime's "driver
  // insufficient".
  if (void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL); driver != nullptr) {
    ::dlclose(driver);
  } else {
    if (why_not != nullptr) *why_not = "no CUDA driver on this machine (no libcuda.so.1)";
    return 0;
  }
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why_not != nullptr) *why_not = "no usable CUDA device (" + cuda_text(e) + ")";
    return 0;
  }
  if (count == 0 && why_not != nullptr) *why_not = "no CUDA device on this machine";
  return count;
}

std::unique_ptr<GpuDevice> open_gpu(int ordinal, std::string* why_not) {
  static std::mutex mutex;  // CUDA's per-thread current device is set while opening
  std::lock_guard<std::mutex> lock(mutex);
  const int count = gpu_count(why_not);
  if (count == 0) return nullptr;
  const Cublas* cublas = load_cublas(why_not);
  if (cublas == nullptr) return nullptr;
  try {
    return std::make_unique<CudaDevice>(ordinal % count, *cublas);
  } catch (const std::exception& e) {
    if (why_not != nullptr) *why_not = e.what();
    return nullptr;
  }
}

}  // namespace replisim::real
