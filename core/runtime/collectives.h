// All-reduce as every backend runs it (Plan::collective; docs/allreduce.md): Horovod's
// coordinator (horovod/common/controller.cc: a tensor is ready once every rank has submitted it;
// each cycle the ready tensors are packed into fusion buffers, one collective each) and the
// named algorithm as chunk transfers between the ranks (SMPI's one-file-per-algorithm over
// point-to-point sends, src/smpi/colls/allreduce/). The backend moves the bytes (and, on a real
// run, the values) through a CollectiveHost; this class decides what moves when, in the same
// order on both clocks.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
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

// What the collectives need of a backend. Calls come from the thread or actor that runs the
// step loop, never recursively into Collectives except where said.
class CollectiveHost {
 public:
  virtual ~CollectiveHost() = default;
  virtual double now_s() const = 0;
  // Calls `work` at the host's time at_s (>= now_s()).
  virtual void at(double at_s, std::function<void()> work) = 0;
  // Step `step` of rank `from`'s channel `channel` in collective `r` sends `bytes` (its chunks,
  // CollectiveStep::send_first...) to rank `to`: the host calls Collectives::sent(r.id, from,
  // channel, step) when they have left and are delivered, and Collectives::arrived(r.id, to,
  // channel, step) at the receiver.
  virtual void send_chunk(const CollectiveResponse& r, int from, int to, int channel, int step,
                          double bytes) = 0;
  // Rank `rank` finished receiving step `step` of channel `channel` of `r`: a backend that
  // keeps values adds or copies the chunks now (CollectiveStep::reduce), in program order.
  virtual void apply_chunk(const CollectiveResponse& /*r*/, int /*rank*/, int /*channel*/,
                           int /*step*/) {}
  // Carries all of `r` at once instead of its steps (the simulator's fast ring where nothing
  // else shares its links): true when it will call Collectives::whole_done(r.id) when done.
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
  const CollectiveProgram& program() const { return program_; }
  // Horovod's negotiation of one cycle (the simulator's model of it): the ranks' ready bits
  // reduced to the coordinator and its answer broadcast, ceil(log2 N) steps each way at the
  // transport's step latency (Horovod's response cache: an MPI/Gloo allreduce of a bit vector).
  double negotiation_s() const { return negotiation_s_; }

  // Client c's kAllReduce op `op` was dispatched in its step `step`: its tensor is ready.
  void ready(int c, int op, int64_t step);
  // The coordinator's side of ready() (a real run: from the rank's process).
  void coordinator_ready(int rank, int64_t step, int tensor);
  // A response the coordinator announced begins for the ranks here.
  void start(const CollectiveResponse& r);
  // Transfers' completions (CollectiveHost::send_chunk).
  void sent(int64_t id, int rank, int channel, int step);
  void arrived(int64_t id, int rank, int channel, int step);
  // CollectiveHost::carry_whole's completion.
  void whole_done(int64_t id);
  // A job restart: every collective in progress is forgotten, the ranks start afresh.
  void reset();
  // Elastic: rank `rank` died; the collectives it was in stall until the others have re-formed
  // the ring (CollectiveSpec::rendezvous_s), then the survivors' ranks go on without it. Returns
  // the time they go on.
  double rank_died(int rank);
  bool rank_alive(int rank) const { return alive_[size_t(rank)]; }
  // Why training stalls (the report's stall line): the collective waiting, the ranks it waits
  // for; empty when none waits.
  std::string waiting_for() const;
  // Collectives begun so far (tests).
  int64_t formed() const { return next_id_; }

 private:
  struct RankState {  // one rank's progress in one response
    std::vector<int> step;                          // per channel: its step in progress
    std::vector<std::vector<uint8_t>> sent, arrived;  // per channel and step
    int channels_left = 0;
    bool begun = false;
    double begun_s = 0;
  };
  struct Running {
    CollectiveResponse response;
    std::map<int, RankState> ranks;  // the local ranks taking part
    int local_left = 0;
    bool whole = false;
  };

  void tick();
  void schedule_tick();
  void begin_next(int rank);
  void begin_rank(Running& run, int rank);
  void advance(Running& run, int rank, int channel);
  void post_send(Running& run, int rank, int channel);
  void rank_done(Running& run, int rank);
  double step_latency_s(int from, int to) const;

  const Plan& plan_;
  CollectiveHost& host_;
  TraceRecorder* recorder_;
  CollectiveProgram program_;
  std::vector<int> rank_of_client_;
  std::vector<int> machine_of_rank_;
  std::vector<bool> local_;
  std::vector<bool> alive_;
  bool coordinator_ = false;
  double negotiation_s_ = 0;
  // Per tensor (graph order of the kAllReduce ops), its op in each rank's graph, and its bytes.
  std::vector<std::vector<int>> op_of_tensor_;  // [rank][tensor]
  std::vector<double> tensor_bytes_;
  // Per client op -> tensor index.
  std::vector<std::map<int, int>> tensor_of_op_;
  // Ready times per local rank and tensor (the NEGOTIATE spans).
  std::vector<std::vector<double>> ready_s_;
  // The coordinator: per (step, tensor) the ranks that submitted it; tensors ready everywhere in
  // readiness order; whether a cycle is scheduled.
  std::map<std::pair<int64_t, int>, int> submitted_;
  std::vector<std::pair<int64_t, int>> pending_;
  bool tick_scheduled_ = false;
  int64_t next_id_ = 0;
  // Responses announced and not done here, in id order; per local rank the queue of its own.
  std::map<int64_t, Running> running_;
  std::vector<std::vector<int64_t>> queue_;  // per rank: ids in order
  std::vector<int64_t> current_;             // per rank: the id in progress (-1: none)
  uint64_t epoch_ = 0;                       // reset() invalidates timers of the earlier epoch
};

}  // namespace replisim::core
