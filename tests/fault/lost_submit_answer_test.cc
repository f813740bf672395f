// A submit whose answer is lost is not stored twice: a TCP proxy between the
// real CLI and hpcai500d forwards the first submit but closes both sides
// once its run is stored, before the answer reaches the CLI ("Socket
// closed"). The CLI sends it again with the same request id and prints the
// one stored run; a second invocation with that id (a CI job's retry) gets
// the same run.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

// Relays TCP connections from 127.0.0.1:port() to 127.0.0.1:upstream, one
// at a time. On the first connection, each chunk the server sends is
// checked before it is forwarded: once `stored()` is true (the submit is
// committed, and the server answers only after that) the chunk may hold
// the answer, so both sides are closed instead. Later connections are
// relayed as they are.
class AnswerDroppingProxy {
 public:
  AnswerDroppingProxy(int upstream, std::function<bool()> stored)
      : upstream_(upstream), stored_(std::move(stored)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr = Loopback(0);
    socklen_t len = sizeof(addr);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
        ::listen(listener_, 8) == 0 &&
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) ==
            0) {
      port_ = ntohs(addr.sin_port);
    }
    thread_ = std::thread([this] { Serve(); });
  }
  ~AnswerDroppingProxy() {
    stop_ = true;
    thread_.join();
    ::close(listener_);
  }

  int port() const { return port_; }        // 0 when it could not listen
  int dropped() const { return dropped_; }  // connections cut
  int relayed() const { return relayed_; }  // connections accepted

 private:
  static sockaddr_in Loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    return addr;
  }

  // Waits up to 100 ms for `fd` to be readable; false on timeout.
  static bool Readable(int fd) {
    pollfd wait = {fd, POLLIN, 0};
    return ::poll(&wait, 1, 100) > 0;
  }

  // Writes all of buffer[0, n) to `fd`; false when the peer went away.
  static bool WriteAll(int fd, const char* buffer, ssize_t n) {
    while (n > 0) {
      const ssize_t written = ::send(fd, buffer, n, MSG_NOSIGNAL);
      if (written <= 0) return false;
      buffer += written;
      n -= written;
    }
    return true;
  }

  void Serve() {
    while (!stop_) {
      if (!Readable(listener_)) continue;
      const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr = Loopback(upstream_);
      if (::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) ==
          0) {
        Relay(client, server, /*drop_answer=*/relayed_++ == 0);
      }
      ::close(server);
      ::close(client);
    }
  }

  // Relays until either side closes (or the answer is dropped).
  void Relay(int client, int server, bool drop_answer) {
    char buffer[16384];
    while (!stop_) {
      pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (::poll(fds, 2, 100) <= 0) continue;
      if (fds[0].revents != 0) {
        const ssize_t n = ::recv(client, buffer, sizeof(buffer), 0);
        if (n <= 0 || !WriteAll(server, buffer, n)) return;
      }
      if (fds[1].revents != 0) {
        const ssize_t n = ::recv(server, buffer, sizeof(buffer), 0);
        if (n <= 0) return;
        if (drop_answer && stored_()) {
          ++dropped_;
          return;  // both closed by Serve
        }
        if (!WriteAll(client, buffer, n)) return;
      }
    }
  }

  const int upstream_;
  const std::function<bool()> stored_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> dropped_{0};
  std::atomic<int> relayed_{0};
  std::thread thread_;
};

// `text` up to its first newline.
std::string FirstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// The request id the CLI named when it sent the submit again ("sending
// request ID again"); "" when it did not.
std::string RetriedRequestId(const std::string& err) {
  constexpr char kMarker[] = "sending request ";
  const size_t at = err.find(kMarker);
  if (at == std::string::npos) return "";
  const size_t start = at + sizeof(kMarker) - 1;
  return err.substr(start, err.find(' ', start) - start);
}

TEST(LostSubmitAnswer, RetriedSubmitStoresOneRunAndPrintsIt) {
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator());
  const std::string address = cluster.grpc_address();
  const int upstream = std::stoi(address.substr(address.rfind(':') + 1));
  AnswerDroppingProxy proxy(upstream,
                            [&cluster] { return cluster.CountRuns() > 0; });
  ASSERT_NE(proxy.port(), 0);
  const std::string spec = cluster.WriteRunSpec("once", /*seed=*/1);
  const std::string through_proxy = "127.0.0.1:" + std::to_string(proxy.port());

  const CommandResult submit = RunCommand(
      {BinaryPath("hpcai500"), "--coordinator", through_proxy, "submit", spec},
      std::chrono::seconds(120));
  EXPECT_EQ(submit.exit_code, 0) << submit.err;
  EXPECT_EQ(proxy.dropped(), 1) << "the first answer was not dropped";
  EXPECT_NE(submit.err.find("Socket closed"), std::string::npos) << submit.err;
  EXPECT_NE(submit.err.find("was submitted before"), std::string::npos)
      << submit.err;
  const std::string printed = FirstLine(submit.out);
  EXPECT_EQ(cluster.CountRuns(), 1);
  EXPECT_TRUE(cluster.ShowRun(printed).is_object())
      << "the CLI printed the one stored run's id: " << submit.out;

  // A CI job's retry in another process, with the id the first one used.
  const std::string request_id = RetriedRequestId(submit.err);
  ASSERT_FALSE(request_id.empty()) << submit.err;
  const CommandResult again =
      cluster.Cli({"submit", spec, "--request-id", request_id});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, submit.out);
  EXPECT_EQ(cluster.CountRuns(), 1);

  PrintFaultFigures(
      "the answer to a submit lost (connection closed after the run was "
      "stored)",
      "the CLI sent request " + request_id + " again (" +
          std::to_string(proxy.relayed()) + " connections) and printed run " +
          printed + "; a second CLI with --request-id printed run " +
          FirstLine(again.out),
      "runs stored " + std::to_string(cluster.CountRuns()) +
          " for 1 submission");
}

}  // namespace
}  // namespace hpcai500::testing
