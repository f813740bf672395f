// AnswerDroppingProxy: a TCP relay between the real CLI and hpcai500d that
// loses the answer to the first submit, for the fault tests of a submit
// whose answer is lost (lost_submit_answer_test.cc, submit_restart_test.cc).
//
// Relays connections from 127.0.0.1:port() to 127.0.0.1:upstream, one at a
// time. On the first connection, each chunk the server sends is checked
// before it is forwarded: once `stored()` is true (the submit is committed,
// and the server answers only after that) the chunk may hold the answer,
// so it is not forwarded, and the connection ends as `when` says. Later
// connections are relayed as they are; while upstream refuses them (a
// coordinator down) they are closed at once.
//
// Thread-safe: the relay runs on a thread of its own; the accessors may be
// called from any thread. `stored` is called on the relay's thread.
#ifndef HPCAI500_TESTS_FAULT_ANSWER_DROPPING_PROXY_H_
#define HPCAI500_TESTS_FAULT_ANSWER_DROPPING_PROXY_H_

#include <atomic>
#include <functional>
#include <thread>

namespace hpcai500::testing {

class AnswerDroppingProxy {
 public:
  // How the connection whose answer was dropped ends.
  enum class CloseWhen {
    kAtOnce,        // both sides closed as the answer arrives
    kServerCloses,  // the client's side held open, the server's read and
                    // discarded until it closes (the coordinator killed)
  };

  AnswerDroppingProxy(int upstream, std::function<bool()> stored,
                      CloseWhen when = CloseWhen::kAtOnce);
  ~AnswerDroppingProxy();
  AnswerDroppingProxy(const AnswerDroppingProxy&) = delete;
  AnswerDroppingProxy& operator=(const AnswerDroppingProxy&) = delete;

  int port() const { return port_; }        // 0 when it could not listen
  int dropped() const { return dropped_; }  // answers dropped (0 or 1)
  int relayed() const { return relayed_; }  // connections relayed upstream

 private:
  void Serve();
  // Relays until either side closes (or the answer is dropped).
  void Relay(int client, int server, bool drop_answer);

  const int upstream_;
  const std::function<bool()> stored_;
  const CloseWhen when_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> dropped_{0};
  std::atomic<int> relayed_{0};
  std::thread thread_;
};

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_FAULT_ANSWER_DROPPING_PROXY_H_
