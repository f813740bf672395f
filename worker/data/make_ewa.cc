#include "worker/data/make_ewa.h"

#include <iostream>
#include <stdexcept>
#include <string>

#include "worker/data/ewa_generator.h"
#include "worker/flags.h"

namespace hpcai500::worker {

int MakeEwaMain(int argc, char** argv) {
  EwaGeneratorOptions options;
  const char* usage =
      "usage: hpcai500-worker make-ewa --out FILE [--samples N] [--height H] "
      "[--width W] [--seed S]\n"
      "exit codes: 0 written, 1 the file could not be written, 2 bad "
      "command line";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg == "--help" || arg == "-h") {
      std::cout << usage << "\n";
      return 0;
    }
    if (!TakeFlagAndValue(argc, argv, &i, &arg, &value)) {
      std::cerr << "make-ewa: " << arg << " needs a value\n" << usage << "\n";
      return 2;
    }
    try {
      size_t used = 0;
      if (arg == "--out") {
        options.out = value;
        used = value.size();
      } else if (arg == "--samples") {
        options.samples = std::stoll(value, &used);
      } else if (arg == "--height") {
        options.height = std::stoll(value, &used);
      } else if (arg == "--width") {
        options.width = std::stoll(value, &used);
      } else if (arg == "--seed") {
        options.seed = std::stoull(value, &used);
      } else {
        std::cerr << "make-ewa: unknown flag " << arg << "\n" << usage << "\n";
        return 2;
      }
      if (used != value.size()) throw std::invalid_argument(value);
    } catch (const std::logic_error&) {
      std::cerr << "make-ewa: bad value '" << value << "' for " << arg << "\n";
      return 2;
    }
  }
  if (options.out.empty()) {
    std::cerr << "make-ewa: --out is required\n" << usage << "\n";
    return 2;
  }
  try {
    WriteSyntheticEwaFile(options);
  } catch (const std::invalid_argument& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "make-ewa: " << e.what() << "\n";
    return 1;
  }
  std::cout << "make-ewa: wrote " << options.samples << " samples of "
            << options.height << "x" << options.width << " to " << options.out
            << "\n";
  return 0;
}

}  // namespace hpcai500::worker
