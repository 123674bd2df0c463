// Checkpoints of real runs: each parameter server writes its shard (every variable it holds and
// its optimizer slots, float32), the chief writes the index that makes the checkpoint whole once
// every shard is on disk. Every file is written to a temporary name, fsync'ed and renamed, so a
// checkpoint is either complete or absent. Layout: docs/real-runs.md ("Checkpoints").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace replisim::core {

// One tensor of a shard: a variable's value (slot 0) or an optimizer slot (TF's names:
// "<var>/Momentum"; "<var>/Adam" and "<var>/Adam_1" for m and v; "<var>/beta_powers" holds adam's
// beta1^t and beta2^t), with the number of updates applied to the variable.
struct CheckpointTensor {
  std::string name;
  int32_t variable = -1;  // index into Plan::variables
  uint32_t slot = 0;      // 0: the value; 1, 2, ...: optimizer state
  int64_t applies = 0;
  std::vector<float> values;
};

struct CheckpointShard {
  std::string plan_hash;     // 16 hex digits
  uint32_t ps = 0;           // the shard (Plan::ps_roles index)
  int64_t global_step = -1;  // when it holds global_step; -1 otherwise
  std::vector<CheckpointTensor> tensors;
  size_t bytes() const;  // of the file
};

// What makes a checkpoint whole: its name ("model.ckpt-3", "final"), the global step saved and
// its shards' file names (in the checkpoint's directory).
struct CheckpointIndex {
  std::string name;
  std::string plan_hash;
  int64_t global_step = 0;
  std::vector<std::string> shards;
  double bytes = 0;  // every shard's
  // When the save read the variables and when this index was written (the run's clock, s; -1:
  // not recorded), and each client graph's steps that had reached global_step's parameter server
  // (empty: not recorded): what a restart resumes from.
  double start_s = -1;
  double written_s = -1;
  std::vector<int64_t> client_steps;
};

// Writes `shard` to `path` (temporary name, fsync, rename, fsync of the directory). Throws
// OutputError naming the path.
void write_checkpoint_shard(const std::string& path, const CheckpointShard& shard);
// Throws InputError(path, "", ...) for a missing, truncated or corrupt file (bad magic,
// version, lengths, checksum).
CheckpointShard read_checkpoint_shard(const std::string& path);

// "<dir>/<name>.index" (JSON), written as the shards are.
void write_checkpoint_index(const std::string& dir, const CheckpointIndex& index);
CheckpointIndex read_checkpoint_index(const std::string& path);

// A whole checkpoint read back: the index and its shards.
struct Checkpoint {
  CheckpointIndex index;
  std::vector<CheckpointShard> shards;
  // The tensor of `variable` in `slot`, or nullptr.
  const CheckpointTensor* find(int variable, uint32_t slot = 0) const;
};
// Reads "<dir>/<name>.index" and its shards; checks they are of one plan. Throws InputError.
Checkpoint read_checkpoint(const std::string& dir, const std::string& name);

// Writes `bytes` of `data` to `path` through a temporary name, fsync and rename (and an fsync of
// the directory). Throws OutputError naming the path.
void write_file_durably(const std::string& path, const std::string& data);

}  // namespace replisim::core
