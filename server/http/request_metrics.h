// How long the HTTP front end takes to answer, per route and method, as a
// Prometheus histogram family (hpcai500_http_request_duration_seconds) for
// /metrics. Routes are labelled by their pattern, never by a raw path, so
// that the number of series stays bounded whatever clients ask.
//
// Thread-safe: Observe and Text may be called from any thread.
#ifndef HPCAI500_SERVER_HTTP_REQUEST_METRICS_H_
#define HPCAI500_SERVER_HTTP_REQUEST_METRICS_H_

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/histogram.h"

namespace hpcai500 {

// The route label of a request target's path: "/api/v1/runs/:id" for
// "/api/v1/runs/12", "/api/v1/runs/:id/attempts/:n/ranks/:r/events", the
// other API routes as they are, "/metrics", "page" for any other path (the
// page's files); an API path that is no route is "/api/v1/unknown".
std::string RouteLabel(absl::string_view path);

class RequestMetrics {
 public:
  // Records one answered request.
  void Observe(absl::string_view route, absl::string_view method,
               double seconds);
  // The family's HELP and TYPE lines and every (route, method) series seen,
  // in label order; only the HELP and TYPE lines before the first request.
  std::string Text() const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<Histogram>>
      by_route_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_HTTP_REQUEST_METRICS_H_
