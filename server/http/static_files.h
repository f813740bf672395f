// The leaderboard page's files (web/): which file a URL path names, and the
// file as an answer. Only regular files inside the folder, outside its
// node_modules, are served, and only after symlinks are resolved; nothing
// else on the disk is reachable from a URL.
//
// Thread-safe: const after construction.
#ifndef HPCAI500_SERVER_HTTP_STATIC_FILES_H_
#define HPCAI500_SERVER_HTTP_STATIC_FILES_H_

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/http/answers.h"

namespace hpcai500 {

// The content type served for a file name, by its extension
// ("application/octet-stream" when unknown).
absl::string_view ContentTypeForPath(absl::string_view path);

class StaticFiles {
 public:
  // Serves the files of `web_dir` (a missing folder serves nothing: every
  // path is NotFound).
  explicit StaticFiles(const std::string& web_dir);

  // The file under web_dir that a URL path names, or NotFound when it names
  // none (outside web_dir, "..", not a regular file) and InvalidArgument for
  // a malformed path. `url_path` is the target without its query. "/" is
  // index.html.
  absl::StatusOr<std::filesystem::path> Resolve(
      absl::string_view url_path) const;

  // The file `url_path` names, with its content type, revalidated on every
  // use (no-cache), an HTML page confined to its own origin's scripts;
  // plain-text 404 or 400 as Resolve says, 500 when it cannot be read or is
  // larger than a page's file may be.
  HttpResponse Serve(absl::string_view url_path, unsigned version) const;

 private:
  const std::filesystem::path web_dir_;  // canonical; empty when missing
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_HTTP_STATIC_FILES_H_
