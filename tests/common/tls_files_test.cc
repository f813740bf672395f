#include "common/tls_files.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/test_certificates.h"

namespace hpcai500 {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class TlsFilesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ =
        new fs::path(fs::temp_directory_path() /
                     ("hpcai500-tls-files-test-" + std::to_string(::getpid())));
    certs_ = new testing::TestCertificates((*dir_ / "certs").string());
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete certs_;
    delete dir_;
  }
  void SetUp() override { ASSERT_TRUE(certs_->ok()) << certs_->log(); }

  static std::string Path(const std::string& file) {
    return certs_->path(file);
  }
  // Writes `text` to a file beside the certificates; returns its path.
  static std::string Write(const std::string& name, const std::string& text) {
    std::string path = (*dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  static fs::path* dir_;
  static testing::TestCertificates* certs_;
};

fs::path* TlsFilesTest::dir_ = nullptr;
testing::TestCertificates* TlsFilesTest::certs_ = nullptr;

TEST_F(TlsFilesTest, ServerFilesAreReadWhole) {
  absl::StatusOr<TlsFiles> files = LoadServerTlsFiles(
      {Path("ca.pem"), Path("server.pem"), Path("server.key")});
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(files->ca_pem, certs_->pem("ca.pem"));
  EXPECT_EQ(files->cert_pem, certs_->pem("server.pem"));
  EXPECT_EQ(files->key_pem, certs_->pem("server.key"));
}

TEST_F(TlsFilesTest, NoFlagsMeanNoTls) {
  absl::StatusOr<TlsFiles> server = LoadServerTlsFiles({});
  absl::StatusOr<TlsFiles> client = LoadClientTlsFiles({});
  ASSERT_TRUE(server.ok() && client.ok());
  EXPECT_TRUE(server->cert_pem.empty() && client->ca_pem.empty());
}

TEST_F(TlsFilesTest, ClientMayGiveACaAloneOrWithACertificate) {
  EXPECT_TRUE(LoadClientTlsFiles({Path("ca.pem"), "", ""}).ok());
  EXPECT_TRUE(LoadClientTlsFiles(
                  {Path("ca.pem"), Path("node-a.pem"), Path("node-a.key")})
                  .ok());
}

TEST_F(TlsFilesTest, CertificateAndKeyComeTogether) {
  absl::Status no_key =
      LoadServerTlsFiles({"", Path("server.pem"), ""}).status();
  EXPECT_EQ(no_key.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_key.message(), HasSubstr("--tls-cert needs --tls-key"));
  absl::Status no_cert =
      LoadClientTlsFiles({Path("ca.pem"), "", Path("node-a.key")}).status();
  EXPECT_THAT(no_cert.message(), HasSubstr("--tls-key needs --tls-cert"));
}

TEST_F(TlsFilesTest, ClientCaNeedsAServerCertificate) {
  absl::Status status = LoadServerTlsFiles({Path("ca.pem"), "", ""}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--tls-client-ca needs --tls-cert"));
}

TEST_F(TlsFilesTest, ClientCertificateNeedsACa) {
  absl::Status status =
      LoadClientTlsFiles({"", Path("node-a.pem"), Path("node-a.key")}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--tls-cert needs --tls-ca"));
}

TEST_F(TlsFilesTest, KeyOfAnotherCertificateIsRefusedNamingBothFiles) {
  absl::Status status =
      LoadServerTlsFiles({"", Path("server.pem"), Path("node-a.key")}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--tls-key " + Path("node-a.key")));
  EXPECT_THAT(status.message(), HasSubstr("--tls-cert " + Path("server.pem")));
}

TEST_F(TlsFilesTest, MissingFileIsNotFoundNamingFlagAndPath) {
  const std::string missing = Path("missing.pem");
  absl::Status status = LoadClientTlsFiles({missing, "", ""}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("--tls-ca " + missing));
}

TEST_F(TlsFilesTest, FilesThatAreNotWhatTheFlagSaysAreInvalidArgument) {
  const std::string text = Write("token", "s3cret\n");
  const std::string broken = Write("broken.pem",
                                   "-----BEGIN CERTIFICATE-----\nbm90IGRlcg==\n"
                                   "-----END CERTIFICATE-----\n");
  struct Case {
    TlsFileFlags flags;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{
           {{text, "", ""}, "--tls-ca " + text + ": is not a PEM file"},
           {{broken, "", ""}, "--tls-ca " + broken + ": a certificate"},
           {{Path("ca.key"), "", ""}, "holds no PEM certificate"},
           {{Path("ca.pem"), Path("node-a.pem"), Path("node-a.pem")},
            "--tls-key " + Path("node-a.pem") + ": holds no"},
       }) {
    absl::Status status = LoadClientTlsFiles(c.flags).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(status.message(), HasSubstr(c.expected));
  }
}

TEST(TlsFlags, ClientCertificateFlagsOnlyWhereAsked) {
  TlsFileFlags cli;
  std::unique_ptr<CLI::App> app = NewFlagApp("hpcai500");
  AddClientTlsFlags(*app, &cli, /*with_client_certificate=*/false);
  EXPECT_TRUE(ParseFlags(*app, {"--tls-ca", "ca.pem"}).ok());
  EXPECT_EQ(cli.ca, "ca.pem");
  TlsFileFlags cli_with_cert;
  app = NewFlagApp("hpcai500");
  AddClientTlsFlags(*app, &cli_with_cert, /*with_client_certificate=*/false);
  EXPECT_FALSE(ParseFlags(*app, {"--tls-cert", "c"}).ok());

  TlsFileFlags agent;
  app = NewFlagApp("hpcai500-agent");
  AddClientTlsFlags(*app, &agent, /*with_client_certificate=*/true);
  EXPECT_TRUE(
      ParseFlags(*app, {"--tls-ca=a", "--tls-cert", "c", "--tls-key", "k"})
          .ok());
  EXPECT_EQ(agent.cert, "c");
  EXPECT_EQ(agent.key, "k");

  TlsFileFlags server;
  app = NewFlagApp("hpcai500d");
  AddServerTlsFlags(*app, &server);
  EXPECT_TRUE(ParseFlags(*app, {"--tls-client-ca", "ca", "--tls-cert", "c",
                                "--tls-key", "k"})
                  .ok());
  EXPECT_EQ(server.ca, "ca");
}

}  // namespace
}  // namespace hpcai500
