// BundleService (proto/bundle.proto): the export of result bundles over
// gRPC. It only checks, calls and converts: the bundle is made by
// ExportBundle (server/coordinator/bundle_export.h) and signed with the site
// key (server/auth/site_key_command.h), read at each call so that a key made
// beside a running hpcai500d is used at once.
//
// Thread-safe: it holds only what it borrows and a constant path.
#ifndef HPCAI500_SERVER_BUNDLE_SERVICE_H_
#define HPCAI500_SERVER_BUNDLE_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <string>
#include <utility>

#include "proto/bundle.grpc.pb.h"
#include "server/auth/access_control.h"
#include "server/http/coordinator_view.h"

namespace hpcai500 {

class BundleServiceImpl final : public v1::BundleService::Service {
 public:
  // `reads` and `access` are borrowed and must outlive the service; the
  // site key is the file at `site_key_path`.
  BundleServiceImpl(CoordinatorView* reads, AccessControl* access,
                    std::string site_key_path)
      : reads_(reads),
        access_(access),
        site_key_path_(std::move(site_key_path)) {}

  grpc::Status ExportBundle(grpc::ServerContext* context,
                            const v1::ExportBundleRequest* request,
                            v1::ExportBundleResponse* response) override;

 private:
  // Constant after construction.
  CoordinatorView* const reads_;
  AccessControl* const access_;
  const std::string site_key_path_;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_BUNDLE_SERVICE_H_
