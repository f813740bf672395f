#include "server/coordinator/queues.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/test_files.h"

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;

constexpr char kTwoQueues[] =
    "queues:\n"
    "  - name: cpu\n"
    "    default: true\n"
    "  - name: gpu\n"
    "    nodes: {accelerator: h200}\n"
    "    priority: 200\n"
    "    max_priority: 500\n"
    "    max_time_limit: 2h\n";

TEST(Queues, ParsesTheFileWithDefaults) {
  absl::StatusOr<std::vector<Scheduler::Queue>> queues =
      ParseQueues(kTwoQueues);
  ASSERT_TRUE(queues.ok()) << queues.status();
  ASSERT_EQ(queues->size(), 2u);
  EXPECT_TRUE((*queues)[0].is_default);
  EXPECT_EQ((*queues)[0].priority, 100);
  EXPECT_TRUE((*queues)[0].node_labels.empty());
  EXPECT_EQ((*queues)[1].node_labels.at("accelerator"), "h200");
  EXPECT_EQ((*queues)[1].max_priority, 500);
  EXPECT_EQ((*queues)[1].max_time_limit_s, 7200);
  // One queue is the default without saying so.
  EXPECT_TRUE((*ParseQueues("queues:\n  - name: only\n"))[0].is_default);
}

TEST(Queues, TheDeployExampleParses) {
  const std::string text =
      testing::SourceFileText("deploy/queues.example.yaml");
  ASSERT_FALSE(text.empty());
  absl::StatusOr<std::vector<Scheduler::Queue>> queues = ParseQueues(text);
  ASSERT_TRUE(queues.ok()) << queues.status();
  EXPECT_EQ(queues->size(), 2u);
  EXPECT_EQ((*queues)[0].max_time_limit_s, 24 * 3600);
  EXPECT_EQ((*queues)[1].preflight_max_age_s, 3600);
}

TEST(Queues, RefusesABadFileNamingTheQueueAndTheField) {
  struct Case {
    const char* yaml;
    const char* expected;
  } cases[] = {
      {"queues: []\n", "holding a list of queues"},
      {"queues:\n  - name: a b\n", "queue 1: name: required"},
      {"queues:\n  - name: a\n    colour: red\n",
       "queue 1 (a): unknown key 'colour'"},
      {"queues:\n  - name: a\n  - name: a\n", "queue 2 (a): name given twice"},
      {"queues:\n  - name: a\n  - name: b\n", "exactly one queue"},
      {"queues:\n  - name: a\n    priority: 9\n    max_priority: 5\n",
       "priority 9 is above max_priority 5"},
      {"queues:\n  - name: a\n    max_time_limit: soon\n",
       "max_time_limit: must be seconds or a duration"},
      {"queues:\n  - name: a\n    priority: -1\n",
       "priority: must be an integer from 0"},
      {"queues: [", "not valid YAML"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<Scheduler::Queue>> queues = ParseQueues(c.yaml);
    ASSERT_FALSE(queues.ok()) << c.yaml;
    EXPECT_EQ(queues.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(queues.status().message(), HasSubstr(c.expected)) << c.yaml;
  }
}

TEST(Queues, ChoosesTheQueuePriorityAndTimeLimitOfARun) {
  const std::vector<Scheduler::Queue> queues = *ParseQueues(kTwoQueues);
  v1::RunSpec spec;
  QueueChoice choice = *ChooseQueue(spec, queues);
  EXPECT_EQ(choice.queue, "cpu");
  EXPECT_EQ(choice.priority, 100);
  EXPECT_EQ(choice.time_limit_s, 0);

  spec.set_queue("gpu");
  choice = *ChooseQueue(spec, queues);
  EXPECT_EQ(choice.priority, 200);
  EXPECT_EQ(choice.time_limit_s, 7200);  // the queue's max as the limit

  spec.set_priority(600);
  EXPECT_THAT(ChooseQueue(spec, queues).status().message(),
              HasSubstr("field 'priority': queue gpu allows at most 500"));
  spec.set_priority(0);  // set, and lowest
  EXPECT_EQ(ChooseQueue(spec, queues)->priority, 0);
  spec.set_time_limit_s(9000);
  EXPECT_THAT(ChooseQueue(spec, queues).status().message(),
              HasSubstr("field 'time_limit': queue gpu allows at most 7200"));
  spec.set_queue("tpu");
  EXPECT_THAT(ChooseQueue(spec, queues).status().message(),
              HasSubstr("unknown queue 'tpu'; queues: cpu, gpu"));
}

}  // namespace
}  // namespace hpcai500
