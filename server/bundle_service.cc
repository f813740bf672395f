// BundleService: see bundle_service.h.
#include "server/bundle_service.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/error_cause.h"
#include "methodology/registry.h"
#include "server/auth/site_key_command.h"
#include "server/coordinator/bundle_export.h"
#include "server/grpc_calls.h"

namespace hpcai500 {

grpc::Status BundleServiceImpl::ExportBundle(
    grpc::ServerContext* context, const v1::ExportBundleRequest* request,
    v1::ExportBundleResponse* response) {
  Principal who;
  grpc::Status allowed = Authorize(*access_, *context, Action::kRead,
                                   "export a result bundle", &who);
  if (!allowed.ok()) return allowed;
  absl::StatusOr<SiteKey> key = LoadSiteKey(site_key_path_);
  if (!key.ok()) return ToGrpcStatus(key.status());
  absl::StatusOr<v1::ExportBundleResponse> exported =
      hpcai500::ExportBundle(*reads_, Registry::Builtin(), *key, *request,
                             absl::ToUnixMillis(absl::Now()));
  if (!exported.ok()) return ToGrpcStatus(exported.status());
  *response = *std::move(exported);
  return grpc::Status::OK;
}

}  // namespace hpcai500
