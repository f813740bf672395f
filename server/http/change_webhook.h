// The operator's webhook for new change points (hpcai500d --change-webhook
// URL; docs/design.md "Change points"): each change point in a metric's bad
// direction that a run's end reveals is POSTed to the URL as JSON
// ({"event": "change_point", "change": {...ChangePoint}}) from a thread of
// its own, retried with exponential back-off when the receiver cannot be
// reached or answers other than 2xx, and dropped after max_attempts. The
// deliveries, the failed attempts and the changes dropped are counted in
// /metrics. Plain HTTP: a receiver beyond the host belongs behind a proxy
// that adds TLS.
//
// Thread-safe: Notify and the counters from any thread; the delivery
// thread is the object's own and stops in the destructor.
#ifndef HPCAI500_SERVER_HTTP_CHANGE_WEBHOOK_H_
#define HPCAI500_SERVER_HTTP_CHANGE_WEBHOOK_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

struct WebhookOptions {
  std::string url;  // http://HOST[:PORT]/PATH
  // Tries per change point, the first included.
  int max_attempts = 6;
  // The wait after the first failed try, doubled after each (at most
  // max_backoff): 1 s, 2 s, 4 s, ...
  absl::Duration first_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Minutes(1);
  // One try's connect, send and answer.
  absl::Duration timeout = absl::Seconds(10);
};

// An http:// URL split: host, port ("80" when not given) and the target
// (path and query, "/" when empty).
struct WebhookUrl {
  std::string host;
  std::string port;
  std::string target;
};
// InvalidArgument "--change-webhook: ..." for a URL that is not
// http://HOST[:PORT][/PATH] (https and others are refused: see above).
absl::StatusOr<WebhookUrl> ParseWebhookUrl(absl::string_view url);

class ChangeWebhook {
 public:
  // Starts the delivery thread. InvalidArgument for the URL (ParseWebhookUrl)
  // or max_attempts below 1.
  static absl::StatusOr<std::unique_ptr<ChangeWebhook>> Create(
      const WebhookOptions& options);
  // Stops the thread: the try in flight ends (at most options.timeout) and
  // what is still queued is dropped.
  ~ChangeWebhook();

  ChangeWebhook(const ChangeWebhook&) = delete;
  ChangeWebhook& operator=(const ChangeWebhook&) = delete;

  // Queues `change` for delivery; never waits on the network.
  void Notify(const v1::ChangePoint& change);

  // Prometheus text of the counters below.
  std::string MetricsText() const;
  int64_t delivered() const;
  int64_t failed_attempts() const;
  int64_t dropped() const;

 private:
  ChangeWebhook(const WebhookOptions& options, WebhookUrl url);
  void Deliver();
  // One POST of `body`: OK on a 2xx answer, else why not.
  absl::Status PostOnce(const std::string& body) const;

  // Constant after construction.
  const WebhookOptions options_;
  const WebhookUrl url_;

  mutable absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);  // JSON bodies
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t delivered_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t failed_attempts_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;

  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_HTTP_CHANGE_WEBHOOK_H_
