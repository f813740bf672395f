// What `hpcai500 leaderboard` prints from the coordinator's answer: one
// ranked table per workload and which rows of how many the page holds.
// Pure: the RPCs are in cli/commands/commands.h.
//
// Thread-safe: a free function.
#ifndef HPCAI500_CLI_TEXT_LEADERBOARD_TEXT_H_
#define HPCAI500_CLI_TEXT_LEADERBOARD_TEXT_H_

#include <string>

#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// The rows of `board` (the page that starts after the first `offset` rows)
// as one table per workload in the order they first appear, each headed by
// its workload when there are several (workloads are ranked apart, never in
// one ordering), then a footnote for each mark a row carries ("!"
// unrepeatable, "/F" normalised by the convergence check), then "rows A-B of
// N (--offset, --limit)" when the page is not the whole board. Without rows:
// "no results yet", or "no rows after the first OFFSET (of N)".
std::string FormatLeaderboard(const v1::LeaderboardResponse& board, int offset);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_TEXT_LEADERBOARD_TEXT_H_
