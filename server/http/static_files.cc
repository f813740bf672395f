// The page's files from web/: see static_files.h.
#include "server/http/static_files.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/http/api_queries.h"

namespace hpcai500 {
namespace {

namespace http = boost::beast::http;
namespace fs = std::filesystem;

// The page's files are small; anything bigger is not ours to serve.
constexpr std::uintmax_t kMaxStaticFileBytes = 8 << 20;

bool IsInside(const fs::path& dir, const fs::path& candidate) {
  auto [dir_end, unused] =
      std::mismatch(dir.begin(), dir.end(), candidate.begin(), candidate.end());
  return dir_end == dir.end();
}

fs::path CanonicalDir(const std::string& dir) {
  std::error_code error;
  fs::path canonical = fs::canonical(dir, error);
  if (error || !fs::is_directory(canonical, error)) return {};
  return canonical;
}

}  // namespace

absl::string_view ContentTypeForPath(absl::string_view path) {
  static const auto* const kTypes =
      new std::map<absl::string_view, absl::string_view>{
          {".html", "text/html; charset=utf-8"},
          {".js", "text/javascript; charset=utf-8"},
          {".mjs", "text/javascript; charset=utf-8"},
          {".css", "text/css; charset=utf-8"},
          {".json", "application/json"},
          {".svg", "image/svg+xml"},
          {".png", "image/png"},
          {".ico", "image/x-icon"},
          {".txt", "text/plain; charset=utf-8"},
      };
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  if (dot != absl::string_view::npos &&
      (slash == absl::string_view::npos || dot > slash)) {
    auto it = kTypes->find(path.substr(dot));
    if (it != kTypes->end()) return it->second;
  }
  return "application/octet-stream";
}

StaticFiles::StaticFiles(const std::string& web_dir)
    : web_dir_(CanonicalDir(web_dir)) {}

absl::StatusOr<fs::path> StaticFiles::Resolve(
    absl::string_view url_path) const {
  auto decoded = PercentDecode(url_path, /*plus_is_space=*/false);
  if (!decoded.ok()) return decoded.status();
  absl::Status not_found =
      absl::NotFoundError(absl::StrCat("no such file: ", url_path));
  if (web_dir_.empty() || decoded->empty() || decoded->front() != '/') {
    return not_found;
  }
  std::string relative = decoded->substr(1);
  if (relative.empty()) relative = "index.html";
  // Refuse what could leave web_dir before touching the disk: "..", a
  // second leading slash (an absolute path) and Windows separators.
  fs::path relative_path(relative);
  if (relative_path.is_absolute() || relative.find('\\') != std::string::npos) {
    return not_found;
  }
  // web/node_modules holds the browser tests' packages, not the page.
  for (const fs::path& part : relative_path) {
    if (part == ".." || part == "node_modules") return not_found;
  }
  // Then resolve symlinks and check again that the file lies inside.
  std::error_code error;
  fs::path canonical = fs::canonical(web_dir_ / relative_path, error);
  if (error || !IsInside(web_dir_, canonical) ||
      !fs::is_regular_file(canonical, error)) {
    return not_found;
  }
  return canonical;
}

HttpResponse StaticFiles::Serve(absl::string_view url_path,
                                unsigned version) const {
  auto file = Resolve(url_path);
  if (!file.ok()) {
    return TextError(HttpStatusFor(file.status()), version,
                     file.status().message());
  }
  std::error_code error;
  std::uintmax_t size = fs::file_size(*file, error);
  if (error || size > kMaxStaticFileBytes) {
    return TextError(http::status::internal_server_error, version,
                     absl::StrCat("cannot serve ", url_path));
  }
  std::ifstream in(*file, std::ios::binary);
  std::ostringstream body;
  body << in.rdbuf();
  if (!in) {
    return TextError(http::status::internal_server_error, version,
                     absl::StrCat("cannot read ", url_path));
  }
  HttpResponse response =
      MakeResponse(http::status::ok, version,
                   ContentTypeForPath(file->string()), std::move(body).str());
  response.set(http::field::cache_control, "no-cache");
  if (absl::EndsWith(file->string(), ".html")) {
    response.set("Content-Security-Policy", "default-src 'self'");
  }
  return response;
}

}  // namespace hpcai500
