#include "server/coordinator/submit_requests.h"

#include <openssl/evp.h>

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace hpcai500 {
namespace {

// SHA-256 of `text`, in hex: a retry sends the same bytes, so equal
// digests mean the same spec and a day of them costs 64 bytes each.
std::string Sha256Hex(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha256(), nullptr);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), size));
}

}  // namespace

std::optional<Store::SubmitRequestId> SubmitRequestIdFor(
    const std::string& request_id, std::string_view spec_yaml) {
  if (request_id.empty()) return std::nullopt;
  return Store::SubmitRequestId{request_id, Sha256Hex(spec_yaml), ""};
}

absl::StatusOr<std::optional<v1::SubmitResponse>> ReplayedSubmit(
    Store& store, const std::string& user,
    const std::optional<Store::SubmitRequestId>& request, int64_t now_ms) {
  if (!request.has_value()) return std::nullopt;
  ASSIGN_OR_RETURN(std::optional<Store::StoredSubmitRequest> stored,
                   store.FindSubmitRequest(user, request->id, now_ms));
  if (!stored.has_value()) return std::nullopt;
  v1::SubmitResponse response = std::move(stored->response);
  const std::string first =
      absl::StrFormat("submission %d (runs %s) at %s", response.submission_id(),
                      absl::StrJoin(response.run_ids(), ", "),
                      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ",
                                       absl::FromUnixMillis(stored->created_ms),
                                       absl::UTCTimeZone()));
  if (stored->spec_digest != request->spec_digest) {
    return absl::AlreadyExistsError(absl::StrCat(
        "request id '", request->id, "' was used for another spec: ", first,
        "; a new spec needs a new request id"));
  }
  LogInfo(absl::StrCat("submit request '", request->id, "' of user ",
                       user.empty() ? "(none)" : user, " sent again: ", first,
                       " replayed"));
  response.set_replayed(true);
  return response;
}

}  // namespace hpcai500
