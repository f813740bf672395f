// Throw-away TLS material for tests, made with Debian's openssl by
// tests/common/make_test_certificates.sh into a folder of the test's own: a
// CA, a server certificate for localhost and 127.0.0.1, a client certificate
// for node-a, a second unrelated CA and a node-a certificate it signed. See
// the script for the file names.
//
// Not thread-safe: made once by one test thread, then read.
#ifndef HPCAI500_TESTS_COMMON_TEST_CERTIFICATES_H_
#define HPCAI500_TESTS_COMMON_TEST_CERTIFICATES_H_

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

namespace hpcai500::testing {

class TestCertificates {
 public:
  // Makes the files in `dir` (created if missing). ok() is false when
  // openssl failed; its output is in DIR/openssl.log.
  explicit TestCertificates(std::string dir) : dir_(std::move(dir)) {
    const std::string command = "bash '" + std::string(HPCAI500_SOURCE_DIR) +
                                "/tests/common/make_test_certificates.sh' '" +
                                dir_ + "' >'" + dir_ + "/openssl.log' 2>&1";
    std::system(("mkdir -p '" + dir_ + "'").c_str());
    ok_ = std::system(command.c_str()) == 0;
  }

  bool ok() const { return ok_; }
  const std::string& dir() const { return dir_; }

  // The path of one file, e.g. path("ca.pem").
  std::string path(const std::string& file) const { return dir_ + "/" + file; }

  // The text of one file ("" if it cannot be read).
  std::string pem(const std::string& file) const {
    std::ifstream in(path(file));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // The openssl output, for a failure message.
  std::string log() const { return pem("openssl.log"); }

 private:
  std::string dir_;
  bool ok_ = false;
};

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_COMMON_TEST_CERTIFICATES_H_
