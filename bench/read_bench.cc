// hpcai500-read-bench: the reads clients make of a large history, through
// the real gRPC API beside the bare SQLite they need, in one run:
//   api    ClientService (Coordinator, Store, auth interceptor) in this
//          process, called over a loopback TCP channel
//   bare   the very SQL the store runs for that call (server/store/internal/
//          store_queries.h), on its own read-only connection, every column
//          of every row stepped through, nothing decoded
//   store  the Store call alone (no gRPC, no coordinator), to show where
//          the API's time goes
// for four calls: the leaderboard's first page, a deep page of one
// (workload, config), the newest runs, and one user's runs since a date
// (what `hpcai500 history --user U --since D` asks, D a quarter of the
// history back). The store is filled
// first through Store's own calls (submissions of 1-3 repetitions,
// attempts, results, failures, invalidations), so the leaderboard table is
// the one the store maintains. Each round calls both sides once with the
// same request, alternating which goes first; prints one RESULT line of
// JSON per call with p50/p99 of each side and their ratios (goal: api p99
// within 2x of bare p99), then a Markdown table.
//
//   hpcai500-read-bench [--runs 100000] [--rounds 1000] [--page 100]
//       [--dir DIR (default /dev/shm, else /tmp)] [--keep]
#include <grpcpp/grpcpp.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/clock.h"
#include "methodology/registry.h"
#include "proto/hpcai500.grpc.pb.h"
#include "server/auth/access_control.h"
#include "server/coordinator/coordinator.h"
#include "server/coordinator/run_reads.h"
#include "server/grpc_services.h"
#include "server/store/internal/store_queries.h"
#include "server/store/store.h"

namespace hpcai500::bench {
namespace {

namespace fs = std::filesystem;
using server_internal::SqlQuery;
using SteadyClock = std::chrono::steady_clock;

struct Options {
  int runs = 100'000;
  int rounds = 1000;
  int page = 100;
  std::string dir;
  bool keep = false;
};

Options ParseOptions(int argc, char** argv) {
  Options options;
  options.dir = fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--runs") {
      options.runs = std::stoi(value());
    } else if (flag == "--rounds") {
      options.rounds = std::stoi(value());
    } else if (flag == "--page") {
      options.page = std::stoi(value());
    } else if (flag == "--dir") {
      options.dir = value();
    } else if (flag == "--keep") {
      options.keep = true;
    } else {
      throw std::runtime_error("unknown flag " + flag);
    }
  }
  if (options.runs < 1 || options.rounds < 1 || options.page < 1) {
    throw std::runtime_error("--runs, --rounds and --page must be positive");
  }
  return options;
}

void Check(const absl::Status& status, const std::string& what) {
  if (!status.ok()) throw std::runtime_error(what + ": " + status.ToString());
}

// ------------------------------------------------------------ the history

constexpr int64_t kStartMs = 1'788'220'800'000;  // 2026-09-01T00:00Z
constexpr int64_t kMinuteMs = 60'000;

const char* const kQueues[] = {"batch", "gpu", "debug"};
struct Config {
  const char* workload;
  const char* config;
  int epochs;
};
const Config kConfigs[] = {
    {"image_classification", "fashion_mnist_smoke", 3},
    {"image_classification", "fashion_mnist", 10},
    {"image_classification", "imagenet", 90},
    {"image_classification", "cifar10", 30},
    {"extreme_weather", "ewa_smoke", 3},
    {"extreme_weather", "ewa", 50},
};

// A few epochs of summary, as a finished run keeps them (at most 12: the
// run list carries them, long runs would only make both sides slower).
void AddEpochs(v1::Run& run, int epochs, std::mt19937& random) {
  for (int e = 1; e <= std::min(epochs, 12); ++e) {
    v1::EpochSummary* epoch = run.add_epochs();
    epoch->set_epoch(e);
    epoch->set_samples(60'000);
    epoch->set_seconds(30 + random() % 30);
    epoch->set_throughput(60'000 / epoch->seconds());
    epoch->set_train_loss(2.0 / e);
    epoch->set_accuracy(0.5 + 0.04 * e);
  }
}

// Fills `store` with `total` runs through its own calls; returns the number
// of submissions. Deterministic (fixed seed).
int Populate(Store& store, int total) {
  std::mt19937 random(2026);
  int64_t now = kStartMs;
  int runs = 0;
  int submissions = 0;
  while (runs < total) {
    const int repetitions = std::min(total - runs, 1 + int(random() % 3));
    const Config& config = kConfigs[random() % std::size(kConfigs)];
    const int name = random() % 60;
    const int user = random() % 25;
    const int nodes = 1 + random() % 4;
    std::vector<v1::RunSpec> specs;
    for (int r = 0; r < repetitions; ++r) {
      v1::RunSpec spec;
      spec.set_name(absl::StrCat("bench-", name));
      spec.set_workload(config.workload);
      spec.set_config(config.config);
      spec.set_level(name % 3 == 0 ? "hardware" : "system");
      spec.set_system(absl::StrCat("cluster-", name % 12));
      spec.set_nodes(nodes);
      spec.set_ranks_per_node(8);
      spec.set_device("cuda");
      spec.set_precision("bf16");
      spec.set_batch_size(256);
      spec.set_epochs(config.epochs);
      spec.set_repetitions(repetitions);
      spec.set_seed(1 + r);
      spec.set_ranked(name % 5 != 0);
      specs.push_back(spec);
    }
    now += 1 + random() % (2 * kMinuteMs);
    absl::StatusOr<std::vector<v1::SubmitResponse>> submitted =
        store.CreateSubmissions(
            {{absl::StrCat("name: bench-", name, "\n"), specs,
              kQueues[random() % std::size(kQueues)], int32_t(random() % 100)}},
            now, absl::StrCat("user", user));
    Check(submitted.status(), "storing a submission");
    ++submissions;
    for (int64_t id : submitted->front().run_ids()) {
      ++runs;
      v1::Run run = *store.GetRun(id);
      const unsigned fate = random() % 100;
      if (fate < 1) continue;  // still queued
      // Attempts: most start once, some are requeued after a lost node.
      const int attempts = 1 + (random() % 10 == 0) + (random() % 50 == 0);
      int64_t start = now + random() % (30 * kMinuteMs);
      run.set_started_ms(start);
      for (int a = 1; a <= attempts; ++a) {
        v1::Attempt attempt;
        attempt.set_number(a);
        for (int n = 0; n < nodes; ++n) {
          attempt.add_nodes(absl::StrFormat("node-%03d", (id * 7 + n) % 400));
        }
        attempt.set_master_addr("10.0.0.1");
        attempt.set_master_port(29500);
        attempt.set_started_ms(start);
        const int64_t end = start + (5 + random() % 120) * kMinuteMs;
        if (a < attempts) {
          attempt.set_state("lost");
          attempt.set_finished_ms(end);
          attempt.set_error(
              absl::StrCat("node ", attempt.nodes(0), " silent for 60 s"));
        } else if (fate < 3) {
          attempt.set_state("running");
        } else {
          attempt.set_state("ended");
          attempt.set_finished_ms(end);
        }
        Check(store.SaveAttempt(id, attempt), "storing an attempt");
        start = end;
      }
      if (fate < 3) {
        run.set_state(v1::RUN_STATE_RUNNING);
        Check(store.UpdateRun(run), "updating a run");
        continue;
      }
      run.set_finished_ms(start);
      AddEpochs(run, config.epochs, random);
      if (fate < 13) {
        run.set_state(v1::RUN_STATE_FAILED);
        run.set_error("rank 3 exited with status 1");
      } else if (fate < 18) {
        run.set_state(v1::RUN_STATE_CANCELLED);
        run.set_error("cancelled by a user");
      } else {
        v1::Score score;
        score.set_quality(0.7 + (random() % 100) / 1000.0);
        score.set_target(0.75);
        score.set_exponent(5);
        score.set_forward_flops_per_sample(4.1e9);
        score.set_samples(60'000LL * config.epochs);
        score.set_train_seconds(600 + random() % 3000);
        score.set_eval_seconds(30);
        score.set_flops(1e12 * (1 + random() % 1000));
        score.set_valid_flops(score.flops() * (0.5 + (random() % 50) / 100.0));
        score.set_reached_target(score.quality() >= score.target());
        score.set_convention("3x forward, counted");
        Check(store.SaveResult(id, score), "storing a result");
        run.set_state(v1::RUN_STATE_SUCCEEDED);
      }
      Check(store.UpdateRun(run), "updating a run");
      if (run.state() == v1::RUN_STATE_SUCCEEDED && random() % 100 == 0) {
        Check(store.InvalidateRun(id, "admin", "bench: bad node", start),
              "invalidating a run");
      }
    }
  }
  return submissions;
}

// ------------------------------------------------------------------ bare

// A read-only connection of its own, as the store's readers are.
class BareDb {
 public:
  explicit BareDb(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) !=
        SQLITE_OK) {
      throw std::runtime_error("cannot open " + path);
    }
  }
  ~BareDb() { sqlite3_close(db_); }

  // Runs `query` to the end, reading every column of every row (text and
  // blobs as bytes); calls `row` (if set) with the statement on each row.
  // Returns the number of rows.
  int Run(const SqlQuery& query,
          const std::function<void(sqlite3_stmt*)>& row = nullptr) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, query.sql.c_str(), -1, &stmt, nullptr) !=
        SQLITE_OK) {
      throw std::runtime_error("bare: " + std::string(sqlite3_errmsg(db_)));
    }
    for (size_t i = 0; i < query.text_params.size(); ++i) {
      sqlite3_bind_text(stmt, int(i + 1), query.text_params[i].data(),
                        int(query.text_params[i].size()), SQLITE_TRANSIENT);
    }
    int rows = 0;
    size_t bytes = 0;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      ++rows;
      for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
        switch (sqlite3_column_type(stmt, c)) {
          case SQLITE_INTEGER:
            bytes += sqlite3_column_int64(stmt, c) != 0;
            break;
          case SQLITE_FLOAT:
            bytes += sqlite3_column_double(stmt, c) != 0;
            break;
          default:
            bytes += sqlite3_column_blob(stmt, c) != nullptr;
            bytes += sqlite3_column_bytes(stmt, c);
        }
      }
      if (row) row(stmt);
    }
    sqlite3_finalize(stmt);
    sink_ += bytes;
    return rows;
  }

  // What Store::Leaderboard runs: the count, the page, and for the first
  // ranked row of each (workload, config) on the page the count of ranked
  // rows ahead of it.
  int Leaderboard(const v1::LeaderboardRequest& request) {
    Run(server_internal::LeaderboardCountQuery(request));
    struct First {
      std::string workload, config;
      double valid_flops;
      int64_t submission_id;
    };
    std::vector<First> firsts;
    std::string workload, config;
    bool ranked_seen = false;
    const int rows = Run(
        server_internal::LeaderboardPageQuery(request), [&](sqlite3_stmt* s) {
          auto text = [&](int c) {
            return std::string(
                static_cast<const char*>(sqlite3_column_blob(s, c)),
                sqlite3_column_bytes(s, c));
          };
          if (text(1) != workload || text(2) != config) {
            workload = text(1);
            config = text(2);
            ranked_seen = false;
          }
          if (sqlite3_column_int64(s, 3) == 0 && !ranked_seen) {
            ranked_seen = true;
            firsts.push_back({workload, config, sqlite3_column_double(s, 4),
                              sqlite3_column_int64(s, 0)});
          }
        });
    for (const First& first : firsts) {
      sqlite3_stmt* stmt = nullptr;
      sqlite3_prepare_v2(db_, server_internal::kRankedRowsAheadSql, -1, &stmt,
                         nullptr);
      sqlite3_bind_text(stmt, 1, first.workload.data(),
                        int(first.workload.size()), SQLITE_TRANSIENT);
      sqlite3_bind_text(stmt, 2, first.config.data(), int(first.config.size()),
                        SQLITE_TRANSIENT);
      sqlite3_bind_double(stmt, 3, first.valid_flops);
      sqlite3_bind_int64(stmt, 4, first.submission_id);
      if (sqlite3_step(stmt) == SQLITE_ROW) {
        sink_ += sqlite3_column_int64(stmt, 0);
      }
      sqlite3_finalize(stmt);
    }
    return rows;
  }

  // What Store::ListRuns runs: the runs, then their attempts and scores.
  int ListRuns(const v1::ListRunsRequest& request) {
    std::vector<int64_t> ids;
    const int rows = Run(
        server_internal::ListRunsQuery(request),
        [&](sqlite3_stmt* s) { ids.push_back(sqlite3_column_int64(s, 0)); });
    if (ids.empty()) return rows;
    Run({server_internal::AttemptsOfRunsSql(ids), {}});
    Run({server_internal::ScoresOfRunsSql(ids), {}});
    return rows;
  }

  size_t sink() const { return sink_; }

 private:
  sqlite3* db_ = nullptr;
  size_t sink_ = 0;  // keeps the reads from being optimised away
};

// ------------------------------------------------------------ measuring

struct Percentiles {
  double p50_ms = 0;
  double p99_ms = 0;
};

Percentiles Of(std::vector<double> micros) {
  std::sort(micros.begin(), micros.end());
  auto at = [&](double q) {
    const size_t i = std::min(micros.size() - 1,
                              size_t(q * double(micros.size() - 1) + 0.5));
    return micros[i] / 1000.0;
  };
  return {at(0.50), at(0.99)};
}

double TimeMicros(const std::function<void()>& call) {
  const SteadyClock::time_point start = SteadyClock::now();
  call();
  return std::chrono::duration<double, std::micro>(SteadyClock::now() - start)
      .count();
}

struct CaseResult {
  std::string name;
  int rows = 0;
  Percentiles api, bare, store;
};

// Runs `rounds` rounds (plus a tenth as warm-up, not counted) of
// `api(round)`, `bare(round)` and `store(round)`, rotating which goes
// first; each returns the rows it read, which must agree.
CaseResult Measure(const std::string& name, int rounds,
                   const std::function<int(int)>& api,
                   const std::function<int(int)>& bare,
                   const std::function<int(int)>& store) {
  CaseResult result;
  result.name = name;
  std::vector<double> us[3];
  const std::function<int(int)>* sides[3] = {&api, &bare, &store};
  const int warmup = std::max(5, rounds / 10);
  for (int round = -warmup; round < rounds; ++round) {
    int rows[3] = {0, 0, 0};
    double micros[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) {
      const int side = (k + round + warmup) % 3;
      micros[side] = TimeMicros([&] { rows[side] = (*sides[side])(round); });
    }
    if (rows[0] != rows[1] || rows[0] != rows[2]) {
      throw std::runtime_error(absl::StrCat(name, ": the api gave ", rows[0],
                                            " rows, bare SQL ", rows[1],
                                            ", the store ", rows[2]));
    }
    result.rows = rows[0];
    if (round < 0) continue;
    for (int side = 0; side < 3; ++side) us[side].push_back(micros[side]);
  }
  result.api = Of(us[0]);
  result.bare = Of(us[1]);
  result.store = Of(us[2]);
  return result;
}

void PrintResult(const CaseResult& r, int rounds) {
  std::printf(
      "RESULT {\"case\": \"%s\", \"rounds\": %d, \"rows\": %d, "
      "\"api_p50_ms\": %.3f, \"api_p99_ms\": %.3f, \"bare_p50_ms\": %.3f, "
      "\"bare_p99_ms\": %.3f, \"ratio_p50\": %.2f, \"ratio_p99\": %.2f}\n",
      r.name.c_str(), rounds, r.rows, r.api.p50_ms, r.api.p99_ms, r.bare.p50_ms,
      r.bare.p99_ms, r.api.p50_ms / r.bare.p50_ms,
      r.api.p99_ms / r.bare.p99_ms);
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  const Options options = ParseOptions(argc, argv);
  char pattern[4096];
  std::snprintf(pattern, sizeof(pattern), "%s/hpcai500-read-bench-XXXXXX",
                options.dir.c_str());
  if (mkdtemp(pattern) == nullptr) {
    throw std::runtime_error("cannot make a folder in " + options.dir);
  }
  const fs::path dir = pattern;
  const std::string path = (dir / "bench.db").string();

  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path);
  Check(store.status(), "opening the store");
  std::printf("filling %s with %d runs through Store...\n", path.c_str(),
              options.runs);
  std::fflush(stdout);
  const SteadyClock::time_point fill_start = SteadyClock::now();
  const int submissions = Populate(**store, options.runs);
  const double fill_seconds =
      std::chrono::duration<double>(SteadyClock::now() - fill_start).count();

  RealClock clock;
  absl::StatusOr<std::unique_ptr<Coordinator>> coordinator =
      Coordinator::Create(store->get(), &clock, &Registry::Builtin(), {});
  Check(coordinator.status(), "starting the coordinator");
  AccessLimits limits;  // auth is off; the bench is one very busy user
  limits.requests_per_second = 1e9;
  limits.burst = 1e9;
  AccessControl access(store->get(), &clock, std::nullopt, "", limits);
  RunReads reads(store->get(), &Registry::Builtin(), coordinator->get());
  ClientServiceImpl service(coordinator->get(), &reads, &access);
  int port = 0;
  std::unique_ptr<grpc::Server> server =
      StartCoordinatorServer("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &service, /*agents=*/nullptr, &access, &port);
  if (server == nullptr) throw std::runtime_error("cannot start gRPC");
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(64 << 20);
  std::unique_ptr<v1::ClientService::Stub> client =
      v1::ClientService::NewStub(grpc::CreateCustomChannel(
          absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials(),
          channel_args));
  BareDb bare(path);

  auto leaderboard = [&](const v1::LeaderboardRequest& request) {
    grpc::ClientContext context;
    v1::LeaderboardResponse response;
    const grpc::Status status =
        client->Leaderboard(&context, request, &response);
    if (!status.ok()) throw std::runtime_error(status.error_message());
    return response;
  };
  auto list_runs = [&](const v1::ListRunsRequest& request) {
    grpc::ClientContext context;
    v1::ListRunsResponse response;
    const grpc::Status status = client->ListRuns(&context, request, &response);
    if (!status.ok()) throw std::runtime_error(status.error_message());
    return response.runs_size();
  };

  v1::LeaderboardRequest first_page;
  first_page.set_limit(options.page);
  const int total = leaderboard(first_page).total();
  v1::LeaderboardRequest one_config;
  one_config.set_workload("image_classification");
  one_config.set_config("fashion_mnist");
  const int config_total = leaderboard(one_config).total();
  std::printf(
      "stored %d runs in %d submissions in %.0f s; leaderboard %d rows "
      "(image_classification/fashion_mnist %d)\n",
      options.runs, submissions, fill_seconds, total, config_total);
  std::fflush(stdout);

  // Per-round requests, the same for both sides.
  std::mt19937 random(7);
  // Rounds run from minus the warm-up to `rounds`; a warm-up round reuses
  // a later round's request.
  std::vector<int> offsets, users;
  for (int i = 0; i < options.rounds; ++i) {
    offsets.push_back(
        int(random() % std::max(1, config_total - options.page + 1)));
    users.push_back(int(random() % 25));
  }
  const int rounds = options.rounds;
  auto offset_of = [&](int round) {
    return offsets[(round + rounds) % rounds];
  };
  auto user_of = [&](int round) { return users[(round + rounds) % rounds]; };
  auto deep_page = [&](int round) {
    v1::LeaderboardRequest request = one_config;
    request.set_limit(options.page);
    request.set_offset(offset_of(round));
    return request;
  };
  v1::ListRunsRequest newest;
  newest.set_limit(options.page);
  v1::ListRunsRequest newest_one;
  newest_one.set_limit(1);
  const int64_t last_ms = (*store)->ListRuns(newest_one)->front().created_ms();
  const int64_t since_ms = last_ms - (last_ms - kStartMs) / 4;
  auto user_since = [&](int round) {
    v1::ListRunsRequest request;
    request.set_user(absl::StrCat("user", user_of(round)));
    request.set_since_ms(since_ms);
    request.set_limit(options.page);
    return request;
  };

  auto store_leaderboard = [&](const v1::LeaderboardRequest& request) {
    absl::StatusOr<v1::LeaderboardResponse> board =
        (*store)->Leaderboard(request);
    Check(board.status(), "Store::Leaderboard");
    return board->rows_size();
  };
  auto store_runs = [&](const v1::ListRunsRequest& request) {
    absl::StatusOr<std::vector<v1::Run>> runs = (*store)->ListRuns(request);
    Check(runs.status(), "Store::ListRuns");
    return int(runs->size());
  };

  std::vector<CaseResult> results;
  results.push_back(Measure(
      "leaderboard first page", options.rounds,
      [&](int) { return leaderboard(first_page).rows_size(); },
      [&](int) { return bare.Leaderboard(first_page); },
      [&](int) { return store_leaderboard(first_page); }));
  results.push_back(Measure(
      "leaderboard deep page of one config", options.rounds,
      [&](int round) { return leaderboard(deep_page(round)).rows_size(); },
      [&](int round) { return bare.Leaderboard(deep_page(round)); },
      [&](int round) { return store_leaderboard(deep_page(round)); }));
  results.push_back(Measure(
      "runs: newest page", options.rounds,
      [&](int) { return list_runs(newest); },
      [&](int) { return bare.ListRuns(newest); },
      [&](int) { return store_runs(newest); }));
  results.push_back(Measure(
      "runs: one user since a date (history)", options.rounds,
      [&](int round) { return list_runs(user_since(round)); },
      [&](int round) { return bare.ListRuns(user_since(round)); },
      [&](int round) { return store_runs(user_since(round)); }));
  for (const CaseResult& r : results) PrintResult(r, options.rounds);
  // The floor under every API call: a unary call that reads nothing
  // (ListNodes of a coordinator without nodes), and the size of the
  // responses above.
  std::vector<double> empty_us;
  for (int round = 0; round < options.rounds; ++round) {
    empty_us.push_back(TimeMicros([&] {
      grpc::ClientContext context;
      v1::ListNodesResponse response;
      client->ListNodes(&context, v1::ListNodesRequest(), &response);
    }));
  }
  const Percentiles floor = Of(empty_us);
  v1::ListRunsResponse newest_response;
  {
    grpc::ClientContext context;
    client->ListRuns(&context, newest, &newest_response);
  }
  std::printf(
      "RESULT {\"case\": \"empty call (ListNodes)\", \"rounds\": %d, "
      "\"api_p50_ms\": %.3f, \"api_p99_ms\": %.3f}\n"
      "response sizes: leaderboard page %zu bytes, newest runs page %zu "
      "bytes\n",
      options.rounds, floor.p50_ms, floor.p99_ms,
      leaderboard(first_page).ByteSizeLong(), newest_response.ByteSizeLong());

  std::printf(
      "\n| call (%d runs, page %d, %d rounds) | rows | API p50 / p99 ms "
      "| bare SQL p50 / p99 ms | Store alone p50 / p99 ms | API / bare p50 "
      "| API / bare p99 |\n"
      "|---|---:|---:|---:|---:|---:|---:|\n",
      options.runs, options.page, options.rounds);
  for (const CaseResult& r : results) {
    std::printf(
        "| %s | %d | %.3f / %.3f | %.3f / %.3f | %.3f / %.3f | %.2fx | "
        "%.2fx |\n",
        r.name.c_str(), r.rows, r.api.p50_ms, r.api.p99_ms, r.bare.p50_ms,
        r.bare.p99_ms, r.store.p50_ms, r.store.p99_ms,
        r.api.p50_ms / r.bare.p50_ms, r.api.p99_ms / r.bare.p99_ms);
  }
  std::printf("(bare sink %zu)\n", bare.sink());

  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  (*coordinator)->Shutdown();
  coordinator->reset();
  store->reset();
  if (!options.keep) fs::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace hpcai500::bench

int main(int argc, char** argv) {
  try {
    return hpcai500::bench::Main(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "hpcai500-read-bench: %s\n", error.what());
    return 1;
  }
}
