// The size in pages of a SQLite database file, read through a connection
// of its own beside the store that owns it: what Store::LimitPagesForTesting
// caps a file at to make its next growing write fail as on a full disk.
#ifndef HPCAI500_TESTS_COMMON_DATABASE_PAGES_H_
#define HPCAI500_TESTS_COMMON_DATABASE_PAGES_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace hpcai500::testing {

// The page count of the database at `path`; 0 when it cannot be read.
inline int64_t DatabasePages(const std::string& path) {
  sqlite3* db = nullptr;
  int64_t pages = 0;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) ==
      SQLITE_OK) {
    sqlite3_stmt* count = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA page_count", -1, &count, nullptr) ==
            SQLITE_OK &&
        sqlite3_step(count) == SQLITE_ROW) {
      pages = sqlite3_column_int64(count, 0);
    }
    sqlite3_finalize(count);
  }
  sqlite3_close(db);
  return pages;
}

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_COMMON_DATABASE_PAGES_H_
