// A stand-in for hpcai500-worker in the fault tests. It takes the worker's
// flags, writes kEvents event lines for its rank (run_start first, run_stop
// "success" last) and exits 0. With --seed 1 every line is whole; with any
// other seed the line of seq kTornSeq is torn: cut short, then a newline, as
// a crash mid-write followed by later writes leaves it. kEvents is larger
// than the agent's unacknowledged-event window, so a torn line that walled
// the ack point would strand the run_stop behind it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int kEvents = 6000;
constexpr int kTornSeq = 3;

std::string Line(int seq, const char* rank) {
  const char* key = seq == 1         ? "run_start"
                    : seq == kEvents ? "run_stop"
                                     : "epoch_start";
  const char* extra = seq == kEvents ? ", \"status\": \"success\"" : "";
  char buffer[512];
  std::snprintf(buffer, sizeof(buffer),
                ":::MLLOG {\"namespace\": \"\", \"time_ms\": %d, "
                "\"event_type\": \"POINT_IN_TIME\", \"key\": \"%s\", "
                "\"value\": null, \"metadata\": {\"file\": \"fault\", "
                "\"lineno\": 0, \"seq\": %d, \"rank\": %s%s}}\n",
                1000 + seq, key, seq, rank, extra);
  return buffer;
}

}  // namespace

int main(int argc, char** argv) {
  std::string events_path;
  bool tear = true;
  for (int i = 1; i + 1 < argc; ++i) {  // bool flags stand alone
    if (std::strcmp(argv[i], "--events-file") == 0) events_path = argv[i + 1];
    if (std::strcmp(argv[i], "--seed") == 0) {
      tear = std::strcmp(argv[i + 1], "1") != 0;
    }
  }
  const char* rank = std::getenv("RANK");
  FILE* events = std::fopen(events_path.c_str(), "a");
  if (events == nullptr || rank == nullptr) return 4;
  for (int seq = 1; seq <= kEvents; ++seq) {
    std::string line = Line(seq, rank);
    if (tear && seq == kTornSeq) line = line.substr(0, 40) + "\n";
    std::fputs(line.c_str(), events);
  }
  return std::fclose(events) == 0 ? 0 : 5;
}
