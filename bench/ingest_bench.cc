// hpcai500-ingest-bench: events stored durably per second, three peers on
// the same rows in one run, each commit synchronous=FULL in WAL mode:
//   sqlite_loop   a plain SQLite insert loop, one transaction per batch
//   store_batch   Store::InsertEvents, one call per batch (no network)
//   grpc          a real hpcai500d (a subprocess) fed by simulated agents
//                 over AgentService: register, get the run assigned, send
//                 Events messages of --batch lines, count what is acked
// and prints one RESULT line of JSON per peer, with its ratio to the loop
// (goal for grpc: >= 0.25).
//
//   hpcai500-ingest-bench [--nodes 8] [--ranks-per-node 4]
//       [--events-per-rank 500] [--batch 64] [--hpcai500d PATH] [--dir DIR]
#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "proto/hpcai500.grpc.pb.h"
#include "server/store/store.h"

namespace hpcai500::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One event line of the ingest: a valid worker line of (rank, seq).
struct IngestRow {
  int32_t rank = 0;
  int64_t seq = 0;
  std::string line;
};

// How many simulated nodes, ranks and events, and how many lines go in one
// Events message (and one transaction of the loop).
struct IngestShape {
  int nodes = 8;
  int ranks_per_node = 4;
  int events_per_rank = 500;
  int batch = 64;

  int64_t total_events() const {
    return int64_t{nodes} * ranks_per_node * events_per_rank;
  }
  // The rows of `ranks` (their seqs interleaved, as a busy agent reads
  // them), cut into batches.
  std::vector<std::vector<IngestRow>> RankBatches(
      const std::vector<int32_t>& ranks) const {
    std::vector<std::vector<IngestRow>> batches(1);
    for (int64_t seq = 1; seq <= events_per_rank; ++seq) {
      for (int32_t rank : ranks) {
        if (static_cast<int>(batches.back().size()) == batch) {
          batches.emplace_back();
        }
        batches.back().push_back({rank, seq, Line(rank, seq)});
      }
    }
    return batches;
  }
  // Every rank's batches, node by node.
  std::vector<std::vector<IngestRow>> Batches() const {
    std::vector<std::vector<IngestRow>> all;
    for (int node = 0; node < nodes; ++node) {
      std::vector<int32_t> ranks;
      for (int local = 0; local < ranks_per_node; ++local) {
        ranks.push_back(node * ranks_per_node + local);
      }
      for (std::vector<IngestRow>& b : RankBatches(ranks)) {
        all.push_back(std::move(b));
      }
    }
    return all;
  }
  static std::string Line(int32_t rank, int64_t seq) {
    return absl::StrCat(
        ":::MLLOG {\"namespace\": \"\", \"time_ms\": ", 1000 + seq,
        ", \"event_type\": \"POINT_IN_TIME\", \"key\": \"epoch_start\", "
        "\"value\": null, \"metadata\": {\"file\": \"bench\", \"lineno\": 0, "
        "\"seq\": ",
        seq, ", \"rank\": ", rank, "}}");
  }
};

void PrintResult(const std::string& peer, const IngestShape& shape,
                 double seconds, double loop_rate) {
  const double rate = shape.total_events() / seconds;
  std::printf(
      "RESULT {\"peer\": \"%s\", \"events\": %lld, \"batch\": %d, "
      "\"seconds\": %.3f, \"events_per_s\": %.0f, \"ratio_to_loop\": %.3f}\n",
      peer.c_str(), static_cast<long long>(shape.total_events()), shape.batch,
      seconds, rate, loop_rate > 0 ? rate / loop_rate : 1.0);
  std::fflush(stdout);
}

void MustExec(sqlite3* db, const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error != nullptr ? error : "unknown";
    sqlite3_free(error);
    throw std::runtime_error(absl::StrCat("sqlite: ", sql, ": ", message));
  }
}

// The plain loop: the events table's shape, the same rows, the same
// durability, no coordinator logic.
double RunSqliteLoop(const std::string& path, const IngestShape& shape) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    throw std::runtime_error("cannot open " + path);
  }
  MustExec(db, "PRAGMA journal_mode=WAL");
  MustExec(db, "PRAGMA synchronous=FULL");
  MustExec(db,
           "CREATE TABLE events (run_id INTEGER NOT NULL, attempt INTEGER NOT "
           "NULL, rank INTEGER NOT NULL, seq INTEGER NOT NULL, line TEXT NOT "
           "NULL, error TEXT NOT NULL DEFAULT '', UNIQUE (run_id, attempt, "
           "rank, seq))");
  sqlite3_stmt* insert = nullptr;
  sqlite3_prepare_v2(db,
                     "INSERT OR IGNORE INTO events (run_id, attempt, rank, "
                     "seq, line, error) VALUES (1, 1, ?, ?, ?, '')",
                     -1, &insert, nullptr);
  const Clock::time_point start = Clock::now();
  for (const std::vector<IngestRow>& batch : shape.Batches()) {
    MustExec(db, "BEGIN IMMEDIATE");
    for (const IngestRow& row : batch) {
      sqlite3_bind_int64(insert, 1, row.rank);
      sqlite3_bind_int64(insert, 2, row.seq);
      sqlite3_bind_text(insert, 3, row.line.data(),
                        static_cast<int>(row.line.size()), SQLITE_TRANSIENT);
      if (sqlite3_step(insert) != SQLITE_DONE) {
        throw std::runtime_error("sqlite insert failed");
      }
      sqlite3_reset(insert);
    }
    MustExec(db, "COMMIT");
  }
  const double seconds = Seconds(start);
  sqlite3_finalize(insert);
  sqlite3_close(db);
  return seconds;
}

// The store's batch API on the same rows, one call per batch.
double RunStoreBatch(const std::string& path, const IngestShape& shape) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path);
  if (!store.ok()) throw std::runtime_error(store.status().ToString());
  v1::RunSpec spec;
  spec.set_name("ingest");
  absl::StatusOr<std::vector<v1::SubmitResponse>> submitted =
      (*store)->CreateSubmissions(
          {{"name: ingest\n", {spec}, /*queue=*/"", /*priority=*/0}},
          /*now_ms=*/1,
          /*user=*/"");
  if (!submitted.ok()) throw std::runtime_error("cannot store a submission");
  const int64_t run_id = submitted->front().run_ids(0);
  v1::Attempt attempt;
  attempt.set_number(1);
  attempt.set_state("running");
  if (!(*store)->SaveAttempt(run_id, attempt).ok()) {
    throw std::runtime_error("cannot store an attempt");
  }
  const Clock::time_point start = Clock::now();
  for (const std::vector<IngestRow>& batch : shape.Batches()) {
    std::vector<EventRow> rows;
    rows.reserve(batch.size());
    for (const IngestRow& row : batch) {
      rows.push_back({run_id, 1, row.rank, row.seq, row.line, ""});
    }
    absl::StatusOr<std::vector<EventDisposition>> stored =
        (*store)->InsertEvents(rows);
    if (!stored.ok()) throw std::runtime_error(stored.status().ToString());
  }
  return Seconds(start);
}

// hpcai500d as a child process until destroyed (SIGTERM, then waited for).
class Coordinator {
 public:
  Coordinator(const std::string& binary, const std::string& dir, int port) {
    const std::string log = dir + "/hpcai500d.log";
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      const std::string grpc = absl::StrCat("127.0.0.1:", port);
      const std::string db = dir + "/grpc.db";
      execl(binary.c_str(), binary.c_str(), "--grpc", grpc.c_str(), "--http",
            "127.0.0.1:0", "--db", db.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    if (pid_ < 0) throw std::runtime_error("fork failed");
  }
  ~Coordinator() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }

 private:
  pid_t pid_ = -1;
};

// One simulated agent: a node with `ranks_per_node` slots on one
// AgentService stream. Its reader thread answers the rendezvous and counts
// acks; the caller's thread writes. Not thread-safe beyond that split.
class SimulatedAgent {
 public:
  SimulatedAgent(v1::AgentService::Stub* stub, std::string name,
                 const IngestShape& shape)
      : name_(std::move(name)), shape_(shape) {
    stream_ = stub->Connect(&context_);
  }
  ~SimulatedAgent() {
    context_.TryCancel();
    if (reader_.joinable()) reader_.join();
  }

  // Registers and starts the reader; true once the coordinator answered.
  bool Register() {
    v1::AgentMessage hello;
    v1::Register* reg = hello.mutable_register_();
    reg->set_name(name_);
    reg->set_address("127.0.0.1");
    reg->set_slots(shape_.ranks_per_node);
    reg->set_cpus(shape_.ranks_per_node);
    v1::CoordinatorMessage reply;
    if (!stream_->Write(hello) || !stream_->Read(&reply) ||
        !reply.has_registered()) {
      return false;
    }
    reader_ = std::thread([this] { ReadLoop(); });
    return true;
  }

  // Waits for the START assignment, sends every batch, then waits until
  // every rank is acknowledged to its last seq, heartbeating meanwhile.
  // Returns when it started sending and when the last ack came.
  absl::StatusOr<std::pair<Clock::time_point, Clock::time_point>> Ingest(
      std::chrono::seconds timeout) {
    const Clock::time_point deadline = Clock::now() + timeout;
    v1::AttemptKey key;
    std::vector<int32_t> ranks;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_until(lock, deadline, [&] { return started_ || ended_; }) ||
          ended_) {
        return absl::DeadlineExceededError(name_ + ": no START assignment");
      }
      key = key_;
      ranks = ranks_;
    }
    const Clock::time_point start = Clock::now();
    for (const std::vector<IngestRow>& batch : shape_.RankBatches(ranks)) {
      v1::AgentMessage message;
      for (const IngestRow& row : batch) {
        v1::Event* event = message.mutable_events()->add_events();
        *event->mutable_key() = key;
        event->set_rank(row.rank);
        event->set_seq(row.seq);
        event->set_line(row.line);
      }
      std::lock_guard<std::mutex> write(write_mu_);
      if (!stream_->Write(message)) return absl::UnavailableError("write");
    }
    return std::make_pair(start, AwaitAcks(deadline));
  }

 private:
  Clock::time_point AwaitAcks(Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    while (!AllAckedLocked() && !ended_ && Clock::now() < deadline) {
      if (cv_.wait_for(lock, std::chrono::seconds(1),
                       [&] { return AllAckedLocked() || ended_; })) {
        break;
      }
      lock.unlock();
      Heartbeat();
      lock.lock();
    }
    return AllAckedLocked() ? last_ack_ : Clock::time_point::max();
  }

  bool AllAckedLocked() const {
    if (static_cast<int>(acked_.size()) < shape_.ranks_per_node) return false;
    return std::all_of(acked_.begin(), acked_.end(), [&](const auto& rank) {
      return rank.second >= shape_.events_per_rank;
    });
  }

  void Heartbeat() {
    v1::AgentMessage beat;
    beat.mutable_heartbeat()->set_time_ms(1);
    std::lock_guard<std::mutex> write(write_mu_);
    stream_->Write(beat);
  }

  void ReadLoop() {
    v1::CoordinatorMessage message;
    while (stream_->Read(&message)) {
      if (message.has_assignment()) OnAssignment(message.assignment());
      if (!message.has_acks()) continue;
      std::lock_guard<std::mutex> lock(mu_);
      for (const v1::Ack& ack : message.acks().acks()) {
        int64_t& acked = acked_[ack.rank()];
        acked = std::max(acked, ack.seq());
      }
      last_ack_ = Clock::now();
      cv_.notify_all();
    }
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    cv_.notify_all();
  }

  // RESERVE: report a port, as rank 0's agent does. START: go.
  void OnAssignment(const v1::Assignment& assignment) {
    if (assignment.phase() == v1::Assignment::PHASE_RESERVE) {
      v1::AgentMessage reserved;
      *reserved.mutable_port_reserved()->mutable_key() = assignment.key();
      reserved.mutable_port_reserved()->set_host("127.0.0.1");
      reserved.mutable_port_reserved()->set_port(29500);
      std::lock_guard<std::mutex> write(write_mu_);
      stream_->Write(reserved);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    key_ = assignment.key();
    ranks_.assign(assignment.ranks().begin(), assignment.ranks().end());
    started_ = true;
    cv_.notify_all();
  }

  const std::string name_;
  const IngestShape shape_;
  grpc::ClientContext context_;
  std::unique_ptr<
      grpc::ClientReaderWriter<v1::AgentMessage, v1::CoordinatorMessage>>
      stream_;
  std::thread reader_;
  std::mutex write_mu_;  // one writer at a time on the stream
  std::mutex mu_;        // guards what follows
  std::condition_variable cv_;
  bool started_ = false;
  bool ended_ = false;
  v1::AttemptKey key_;
  std::vector<int32_t> ranks_;        // global ranks the START gave this node
  std::map<int32_t, int64_t> acked_;  // rank -> highest acked seq
  Clock::time_point last_ack_;
};

// Submits a run over every simulated node.
absl::Status SubmitRun(const std::shared_ptr<grpc::Channel>& channel,
                       const IngestShape& shape) {
  auto client = v1::ClientService::NewStub(channel);
  v1::SubmitRequest request;
  request.set_spec_yaml(
      absl::StrCat("name: ingest-bench\nworkload: image_classification\n"
                   "config: fashion_mnist_smoke\nlevel: system\nnodes: ",
                   shape.nodes, "\nranks_per_node: ", shape.ranks_per_node,
                   "\ndevice: cpu\nbatch_size: 64\nprecision: fp32\nseed: 1\n"
                   "system: ingest-bench\n"));
  v1::SubmitResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(30));
  grpc::Status status = client->Submit(&context, request, &response);
  if (!status.ok()) {
    return absl::UnavailableError("submit: " + status.error_message());
  }
  return absl::OkStatus();
}

// The grpc peer: registers shape.nodes agents on `address`, submits a run
// over them and has each send its ranks' events. Returns the seconds from
// the first event sent to the last ack received.
absl::StatusOr<double> RunSimulatedAgents(const std::string& address,
                                          const IngestShape& shape) {
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  if (!channel->WaitForConnected(std::chrono::system_clock::now() +
                                 std::chrono::seconds(30))) {
    return absl::UnavailableError("hpcai500d did not come up at " + address);
  }
  auto stub = v1::AgentService::NewStub(channel);
  std::vector<std::unique_ptr<SimulatedAgent>> agents;
  for (int node = 0; node < shape.nodes; ++node) {
    agents.push_back(std::make_unique<SimulatedAgent>(
        stub.get(), absl::StrCat("bench-node-", node), shape));
    if (!agents.back()->Register()) {
      return absl::UnavailableError(absl::StrCat("node ", node, ": register"));
    }
  }
  if (absl::Status submitted = SubmitRun(channel, shape); !submitted.ok()) {
    return submitted;
  }
  using Span = std::pair<Clock::time_point, Clock::time_point>;
  std::vector<absl::StatusOr<Span>> spans(agents.size(),
                                          absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < agents.size(); ++i) {
    threads.emplace_back(
        [&, i] { spans[i] = agents[i]->Ingest(std::chrono::seconds(600)); });
  }
  for (std::thread& thread : threads) thread.join();
  Clock::time_point first = Clock::time_point::max();
  Clock::time_point last = Clock::time_point::min();
  for (const absl::StatusOr<Span>& span : spans) {
    if (!span.ok()) return span.status();
    if (span->second == Clock::time_point::max()) {
      return absl::DeadlineExceededError("not every event was acknowledged");
    }
    first = std::min(first, span->first);
    last = std::max(last, span->second);
  }
  return std::chrono::duration<double>(last - first).count();
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error("no free port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

double RunGrpc(const std::string& binary, const std::string& dir,
               const IngestShape& shape) {
  const int port = FreePort();
  Coordinator coordinator(binary, dir, port);
  absl::StatusOr<double> seconds =
      RunSimulatedAgents(absl::StrCat("127.0.0.1:", port), shape);
  if (!seconds.ok()) {
    throw std::runtime_error(absl::StrCat(seconds.status().ToString(),
                                          " (log: ", dir, "/hpcai500d.log)"));
  }
  return *seconds;
}

std::string DefaultCoordinatorPath() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() /
          "hpcai500d")
      .string();
}

int Run(int argc, char** argv) {
  IngestShape shape;
  std::string binary = DefaultCoordinatorPath();
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--nodes") {
      shape.nodes = std::stoi(value);
    } else if (arg == "--ranks-per-node") {
      shape.ranks_per_node = std::stoi(value);
    } else if (arg == "--events-per-rank") {
      shape.events_per_rank = std::stoi(value);
    } else if (arg == "--batch") {
      shape.batch = std::stoi(value);
    } else if (arg == "--hpcai500d") {
      binary = value;
    } else if (arg == "--dir") {
      dir = value;
    } else {
      throw std::invalid_argument("unknown flag " + arg);
    }
  }
  if (shape.nodes < 1 || shape.ranks_per_node < 1 ||
      shape.events_per_rank < 1 || shape.batch < 1) {
    throw std::invalid_argument("every count must be >= 1");
  }
  if (dir.empty()) {
    char tmpl[] = "/tmp/hpcai500-ingest-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
  }
  const double loop = RunSqliteLoop(dir + "/loop.db", shape);
  const double loop_rate = shape.total_events() / loop;
  PrintResult("sqlite_loop", shape, loop, loop_rate);
  PrintResult("store_batch", shape, RunStoreBatch(dir + "/store.db", shape),
              loop_rate);
  PrintResult("grpc", shape, RunGrpc(binary, dir, shape), loop_rate);
  return 0;
}

}  // namespace
}  // namespace hpcai500::bench

int main(int argc, char** argv) {
  try {
    return hpcai500::bench::Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpcai500-ingest-bench: %s\n", e.what());
    return 1;
  }
}
