// A stand-in for hpcai500-worker in the agent's integration tests. It takes
// the worker's flags; --config picks its behaviour:
//   succeed   two events (run_start, run_stop success), exit 0
//   fail      a message on stderr, exit 3
//   hang      starts a child in its group, then waits for a signal
//   stubborn  like hang, but it and its child ignore SIGTERM
//   environment  prints each variable of its environment ("ENV K=V"), then
//             as succeed
// It prints its rank environment and its child's pid to stdout.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern char** environ;

namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "<unset>" : value;
}

void WriteEvent(FILE* events, int seq, const char* key, const char* type,
                const char* extra) {
  std::fprintf(events,
               ":::MLLOG {\"namespace\": \"\", \"time_ms\": %d, "
               "\"event_type\": \"%s\", \"key\": \"%s\", \"value\": null, "
               "\"metadata\": {\"file\": \"fake\", \"lineno\": 0, \"seq\": %d, "
               "\"rank\": %s%s}}\n",
               1000 + seq, type, key, seq, Env("RANK").c_str(), extra);
  std::fflush(events);
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode, events_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--config") == 0) mode = argv[i + 1];
    if (std::strcmp(argv[i], "--events-file") == 0) events_path = argv[i + 1];
  }
  std::printf(
      "RANK=%s WORLD_SIZE=%s LOCAL_RANK=%s MASTER_ADDR=%s MASTER_PORT=%s\n",
      Env("RANK").c_str(), Env("WORLD_SIZE").c_str(), Env("LOCAL_RANK").c_str(),
      Env("MASTER_ADDR").c_str(), Env("MASTER_PORT").c_str());
  std::fflush(stdout);
  if (mode == "environment") {
    for (char** e = environ; *e != nullptr; ++e) std::printf("ENV %s\n", *e);
    std::fflush(stdout);
  }
  if (mode == "succeed" || mode == "environment") {
    FILE* events = std::fopen(events_path.c_str(), "a");
    if (events == nullptr) return 4;
    WriteEvent(events, 1, "run_start", "INTERVAL_START", "");
    WriteEvent(events, 2, "run_stop", "INTERVAL_END",
               ", \"status\": \"success\"");
    std::fclose(events);
    std::fprintf(stderr, "all good\n");
    return 0;
  }
  if (mode == "fail") {
    std::fprintf(stderr, "fatal: the fake worker failed on purpose\n");
    return 3;
  }
  if (mode == "stubborn") signal(SIGTERM, SIG_IGN);
  pid_t child = fork();
  if (child == 0) {
    for (;;) pause();
  }
  std::printf("child %d\n", static_cast<int>(child));
  std::fflush(stdout);
  for (;;) pause();
}
