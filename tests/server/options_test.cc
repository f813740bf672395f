#include "server/options.h"

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

TEST(ParseServerOptions, FillsDefaults) {
  absl::StatusOr<ServerOptions> options = ParseServerOptions({});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->grpc, "127.0.0.1:7500");
  EXPECT_EQ(options->http, "127.0.0.1:7580");
  EXPECT_EQ(options->db, "./hpcai500.db");
  EXPECT_EQ(options->web_dir, DefaultWebDir());
  EXPECT_EQ(options->node_timeout_s, 60);
  EXPECT_EQ(options->heartbeat_interval_s, 0);
  EXPECT_EQ(options->node_retention_hours, 24);
  EXPECT_EQ(options->grpc_idle_timeout_s, 300);
  EXPECT_EQ(options->max_agent_streams, 10'000);  // more than Frontier's nodes
  EXPECT_EQ(options->http_max_connections_per_client, 32);
  EXPECT_EQ(options->http_max_connections, HttpServer::kDefaultMaxConnections);
  EXPECT_DOUBLE_EQ(options->spread.throughput_cv, 0.02);
  EXPECT_DOUBLE_EQ(options->spread.epochs_to_target_cv, 0.10);
  EXPECT_FALSE(options->http_public || options->insecure ||
               options->ignore_sigterm || options->help);
  // [v6]:PORT and port 0 (any free one) pass the port rule.
  EXPECT_TRUE(ParseServerOptions({"--grpc", "[::1]:0"}).ok());
}

TEST(ParseServerOptions, ReadsEveryFlag) {
  absl::StatusOr<ServerOptions> options =
      ParseServerOptions({"--grpc",
                          "0.0.0.0:1",
                          "--http=0.0.0.0:2",
                          "--db",
                          "/d/x.db",
                          "--web-dir",
                          "/w",
                          "--max-agent-streams",
                          "20000",
                          "--http-max-connections-per-client",
                          "4",
                          "--token-file",
                          "/t",
                          "--queues",
                          "/q.yaml",
                          "--node-timeout-s",
                          "90",
                          "--heartbeat-interval-s",
                          "30",
                          "--max-queued-per-user",
                          "0",
                          "--node-retention-hours",
                          "0",
                          "--http-max-connections",
                          "9",
                          "--max-throughput-cv",
                          "3.5",
                          "--max-epochs-cv=20",
                          "--http-public",
                          "--insecure",
                          "--ignore-sigterm",
                          "--grpc-idle-timeout-s",
                          "7",
                          "--change-webhook",
                          "http://ci:8080/hook"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->change_webhook, "http://ci:8080/hook");
  EXPECT_EQ(options->grpc, "0.0.0.0:1");
  EXPECT_EQ(options->http, "0.0.0.0:2");
  EXPECT_EQ(options->db, "/d/x.db");
  EXPECT_EQ(options->web_dir, "/w");
  EXPECT_EQ(options->token_file, "/t");
  EXPECT_EQ(options->queues, "/q.yaml");
  EXPECT_EQ(options->node_timeout_s, 90);
  EXPECT_EQ(options->heartbeat_interval_s, 30);
  EXPECT_EQ(options->max_queued_per_user, 0);
  EXPECT_EQ(options->node_retention_hours, 0);
  EXPECT_EQ(options->http_max_connections, 9);
  EXPECT_EQ(options->max_agent_streams, 20'000);
  EXPECT_EQ(options->http_max_connections_per_client, 4);
  EXPECT_DOUBLE_EQ(options->spread.throughput_cv, 0.035);
  EXPECT_DOUBLE_EQ(options->spread.epochs_to_target_cv, 0.20);
  EXPECT_TRUE(options->http_public && options->insecure &&
              options->ignore_sigterm);
  EXPECT_EQ(options->grpc_idle_timeout_s, 7);
}

TEST(ParseServerOptions, RefusesNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string names;
  };
  for (const Case& c : std::vector<Case>{
           {{"--node-timeout-s", "0"}, "--node-timeout-s: must be 1..86400"},
           {{"--http-max-connections", "x"}, "--http-max-connections"},
           {{"--heartbeat-interval-s", "3601"}, "--heartbeat-interval-s"},
           {{"--max-queued-per-user", "-1"}, "--max-queued-per-user"},
           {{"--node-retention-hours", "87601"}, "--node-retention-hours"},
           {{"--max-agent-streams", "0"}, "--max-agent-streams: must be 1"},
           {{"--max-throughput-cv", "101"},
            "--max-throughput-cv: must be a percent from 0 to 100"},
           {{"--max-epochs-cv", "x"}, "--max-epochs-cv"},
           {{"--no-such-flag"}, "no-such-flag"},
           // One port rule for both listeners.
           {{"--grpc", "127.0.0.1:99999"},
            "--grpc: bad address '127.0.0.1:99999': port must be a number"},
           {{"--grpc", "127.0.0.1:65536"}, "--grpc: bad address"},
           {{"--grpc", ":7500"}, "--grpc: bad address ':7500': no host"},
           {{"--grpc", "127.0.0.1:+80"}, "--grpc: bad address"},
           {{"--http", "127.0.0.1:70000"}, "--http: bad address"},
           {{"--http", "localhost"},
            "--http: bad address 'localhost': no port"},
           {{"--grpc-idle-timeout-s", "0"}, "--grpc-idle-timeout-s"},
           // A heartbeat must fit three times into the node timeout.
           {{"--node-timeout-s", "10", "--heartbeat-interval-s", "5"},
            "heartbeat"},
       }) {
    absl::StatusOr<ServerOptions> options = ParseServerOptions(c.args);
    ASSERT_FALSE(options.ok()) << c.args[0];
    EXPECT_NE(std::string(options.status().message()).find(c.names),
              std::string::npos)
        << options.status();
  }
}

TEST(CoordinatorOptionsFrom, TakesTimeoutsAndReadsTheQueues) {
  ServerOptions flags;
  flags.node_timeout_s = 90;
  flags.node_retention_hours = 2;
  absl::StatusOr<CoordinatorOptions> options = CoordinatorOptionsFrom(flags);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->node_timeout_ms, 90'000);
  EXPECT_EQ(options->node_retention_ms, 2 * 3600 * 1000);
  EXPECT_EQ(options->heartbeat_interval_ms, 5'000);
  EXPECT_TRUE(options->queues.empty());

  char path[] = "/tmp/hpcai500_queues_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string bad = "queues: [not a queue]\n";
  ASSERT_EQ(write(fd, bad.data(), bad.size()),
            static_cast<ssize_t>(bad.size()));
  close(fd);
  flags.queues = path;
  options = CoordinatorOptionsFrom(flags);
  std::remove(path);
  ASSERT_FALSE(options.ok());
  EXPECT_NE(std::string(options.status().message()).find(path),
            std::string::npos)
      << options.status();
}

TEST(CheckExposure, BeyondLoopbackNeedsAuthTlsOrInsecure) {
  ServerOptions flags;
  EXPECT_TRUE(CheckExposure(flags, /*auth=*/false, /*tls=*/false).ok());
  flags.grpc = "0.0.0.0:7500";
  const absl::Status open = CheckExposure(flags, false, false);
  EXPECT_EQ(open.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(open.message()).find("--insecure"), std::string::npos);
  EXPECT_TRUE(CheckExposure(flags, /*auth=*/true, false).ok());
  EXPECT_TRUE(CheckExposure(flags, false, /*tls=*/true).ok());
  flags.insecure = true;
  EXPECT_TRUE(CheckExposure(flags, false, false).ok());
  EXPECT_TRUE(IsLoopback("localhost:1") && IsLoopback("[::1]:1") &&
              IsLoopback("127.0.0.2:1") && !IsLoopback("10.0.0.1:1"));
}

}  // namespace
}  // namespace hpcai500
