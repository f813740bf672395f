// Helpers for tests that read the fixture files under tests/fixtures/ and
// other files of the checkout.
#ifndef HPCAI500_TESTS_COMMON_TEST_FILES_H_
#define HPCAI500_TESTS_COMMON_TEST_FILES_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace hpcai500::testing {

// The lines of a file under tests/fixtures/, without newlines. Empty when the
// file cannot be read (tests then fail on their expectations).
inline std::vector<std::string> FixtureLines(const std::string& relative) {
  std::ifstream in(std::string(HPCAI500_SOURCE_DIR) + "/tests/fixtures/" +
                   relative);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// The text of a file of the checkout, by its path from the root (e.g.
// "examples/fmnist-smoke.yaml"). Empty when the file cannot be read.
inline std::string SourceFileText(const std::string& relative) {
  std::ifstream in(std::string(HPCAI500_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_COMMON_TEST_FILES_H_
