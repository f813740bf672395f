// HttpRouter::Handle (server/http/router.h) on any request, over a fake
// coordinator and a scratch web folder next to a secret file (reachable
// only through a symlink pointing out). The input is a request head as
// text:
//   GET /api/v1/runs?state=running HTTP/1.1
//   Connection: close
// the method, the target and an optional HTTP/1.0 or HTTP/1.1 on the first
// line, a "Name: value" header on each further line. Whatever the request,
// no file outside the web folder is served, the answer is JSON under
// /api/v1/, has no body for HEAD and has a Content-Length.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "server/http/router.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/server/http/fake_coordinator_view.h"

namespace hpcai500 {
namespace {

namespace fs = std::filesystem;
namespace http = boost::beast::http;

constexpr char kSecret[] = "HPCAI500-FUZZ-SECRET";

void WriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// The router and what it borrows, made once per process; the scratch
// folder is removed at exit.
struct Fixture {
  Fixture() {
    char dir[] = "/tmp/hpcai500_router_fuzz_XXXXXX";
    FuzzCheck(mkdtemp(dir) != nullptr, "mkdtemp");
    root = dir;
    const fs::path web = root / "web";
    WriteFile(web / "index.html", "<title>page</title>");
    WriteFile(web / "app.js", "export const x = 1;");
    WriteFile(web / "style.css", "body {}");
    WriteFile(web / "sub" / "data.json", "{}");
    WriteFile(root / "secret.txt", kSecret);
    fs::create_symlink(root / "secret.txt", web / "link.txt");
    view.AddRun(SampleRun(7));
    view.AddRun(SampleRun(9));
    router = std::make_unique<HttpRouter>(&view, web.string());
  }
  ~Fixture() {
    std::error_code ignored;
    fs::remove_all(root, ignored);
  }

  fs::path root;
  FakeCoordinatorView view;
  std::unique_ptr<HttpRouter> router;
};

boost::beast::string_view Beast(absl::string_view text) {
  return boost::beast::string_view(text.data(), text.size());
}

// The request the input describes (see the top of the file).
HttpRequest RequestFromText(absl::string_view text) {
  HttpRequest request;
  request.version(11);
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  absl::string_view first = absl::StripSuffix(lines[0], "\r");
  if (absl::ConsumeSuffix(&first, " HTTP/1.0")) {
    request.version(10);
  } else {
    absl::ConsumeSuffix(&first, " HTTP/1.1");
  }
  std::pair<absl::string_view, absl::string_view> method_target =
      absl::StrSplit(first, absl::MaxSplits(' ', 1));
  request.method_string(Beast(method_target.first));
  request.target(Beast(method_target.second));
  for (size_t i = 1; i < lines.size(); ++i) {
    std::pair<absl::string_view, absl::string_view> header = absl::StrSplit(
        absl::StripSuffix(lines[i], "\r"), absl::MaxSplits(':', 1));
    if (header.first.empty()) continue;
    // A copy: Boost 1.74's beast::iequals, comparing a new name with an
    // equal one, reads a byte past its end, which may lie past the input.
    // HttpServer's names come from the parser's buffer, where ':' follows.
    const std::string name(header.first);
    request.insert(Beast(name),
                   Beast(absl::StripLeadingAsciiWhitespace(header.second)));
  }
  return request;
}

// Handles the request the input describes and checks the answer.
void HandleOne(absl::string_view text) {
  static Fixture fixture;
  const HttpRequest request = RequestFromText(text);
  const HttpResponse response = fixture.router->Handle(request);
  const std::string summary = std::string(request.method_string()) + " " +
                              std::string(request.target()) + " -> " +
                              std::to_string(response.result_int());
  // Error messages echo the path, which may name the secret: only what is
  // served (200) must never hold it.
  FuzzCheck(response.result() != http::status::ok ||
                !absl::StrContains(response.body(), kSecret),
            "nothing outside the web folder is served", summary);
  FuzzCheck(response.has_content_length(), "every answer has a Content-Length",
            summary);
  if (request.method() == http::verb::head) {
    FuzzCheck(response.body().empty(), "HEAD has no body", summary);
  }
  const absl::string_view target(request.target().data(),
                                 request.target().size());
  if (request.method() == http::verb::get &&
      absl::StartsWith(target.substr(0, target.find('?')), "/api/v1/")) {
    FuzzCheck(nlohmann::json::accept(response.body()), "an API answer is JSON",
              summary + "\n" + response.body());
  }
}

}  // namespace
}  // namespace hpcai500

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = hpcai500::FuzzText(data, size);
  hpcai500::HandleOne(absl::string_view(text.data(), text.size()));
  return 0;
}
