#include "sim/sim_channel.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <poll.h>
#include <unistd.h>

#include "core/base/json_cursor.h"
#include "core/trace/trace_format.h"

namespace replisim::sim::detail {
namespace {

constexpr size_t kRecordFrameBytes = size_t(64) << 10;
// Frames larger than this are corrupt (an outcome's JSON is at most the trace format's limit).
constexpr uint32_t kMaxFrameBytes = core::kMaxTraceMetaBytes + 64;
constexpr int kPollMs = 100;
// A 'Z' frame: the engine's and the set-up's wall times (f64), the five SharingStats counts
// (u64), then the JSON.
constexpr size_t kOutcomeHeaderBytes = 8 + 8 + 5 * 8;

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(char(uint8_t(value >> (8 * i))));
}
void put_f64(std::string& out, double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  put_le(out, bits, 8);
}
uint64_t load_le(const char* p, int bytes) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | uint8_t(p[i]);
  return value;
}
double load_f64(const char* p) {
  const uint64_t bits = load_le(p, 8);
  double value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace

void ChildChannel::string(uint32_t, const std::string& text) {
  core::encode_string_record(records_, text);
  ++strings_;
  if (records_.size() >= kRecordFrameBytes) flush_records();
}

void ChildChannel::event(const core::TraceEvent& event) {
  core::encode_event_record(records_, event, strings_);
  if (records_.size() >= kRecordFrameBytes) flush_records();
}

void ChildChannel::counter(const core::CounterSample& sample) {
  core::encode_counter_record(records_, sample, strings_);
  if (records_.size() >= kRecordFrameBytes) flush_records();
}

void ChildChannel::progress(const core::RunProgress& progress) {
  flush_records();
  std::string payload;
  put_f64(payload, progress.time_s);
  put_le(payload, uint64_t(progress.global_step), 8);
  put_le(payload, progress.steps_done.size(), 4);
  for (int64_t steps : progress.steps_done) put_le(payload, uint64_t(steps), 8);
  frame('P', payload);
}

void ChildChannel::outcome(const core::RunOutcome& outcome, double engine_wall_s,
                           double setup_wall_s, const SharingStats& sharing) {
  flush_records();
  std::string payload;
  put_f64(payload, engine_wall_s);
  put_f64(payload, setup_wall_s);
  for (int64_t n : {sharing.flows, sharing.model_flows, sharing.hand_backs, sharing.take_overs,
                    sharing.reassignments}) {
    put_le(payload, uint64_t(n), 8);
  }
  payload += core::dump_json(core::run_outcome_to_json(outcome));
  frame('Z', payload);
}

void ChildChannel::input_error(const std::string& file, const std::string& path,
                               const std::string& message) {
  frame('I', file + '\n' + path + '\n' + message);
}

void ChildChannel::failure(const std::string& message) {
  frame('E', message);
}

void ChildChannel::internal_error(const std::string& message) {
  frame('X', message);
}

void ChildChannel::flush_records() {
  if (records_.empty()) return;
  frame('R', records_);
  records_.clear();
}

void ChildChannel::frame(char type, const std::string& payload) {
  std::string header(1, type);
  put_le(header, payload.size(), 4);
  write_all(header.data(), header.size());
  write_all(payload.data(), payload.size());
}

void ChildChannel::write_all(const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("the parent closed the simulation's pipe");
    data += n;
    size -= size_t(n);
  }
}

ParentChannel::ParentChannel(int fd, std::function<bool()> cancelled,
                             std::function<void(const core::RunProgress&)> progress)
    : fd_(fd), cancelled_(std::move(cancelled)), progress_(std::move(progress)) {}

bool ParentChannel::read_exactly(char* out, size_t size) {
  while (size > 0) {
    if (cancelled_ && cancelled_()) {
      end_ = End::kCancelled;
      return false;
    }
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, kPollMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // nothing yet: ask again whether to cancel
    const ssize_t n = ready > 0 ? ::read(fd_, out, size) : -1;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out += n;
    size -= size_t(n);
  }
  return true;
}

// Reads frames until an 'R' one (its payload becomes the buffer) or the last one.
bool ParentChannel::next_frame() {
  for (;;) {
    char header[5];
    if (!read_exactly(header, sizeof header)) {
      if (end_ == End::kOpen) end_ = End::kClosed;
      return false;
    }
    const char type = header[0];
    const uint32_t size = uint32_t(load_le(header + 1, 4));
    if (size > kMaxFrameBytes) {
      end_ = End::kCorrupt;
      return false;
    }
    std::string payload(size, '\0');
    if (!read_exactly(payload.data(), size)) {
      if (end_ == End::kOpen) end_ = End::kClosed;
      return false;
    }
    switch (type) {
      case 'R':
        if (payload.empty()) continue;
        buffer_ = std::move(payload);
        return true;
      case 'P': {
        if (size < 20) break;
        core::RunProgress progress;
        progress.time_s = load_f64(payload.data());
        progress.global_step = int64_t(load_le(payload.data() + 8, 8));
        const uint32_t n = uint32_t(load_le(payload.data() + 16, 4));
        if (size != 20 + 8 * uint64_t(n)) break;
        for (uint32_t i = 0; i < n; ++i) {
          progress.steps_done.push_back(int64_t(load_le(payload.data() + 20 + 8 * i, 8)));
        }
        if (progress_) progress_(progress);
        continue;
      }
      case 'Z': {
        if (size < kOutcomeHeaderBytes) break;
        engine_wall_s_ = load_f64(payload.data());
        setup_wall_s_ = load_f64(payload.data() + 8);
        int64_t* figures[] = {&sharing_.flows, &sharing_.model_flows, &sharing_.hand_backs,
                              &sharing_.take_overs, &sharing_.reassignments};
        for (size_t k = 0; k < 5; ++k)
          *figures[k] = int64_t(load_le(payload.data() + 16 + 8 * k, 8));
        final_ = payload.substr(kOutcomeHeaderBytes);
        end_ = End::kOutcome;
        return false;
      }
      case 'I':
      case 'E':
      case 'X':
        final_ = std::move(payload);
        end_ = type == 'I' ? End::kInputError : type == 'E' ? End::kFailure : End::kInternalError;
        return false;
      default:
        break;
    }
    end_ = End::kCorrupt;
    return false;
  }
}

ParentChannel::int_type ParentChannel::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  if (end_ != End::kOpen || !next_frame()) return traits_type::eof();
  setg(buffer_.data(), buffer_.data(), buffer_.data() + buffer_.size());
  return traits_type::to_int_type(*gptr());
}

}  // namespace replisim::sim::detail
