#include "tests/fault/answer_dropping_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>

namespace hpcai500::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

// Waits up to 100 ms for `fd` to be readable; false on timeout.
bool Readable(int fd) {
  pollfd wait = {fd, POLLIN, 0};
  return ::poll(&wait, 1, 100) > 0;
}

// Writes all of buffer[0, n) to `fd`; false when the peer went away.
bool WriteAll(int fd, const char* buffer, ssize_t n) {
  while (n > 0) {
    const ssize_t written = ::send(fd, buffer, n, MSG_NOSIGNAL);
    if (written <= 0) return false;
    buffer += written;
    n -= written;
  }
  return true;
}

}  // namespace

AnswerDroppingProxy::AnswerDroppingProxy(int upstream,
                                         std::function<bool()> stored,
                                         CloseWhen when)
    : upstream_(upstream), stored_(std::move(stored)), when_(when) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof(addr);
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
      ::listen(listener_, 8) == 0 &&
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port_ = ntohs(addr.sin_port);
  }
  thread_ = std::thread([this] { Serve(); });
}

AnswerDroppingProxy::~AnswerDroppingProxy() {
  stop_ = true;
  thread_.join();
  ::close(listener_);
}

void AnswerDroppingProxy::Serve() {
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

void AnswerDroppingProxy::Relay(int client, int server, bool drop_answer) {
  char buffer[16384];
  bool dropping = false;  // the answer was dropped; the server is drained
  while (!stop_) {
    pollfd fds[2] = {{dropping ? -1 : client, POLLIN, 0}, {server, POLLIN, 0}};
    if (::poll(fds, 2, 100) <= 0) continue;
    if (fds[0].revents != 0) {
      const ssize_t n = ::recv(client, buffer, sizeof(buffer), 0);
      if (n <= 0 || !WriteAll(server, buffer, n)) return;
    }
    if (fds[1].revents != 0) {
      const ssize_t n = ::recv(server, buffer, sizeof(buffer), 0);
      if (n <= 0) return;
      if (dropping) continue;
      if (drop_answer && stored_()) {
        ++dropped_;
        if (when_ == CloseWhen::kAtOnce) return;  // both closed by Serve
        dropping = true;
        continue;
      }
      if (!WriteAll(client, buffer, n)) return;
    }
  }
}

}  // namespace hpcai500::testing
