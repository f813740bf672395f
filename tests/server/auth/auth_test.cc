// Tokens: made with a role, checked against their keyed hash, refused when
// wrong, malformed or revoked; managed by `hpcai500d token` beside a
// running coordinator; AccessControl's role and rate rules.
#include "server/auth/auth.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/auth/access_control.h"
#include "server/auth/token_command.h"

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class FixedClock final : public Clock {
 public:
  int64_t NowMs() override { return now_ms; }
  int64_t now_ms = 1'700'000'000'000;
};

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hpcai500_auth_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    db_ = dir_ + "/a.db";
    store_ = *Store::Open(db_);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  TokenAuthenticator Tokens() {
    return *TokenAuthenticator::Open(store_.get(),
                                     TokenAuthenticator::KeyPathFor(db_));
  }

  std::string dir_, db_;
  FixedClock clock_;
  std::unique_ptr<Store> store_;
};

TEST_F(AuthTest, ATokenNamesItsUserAndRoleAndOnlyItsHashIsStored) {
  TokenAuthenticator tokens = Tokens();
  absl::StatusOr<NewToken> made =
      tokens.Create("alice", Role::kOperator, "", 5);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_THAT(made->text, ::testing::StartsWith("hai5_"));
  absl::StatusOr<Principal> who = tokens.Authenticate(made->text);
  ASSERT_TRUE(who.ok()) << who.status();
  EXPECT_EQ(who->user, "alice");
  EXPECT_EQ(who->role, Role::kOperator);
  const TokenRecord stored = **store_->FindToken(made->record.id);
  EXPECT_EQ(stored.hash.size(), 32u);
  EXPECT_EQ(made->text.find(stored.hash), std::string::npos);
  struct stat key {};
  ASSERT_EQ(stat(TokenAuthenticator::KeyPathFor(db_).c_str(), &key), 0);
  EXPECT_EQ(key.st_mode & 0777, 0600);
}

TEST_F(AuthTest, WrongMalformedAndRevokedTokensAreRefusedAlike) {
  TokenAuthenticator tokens = Tokens();
  const NewToken made = *tokens.Create("alice", Role::kAdmin, "", 5);
  std::string wrong = made.text;
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  for (const std::string& bad :
       {wrong, std::string("hai5_zz"), made.text + "0", std::string(""),
        std::string("Bearer ") + made.text}) {
    absl::StatusOr<Principal> who = tokens.Authenticate(bad);
    EXPECT_TRUE(absl::IsUnauthenticated(who.status())) << bad;
  }
  ASSERT_TRUE(store_->RevokeToken(made.record.id, 6).ok());
  EXPECT_TRUE(absl::IsUnauthenticated(tokens.Authenticate(made.text).status()));
  // Another key (a copied database without its key file) checks nothing.
  std::filesystem::remove(TokenAuthenticator::KeyPathFor(db_));
  const NewToken other = *tokens.Create("bob", Role::kViewer, "", 7);
  TokenAuthenticator rekeyed = Tokens();
  EXPECT_TRUE(
      absl::IsUnauthenticated(rekeyed.Authenticate(other.text).status()));
}

TEST_F(AuthTest, AgentTokensAreBoundToOneNode) {
  TokenAuthenticator tokens = Tokens();
  EXPECT_TRUE(absl::IsInvalidArgument(
      tokens.Create("a", Role::kAgent, "", 1).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      tokens.Create("a", Role::kViewer, "node-a", 1).status()));
  const NewToken agent = *tokens.Create("a", Role::kAgent, "node-a", 1);
  EXPECT_EQ(tokens.Authenticate(agent.text)->node, "node-a");
  EXPECT_TRUE(Allows(Role::kAgent, Action::kRegisterNode));
  EXPECT_FALSE(Allows(Role::kAgent, Action::kRead));
  EXPECT_FALSE(Allows(Role::kViewer, Action::kSubmit));
  EXPECT_TRUE(Allows(Role::kOperator, Action::kChangeOwnRun));
  EXPECT_FALSE(Allows(Role::kOperator, Action::kChangeAnyRun));
  EXPECT_TRUE(Allows(Role::kAdmin, Action::kAudit));
}

TEST_F(AuthTest, AuthTurnsOnWithTheFirstTokenAndRateLimitsEachUser) {
  AccessLimits limits;
  limits.requests_per_second = 1;
  limits.burst = 2;
  AccessControl access(store_.get(), &clock_, Tokens(), "", limits);
  EXPECT_FALSE(access.enabled());
  EXPECT_EQ(access.Authenticate("")->user, "local");
  const NewToken made = *Tokens().Create("alice", Role::kViewer, "", 1);
  EXPECT_TRUE(access.enabled());
  EXPECT_TRUE(absl::IsUnauthenticated(access.Authenticate("").status()));
  EXPECT_TRUE(access.Authenticate(made.text).ok());
  EXPECT_TRUE(access.Authenticate(made.text).ok());
  EXPECT_TRUE(
      absl::IsResourceExhausted(access.Authenticate(made.text).status()));
  clock_.now_ms += 1000;  // one more request a second
  EXPECT_TRUE(access.Authenticate(made.text).ok());
}

TEST_F(AuthTest, TokenCommandHelpAfterTheVerbPrintsThatVerbsUsage) {
  for (const auto& [args, usage] :
       {std::pair{std::vector<std::string>{"create", "--help"},
                  "usage: hpcai500d token create"},
        std::pair{std::vector<std::string>{"revoke", "-h"},
                  "usage: hpcai500d token revoke ID"},
        std::pair{std::vector<std::string>{"--help"},
                  "       hpcai500d token list"}}) {
    std::ostringstream out, err;
    EXPECT_EQ(RunTokenCommand(args, clock_, out, err), 0) << err.str();
    EXPECT_THAT(out.str(), HasSubstr(usage));
    EXPECT_THAT(out.str(), HasSubstr("exit codes: 0 done"));
    EXPECT_EQ(err.str(), "");
  }
  std::ostringstream out, err;
  RunTokenCommand({"create", "--help"}, clock_, out, err);
  EXPECT_THAT(out.str(), Not(HasSubstr("token revoke")));
  // An unknown verb is refused, --help or not.
  std::ostringstream bogus_out, bogus_err;
  EXPECT_EQ(RunTokenCommand({"bogus", "--help"}, clock_, bogus_out, bogus_err),
            2);
  EXPECT_THAT(bogus_err.str(), HasSubstr("unknown token command 'bogus'"));
  EXPECT_EQ(bogus_out.str(), "");
}

// A token's names pass the rules registration and printing rely on: a node
// name as an agent registers with, a user without control characters.
TEST_F(AuthTest, TokenNamesWithControlCharactersAreRefused) {
  TokenAuthenticator tokens = Tokens();
  for (const char* node : {"node\x1b[2J", "a b", "..", "node\nforged"}) {
    absl::StatusOr<NewToken> made = tokens.Create("a", Role::kAgent, node, 1);
    EXPECT_TRUE(absl::IsInvalidArgument(made.status())) << node;
    EXPECT_EQ(std::string(made.status().message()).find('\x1b'),
              std::string::npos);
  }
  for (const char* user : {"eve\x1b[2J", "eve\x7f", "eve\xc2\x9b"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(
        tokens.Create(user, Role::kViewer, "", 1).status()));
  }
  std::ostringstream out, err;
  EXPECT_EQ(RunTokenCommand({"create", "--role", "agent", "--node", "n\x1b[2J",
                             "--db", db_},
                            clock_, out, err),
            2);
  EXPECT_EQ(err.str().find('\x1b'), std::string::npos) << err.str();
  EXPECT_TRUE(store_->ListTokens()->empty());
}

TEST_F(AuthTest, AnAdminRegistersNoNodeButFullTrustDoes) {
  EXPECT_FALSE(Allows(Role::kAdmin, Action::kRegisterNode));
  AccessControl access(store_.get(), &clock_, Tokens(), "shared", {});
  const Principal admin{"root", Role::kAdmin, ""};
  const absl::Status refused =
      access.Require(admin, Action::kRegisterNode, "register a node", "peer");
  EXPECT_TRUE(absl::IsPermissionDenied(refused));
  EXPECT_THAT(refused.message(), HasSubstr("agent token bound to its node"));
  EXPECT_TRUE(access
                  .Require(*access.Authenticate("shared"),
                           Action::kRegisterNode, "register a node", "peer")
                  .ok());
  EXPECT_TRUE(LocalPrincipal().any_node);
}

TEST_F(AuthTest, TokenCommandWorksBesideARunningCoordinator) {
  // store_ holds the database as a running hpcai500d would.
  std::ostringstream out, err;
  ASSERT_EQ(RunTokenCommand({"create", "--role", "operator", "--user", "carol",
                             "--db", db_},
                            clock_, out, err),
            0)
      << err.str();
  const std::string token = out.str().substr(0, out.str().find('\n'));
  EXPECT_EQ(Tokens().Authenticate(token)->user, "carol");
  out.str("");
  ASSERT_EQ(RunTokenCommand({"list", "--db", db_}, clock_, out, err), 0);
  EXPECT_THAT(out.str(), HasSubstr("carol"));
  EXPECT_THAT(out.str(), HasSubstr("operator"));
  EXPECT_EQ(out.str().find(token.substr(22)), std::string::npos);  // secret
  const std::string id = token.substr(5, 16);
  ASSERT_EQ(RunTokenCommand({"revoke", id, "--db", db_}, clock_, out, err), 0);
  EXPECT_TRUE(absl::IsUnauthenticated(Tokens().Authenticate(token).status()));
  std::vector<v1::AuditEntry> audit = *store_->ListAudit(10, 0);
  ASSERT_EQ(audit.size(), 2u);
  EXPECT_EQ(audit[0].action(), "token_revoke");
  EXPECT_EQ(audit[1].action(), "token_create");
  std::ostringstream bad_out, bad_err;
  EXPECT_EQ(
      RunTokenCommand({"create", "--role", "king", "--user", "x", "--db", db_},
                      clock_, bad_out, bad_err),
      2);
  EXPECT_THAT(bad_err.str(), HasSubstr("role: must be one of"));
}

}  // namespace
}  // namespace hpcai500
