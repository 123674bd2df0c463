// All-reduce as every backend runs it (Plan::collective; docs/allreduce.md): Horovod's
// coordinator (horovod/common/controller.cc: a tensor is ready once every rank has submitted it;
// each cycle the ready tensors are packed into fusion buffers, one collective each) and the
// named algorithm as chunk transfers between the ranks (SMPI's one-file-per-algorithm over
// point-to-point sends, src/smpi/colls/allreduce/). The backend moves the bytes (and, on a real
// run, the values) through a CollectiveHost; this class decides what moves when, in the same
// order on both clocks.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/backend/trace_recorder.h"
#include "core/plan/plan.h"

namespace replisim::core {

// One step of a rank's program on one channel: it sends chunks [send_first, send_first +
// chunk_count) of its buffer to rank `send_to` and receives chunks [recv_first, recv_first +
// chunk_count) from rank `recv_from`, adding them into its own (`reduce`) or replacing its own
// (a gather or broadcast). Either side may be absent (-1). The values sent are the rank's after
// its previous step; the step is over once its send is delivered and its receive has arrived.
struct CollectiveStep {
  int send_to = -1;
  int send_first = -1;
  int recv_from = -1;
  int recv_first = -1;
  int chunk_count = 1;
  bool reduce = false;
  int peer_step = -1;  // a send: the index of the step of send_to's channel that receives it
  // The phase it belongs to (its span's name in the trace): 0 the whole all-reduce; hierarchical
  // 1 the reduce-scatter inside the machine, 2 the all-reduce across machines, 3 the all-gather.
  uint8_t phase = 0;
};

// An algorithm's transfers for a buffer cut into `chunks` equal chunks (collective_chunk's
// ranges): per rank and channel, its steps in order. Channels run concurrently (NCCL's channels,
// the double binary tree's two trees); a rank is done when every channel of its program is.
struct CollectiveProgram {
  int chunks = 0;
  int channels = 0;
  std::vector<std::vector<std::vector<CollectiveStep>>> steps;  // [rank][channel][step]
};

// Element range [first, end) of chunk `i` of a buffer of `elements` cut into `chunks`: the first
// elements % chunks chunks hold one element more.
std::pair<int64_t, int64_t> collective_chunk(int64_t elements, int chunks, int i);

// Ring all-reduce (Patarasuk and Yuan 2009; Horovod and NCCL's ring): N - 1 reduce-scatter steps
// then N - 1 all-gather steps, each moving one chunk of S/N per rank to the next rank. `channels`
// rings each carry 1/channels of the buffer. 1 rank: no steps.
CollectiveProgram ring_program(int ranks, int channels = 1);
// Double binary tree (NCCL 2.4, Sanders, Speck and Traeff 2009): two binary trees over the ranks,
// each carrying half the buffer, the second the mirror of the first (ranks numbered from the
// other end) so that most ranks are a leaf in one tree; per tree a reduce up to the root, then a
// broadcast down, each of the half's `pipeline` chunks in turn.
CollectiveProgram tree_program(int ranks, int pipeline = 4);
// Horovod's hierarchical all-reduce (HOROVOD_HIERARCHICAL_ALLREDUCE; NCCLHierarchicalAllreduce):
// a ring reduce-scatter among the ranks of each machine, then a ring all-reduce of each shard
// across machines among the ranks holding it (one ring per local rank), then a ring all-gather
// inside each machine. `machine_of_rank`: every machine must hold the same number of ranks
// (throws InputError otherwise, naming the counts).
CollectiveProgram hierarchical_program(const std::vector<int>& machine_of_rank);
// By name (CollectiveSpec::algorithm).
CollectiveProgram collective_program(const std::string& algorithm,
                                     const std::vector<int>& machine_of_rank, int channels);

// A fused all-reduce the coordinator formed: the tensors (indices of the kAllReduce ops in a
// rank's graph order, the same in every rank's graph) packed in this order into one buffer.
struct CollectiveResponse {
  int64_t id = -1;  // numbered from 0 in the run
  int64_t step = 0;
  std::vector<int> tensors;
  double bytes = 0;
  std::vector<int> ranks;  // the live ranks taking part, in rank order
  double formed_s = 0;     // the cycle that formed it
};

// One chunk transfer: step `step` of rank `from`'s channel `channel` in collective `id`, received
// by step `recv_step` of rank `to`'s channel.
struct CollectiveChunk {
  int64_t id = -1;
  int from = -1;
  int to = -1;
  int channel = 0;
  int step = 0;
  int recv_step = 0;
  double bytes = 0;
};

// What the collectives need of a backend. Calls come from the thread or actor that runs the
// step loop, never recursively into Collectives except where said.
class CollectiveHost {
 public:
  virtual ~CollectiveHost() = default;
  virtual double now_s() const = 0;
  // Calls `work` at the host's time at_s (>= now_s()).
  virtual void at(double at_s, std::function<void()> work) = 0;
  // Sends `chunk` (its chunks' values: CollectiveStep::send_first... of the sender's step): the
  // host calls Collectives::sent(chunk) once its bytes have left, and Collectives::arrived(chunk)
  // where the receiver runs once they are in (in either order).
  virtual void send_chunk(const CollectiveResponse& r, const CollectiveChunk& chunk) = 0;
  // Rank `rank` finished receiving step `step` of channel `channel` of `r`: a backend that
  // keeps values adds or copies the chunks now (CollectiveStep::reduce), in program order.
  virtual void apply_chunk(const CollectiveResponse& /*r*/, int /*rank*/, int /*channel*/,
                           int /*step*/) {}
  // Whether the host may carry all of `r` at once instead of its steps (the simulator's fast
  // ring); asked when `r` starts. Then the ranks wait for one another (every rank here), and once
  // the last has begun, carry_whole(r) says whether it does (nothing else shares the ring's
  // links now): true, and the host calls Collectives::whole_done(r.id) when done; false, and
  // the ranks run their steps.
  virtual bool can_carry_whole(const CollectiveResponse& /*r*/) { return false; }
  virtual bool carry_whole(const CollectiveResponse& /*r*/) { return false; }
  // Rank `rank`'s part of `r` is done: its tensors' kAllReduce ops complete (a backend that
  // keeps values divides the sums by the ranks first: Horovod's average).
  virtual void reduced(int rank, const CollectiveResponse& r) = 0;
  // A real run's ranks live in several processes: a rank's readiness goes to the coordinator's
  // (Collectives::coordinator_ready there) and the coordinator's responses to every process
  // (Collectives::start there). False (the simulator): one Collectives holds every rank, and a
  // response starts after the negotiation's modelled time (negotiation_s).
  virtual bool distributed() const { return false; }
  virtual void tell_coordinator(int /*rank*/, int64_t /*step*/, int /*tensor*/) {}
  virtual void announce(const CollectiveResponse& /*r*/) {}
};

class Collectives {
 public:
  // `local_ranks`: the ranks whose clients this host runs (all of them in the simulator);
  // `coordinator`: whether rank 0's coordinator runs here. `plan`, `host` and `recorder` (may be
  // null) outlive it. Throws InputError for a hierarchical plan whose machines hold different
  // numbers of ranks.
  Collectives(const Plan& plan, CollectiveHost& host, TraceRecorder* recorder,
              const std::vector<int>& local_ranks, bool coordinator);

  int rank_of_client(int c) const { return rank_of_client_[size_t(c)]; }
  int client_of_rank(int rank) const { return plan_.collective.ranks[size_t(rank)]; }
  // The kAllReduce op of tensor `tensor` in rank `rank`'s graph.
  int op_of_tensor(int rank, int tensor) const {
    return ops_of_rank_[size_t(rank)][size_t(tensor)];
  }
  const CollectiveProgram& program() const { return *program_; }
  // The program a collective among `ranks` (CollectiveResponse::ranks) runs, positions being
  // indices into `ranks`: the plan's algorithm over every rank, or over the survivors of an
  // elastic job (a ring when they are spread unevenly for hierarchical). Cached; the reference
  // lives as long as this object.
  const CollectiveProgram& program_for(const std::vector<int>& ranks);
  // Horovod's negotiation of one cycle (the simulator's model of it): the ranks' ready bits
  // reduced to the coordinator and its answer broadcast, ceil(log2 N) steps each way at the
  // transport's step latency (Horovod's response cache: an MPI/Gloo allreduce of a bit vector).
  double negotiation_s() const { return negotiation_s_; }

  // Client c's kAllReduce op `op` was dispatched in its step `step`: its tensor is ready.
  void ready(int c, int op, int64_t step);
  // (The trace's NEGOTIATE_ALLREDUCE span of a rank and collective runs from when the buffer's
  // last tensor was ready there, or the rank's previous collective ended if later, to the
  // collective's start there: Horovod's timeline draws one per tensor from its submission.)
  // The coordinator's side of ready() (a real run: from the rank's process).
  void coordinator_ready(int rank, int64_t step, int tensor);
  // A response the coordinator announced begins for the ranks here.
  void start(const CollectiveResponse& r);
  // Transfers' completions (CollectiveHost::send_chunk).
  void sent(const CollectiveChunk& chunk);
  void arrived(const CollectiveChunk& chunk);
  // CollectiveHost::carry_whole's completion.
  void whole_done(int64_t id);
  // A job restart: every collective in progress is forgotten, the ranks start afresh.
  void reset();
  // Elastic (Horovod Elastic, whose state is committed after every step: its
  // CommitStateCallback's batches_per_commit defaults to 1): rank `rank` died. Every surviving
  // rank's step in progress fails with it (Horovod raises HorovodInternalError in the rank's
  // next collective), so everything under way here is dropped (roll_back) and nothing forms
  // before the rendezvous ends, CollectiveSpec::rendezvous_s from now (or a later death's). The
  // host then rolls every survivor back to the lowest live rank's last commit (Horovod's
  // state.sync() broadcasts rank 0's) and resumes them. Returns the rendezvous's end; a rank
  // known dead changes nothing.
  double rank_died(int rank);
  // A rollback here (a death, or a real run's survivor told of one by the coordinator): every
  // collective under way and every submission is forgotten, and ids below `first_id` are
  // ignored from now on (their late chunks and announcements); the dead stay dead.
  void roll_back(int64_t first_id);
  // The id the next collective formed here gets (a rollback's first_id).
  int64_t next_id() const { return next_id_; }
  bool rank_alive(int rank) const { return alive_[size_t(rank)]; }
  // The samples one update applies: the live ranks' batches (Plan::batch_of_replica: a rank's
  // index is its replica's). An elastic job that lost ranks applies fewer.
  int live_samples_per_step() const;
  // Why training stalls (the report's stall line): the collective waiting, the ranks it waits
  // for; empty when none waits.
  std::string waiting_for() const;
  // Collectives begun so far, and of them carried whole (tests, the run's notes).
  int64_t formed() const { return next_id_; }
  int64_t carried_whole() const { return carried_whole_; }

 private:
  struct RankState {                                  // one local rank's progress in one collective
    int position = -1;                                // its index in the response's ranks
    std::vector<int> step;                            // per channel: its step in progress
    std::vector<std::vector<uint8_t>> sent, arrived;  // per channel and step
    int channels_left = 0;
    bool begun = false;
    bool done = false;
    double begun_s = 0;
    double phase_begun_s = 0;
    uint8_t phase = 0;
  };
  struct Running {
    CollectiveResponse response;
    std::shared_ptr<const CollectiveProgram> program;  // over the response's ranks
    std::map<int, RankState> ranks;                    // the local ranks taking part
    int local_left = 0;
    int whole_begun = 0;
    bool whole = false;
  };

  void schedule_tick();
  bool abandoned(int64_t id) const { return id < abandoned_below_ || abandoned_ids_.count(id) > 0; }
  void tick();
  void submit(int rank, int64_t step, int tensor);
  void check_complete(const std::pair<int64_t, int>& key);
  void begin_next(int rank);
  void begin_rank(Running& run, int rank);
  // The rank's channels start their steps (after the launch cost).
  void launch_rank(Running& run, int rank);
  void post_step(Running& run, int rank, int channel);
  void try_finish_step(Running& run, int rank, int channel);
  void rank_done(int64_t id, int rank);
  void record_phase(const Running& run, int rank, const RankState& state, double end_s);
  std::shared_ptr<const CollectiveProgram> shared_program_for(const std::vector<int>& ranks);
  double step_latency_s(int from, int to) const;
  std::string phase_name(uint8_t phase) const;

  const Plan& plan_;
  CollectiveHost& host_;
  TraceRecorder* recorder_;
  std::shared_ptr<const CollectiveProgram> program_;  // over every rank
  std::map<std::vector<int>, std::shared_ptr<const CollectiveProgram>> survivor_programs_;
  std::vector<int> rank_of_client_;
  std::vector<int> machine_of_rank_;
  std::vector<bool> local_;
  std::vector<bool> alive_;
  bool coordinator_ = false;
  double negotiation_s_ = 0;
  // Per rank, its kAllReduce ops in graph order (tensor t is ops_of_rank_[r][t] in every rank's
  // graph), each tensor's bytes, and per client its ops' tensors (-1: none).
  std::vector<std::vector<int>> ops_of_rank_;
  std::vector<double> tensor_bytes_;
  std::vector<std::vector<int>> tensor_of_op_;
  std::vector<std::vector<double>> ready_s_;  // per rank and tensor: when it was submitted
  // The coordinator: per (step, tensor) the ranks that submitted it; tensors ready everywhere in
  // readiness order; whether a cycle is scheduled.
  std::map<std::pair<int64_t, int>, std::vector<bool>> submitted_;
  std::vector<std::pair<int64_t, int>> pending_;
  bool tick_scheduled_ = false;
  int64_t next_id_ = 0;
  // Collectives announced and not done here; per rank its queue of ids and the one in progress;
  // chunks that arrived before their collective was announced here; abandoned ones (abandoned())
  // ignore their late transfers.
  std::map<int64_t, Running> running_;
  std::vector<std::deque<int64_t>> queue_;
  std::vector<int64_t> current_;
  std::vector<double> rank_free_s_;  // per rank: when its last collective ended here
  // Per rank: the step of its last reduction here and the tensors reduced in that step.
  std::vector<std::pair<int64_t, std::vector<bool>>> reduced_;
  std::map<int64_t, std::vector<CollectiveChunk>> early_;
  int64_t abandoned_below_ = 0;      // a rollback dropped every id below
  std::set<int64_t> abandoned_ids_;  // formed with a rank known dead here
  int64_t carried_whole_ = 0;
  double rendezvous_until_s_ = 0;  // elastic: no collective forms before
  uint64_t epoch_ = 0;             // a rollback invalidates the timers of the earlier epoch
};

}  // namespace replisim::core
