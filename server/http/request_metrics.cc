#include "server/http/request_metrics.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace hpcai500 {
namespace {

constexpr char kFamily[] = "hpcai500_http_request_duration_seconds";

bool IsNumber(absl::string_view part) {
  return !part.empty() &&
         std::all_of(part.begin(), part.end(), absl::ascii_isdigit);
}

}  // namespace

std::string RouteLabel(absl::string_view path) {
  if (path == "/metrics") return "/metrics";
  absl::string_view route = path;
  if (!absl::ConsumePrefix(&route, "/api/v1/")) return "page";
  std::vector<absl::string_view> parts = absl::StrSplit(route, '/');
  // runs/ID, runs/ID/ranks, runs/ID/attempts/N/ranks/R/(events|stderr).
  if (parts.size() == 1 &&
      (parts[0] == "leaderboard" || parts[0] == "runs" || parts[0] == "nodes" ||
       parts[0] == "history" || parts[0] == "scaling")) {
    return absl::StrCat("/api/v1/", parts[0]);
  }
  if (parts.size() == 2 && parts[0] == "index" &&
      (parts[1] == "systems" || parts[1] == "series")) {
    return absl::StrCat("/api/v1/", route);
  }
  if (parts.size() < 2 || parts[0] != "runs" || !IsNumber(parts[1])) {
    return "/api/v1/unknown";
  }
  std::vector<std::string> label = {"runs", ":id"};
  if (parts.size() == 3 && parts[2] == "ranks") {
    label.push_back("ranks");
  } else if (parts.size() == 7 && parts[2] == "attempts" &&
             IsNumber(parts[3]) && parts[4] == "ranks" && IsNumber(parts[5]) &&
             (parts[6] == "events" || parts[6] == "stderr")) {
    label.insert(label.end(),
                 {"attempts", ":n", "ranks", ":r", std::string(parts[6])});
  } else if (parts.size() != 2) {
    return "/api/v1/unknown";
  }
  return absl::StrCat("/api/v1/", absl::StrJoin(label, "/"));
}

void RequestMetrics::Observe(absl::string_view route, absl::string_view method,
                             double seconds) {
  Histogram* histogram = nullptr;
  {
    absl::MutexLock lock(&mu_);
    std::unique_ptr<Histogram>& slot =
        by_route_[{std::string(route), std::string(method)}];
    if (slot == nullptr) slot = std::make_unique<Histogram>();
    histogram = slot.get();  // never removed: valid for our life
  }
  histogram->Observe(seconds);
}

std::string RequestMetrics::Text() const {
  std::string text = absl::StrCat(
      "# HELP ", kFamily,
      " Time from a request read to its response made, by route and "
      "method.\n# TYPE ",
      kFamily, " histogram\n");
  absl::MutexLock lock(&mu_);
  for (const auto& [key, histogram] : by_route_) {
    AppendHistogramText(kFamily,
                        absl::StrCat(PrometheusLabel("route", key.first), ",",
                                     PrometheusLabel("method", key.second)),
                        histogram->Read(), &text);
  }
  return text;
}

}  // namespace hpcai500
