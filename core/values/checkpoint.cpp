#include "core/values/checkpoint.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/base/hash.h"
#include "core/base/json_cursor.h"
#include "core/base/unnamed_file.h"  // directory_of

namespace replisim::core {
namespace {

constexpr char kShardMagic[4] = {'R', 'S', 'C', 'K'};
constexpr uint32_t kCheckpointVersion = 1;
// Limits a reader checks before it allocates.
constexpr uint32_t kShardMaxTensors = uint32_t(1) << 20;
constexpr uint32_t kShardMaxName = uint32_t(1) << 16;

void put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += char(uint8_t(v >> (8 * i)));
}

[[noreturn]] void output_error(const std::string& path) {
  throw OutputError(path, std::strerror(errno));
}

// Reads little-endian fields from a buffer, failing with one line naming the file.
class Reader {
 public:
  Reader(const std::string& data, const std::string& path) : data_(data), path_(path) {}
  uint64_t get(int bytes) {
    need(size_t(bytes));
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(data_[at_ + size_t(i)])) << (8 * i);
    at_ += size_t(bytes);
    return v;
  }
  std::string text(size_t size) {
    need(size);
    std::string s = data_.substr(at_, size);
    at_ += size;
    return s;
  }
  void floats(std::vector<float>& out, uint64_t count) {
    if (count > (data_.size() - at_) / 4) fail("truncated (a tensor longer than the file)");
    out.resize(size_t(count));
    std::memcpy(out.data(), data_.data() + at_, size_t(count) * 4);
    at_ += size_t(count) * 4;
  }
  size_t at() const { return at_; }
  [[noreturn]] void fail(const std::string& why) const {
    throw InputError(path_, "", "not a whole replisim checkpoint shard: " + why);
  }

 private:
  void need(size_t size) {
    if (data_.size() - at_ < size) fail("truncated at byte " + std::to_string(at_));
  }
  const std::string& data_;
  const std::string& path_;
  size_t at_ = 0;
};

std::string encode(const CheckpointShard& shard) {
  std::string out(kShardMagic, 4);
  put(out, kCheckpointVersion, 4);
  std::string hash = shard.plan_hash;
  hash.resize(16, ' ');
  out += hash;
  put(out, shard.ps, 4);
  put(out, uint64_t(shard.global_step), 8);
  put(out, shard.tensors.size(), 4);
  for (const CheckpointTensor& t : shard.tensors) {
    put(out, t.name.size(), 4);
    out += t.name;
    put(out, uint32_t(t.variable), 4);
    put(out, t.slot, 4);
    put(out, uint64_t(t.applies), 8);
    put(out, t.values.size(), 8);
    out.append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * 4);
  }
  put(out, fnv1a(kFnv1aBasis, out.data(), out.size()), 8);
  return out;
}

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot read: " + std::string(std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

size_t CheckpointShard::bytes() const {
  size_t n = 4 + 4 + 16 + 4 + 8 + 4 + 8;
  for (const CheckpointTensor& t : tensors)
    n += 4 + t.name.size() + 4 + 4 + 8 + 8 + 4 * t.values.size();
  return n;
}

void write_file_durably(const std::string& path, const std::string& data) {
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) output_error(temporary);
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = errno;
      ::close(fd);
      ::unlink(temporary.c_str());
      errno = saved;
      output_error(path);
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    errno = saved;
    output_error(path);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    errno = saved;
    output_error(path);
  }
  const int dir = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void write_checkpoint_shard(const std::string& path, const CheckpointShard& shard) {
  write_file_durably(path, encode(shard));
}

CheckpointShard read_checkpoint_shard(const std::string& path) {
  const std::string data = read_whole(path);
  Reader r(data, path);
  if (r.text(4) != std::string(kShardMagic, 4)) r.fail("bad magic");
  const uint32_t version = uint32_t(r.get(4));
  if (version != kCheckpointVersion) r.fail("version " + std::to_string(version));
  if (data.size() < 8) r.fail("too short");
  uint64_t stored = 0;
  for (int i = 0; i < 8; ++i)
    stored |= uint64_t(uint8_t(data[data.size() - 8 + size_t(i)])) << (8 * i);
  if (fnv1a(kFnv1aBasis, data.data(), data.size() - 8) != stored) {
    r.fail("checksum mismatch");
  }
  CheckpointShard shard;
  shard.plan_hash = r.text(16);
  shard.ps = uint32_t(r.get(4));
  shard.global_step = int64_t(r.get(8));
  const uint32_t count = uint32_t(r.get(4));
  if (count > kShardMaxTensors) r.fail(std::to_string(count) + " tensors");
  for (uint32_t i = 0; i < count; ++i) {
    CheckpointTensor t;
    const uint32_t name = uint32_t(r.get(4));
    if (name > kShardMaxName) r.fail("a name of " + std::to_string(name) + " bytes");
    t.name = r.text(name);
    t.variable = int32_t(uint32_t(r.get(4)));
    t.slot = uint32_t(r.get(4));
    t.applies = int64_t(r.get(8));
    r.floats(t.values, r.get(8));
    shard.tensors.push_back(std::move(t));
  }
  if (r.at() + 8 != data.size()) r.fail("bytes after the last tensor");
  return shard;
}

void write_checkpoint_index(const std::string& dir, const CheckpointIndex& index) {
  const nlohmann::json j = {{"format", "replisim-checkpoint"},
                            {"version", kCheckpointVersion},
                            {"name", index.name},
                            {"plan_hash", index.plan_hash},
                            {"global_step", index.global_step},
                            {"shards", index.shards},
                            {"bytes", index.bytes},
                            {"start_s", index.start_s},
                            {"written_s", index.written_s},
                            {"client_steps", index.client_steps}};
  write_file_durably(dir + "/" + index.name + ".index", dump_json(j, 1) + "\n");
}

CheckpointIndex read_checkpoint_index(const std::string& path) {
  const nlohmann::json j = read_json_file(path);
  const JsonCursor root(j, path);
  root.expect_object();
  if (!root.has("format") || root.at("format").as_string() != "replisim-checkpoint") {
    root.fail("not a replisim checkpoint index");
  }
  if (root.at("version").as_int(0, 1000) != kCheckpointVersion) {
    root.at("version").fail("unknown version");
  }
  CheckpointIndex index;
  index.name = root.at("name").as_string();
  index.plan_hash = root.at("plan_hash").as_string();
  index.global_step = root.at("global_step").as_int(-1, int64_t(1) << 53);
  const JsonCursor shards = root.at("shards");
  shards.expect_array();
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string name = shards.at(i).as_string();
    if (name.empty() || name.find('/') != std::string::npos) {
      shards.at(i).fail("a shard is a file name in the index's directory");
    }
    index.shards.push_back(name);
  }
  index.bytes = root.at("bytes").as_number_in(0, 1e18);
  if (root.has("start_s")) index.start_s = root.at("start_s").as_number_in(-1, 1e9);
  if (root.has("written_s")) index.written_s = root.at("written_s").as_number_in(-1, 1e9);
  if (root.has("client_steps")) {
    const JsonCursor steps = root.at("client_steps");
    steps.expect_array();
    if (steps.size() > 1u << 20) steps.fail("more than 2^20 clients");
    for (size_t i = 0; i < steps.size(); ++i) {
      index.client_steps.push_back(steps.at(i).as_int(0, int64_t(1) << 53));
    }
  }
  return index;
}

const CheckpointTensor* Checkpoint::find(int variable, uint32_t slot) const {
  for (const CheckpointShard& s : shards) {
    for (const CheckpointTensor& t : s.tensors) {
      if (t.variable == variable && t.slot == slot) return &t;
    }
  }
  return nullptr;
}

Checkpoint read_checkpoint(const std::string& dir, const std::string& name) {
  Checkpoint c;
  const std::string index_path = dir + "/" + name + ".index";
  c.index = read_checkpoint_index(index_path);
  for (const std::string& file : c.index.shards) {
    c.shards.push_back(read_checkpoint_shard(dir + "/" + file));
    if (c.shards.back().plan_hash != c.index.plan_hash) {
      throw InputError(
          dir + "/" + file, "",
          "shard of plan " + c.shards.back().plan_hash + ", the index's is " + c.index.plan_hash);
    }
  }
  return c;
}

}  // namespace replisim::core
