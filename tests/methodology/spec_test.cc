#include "methodology/spec.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "methodology/spec_fields.h"

namespace hpcai500 {
namespace {

constexpr char kGood[] = R"(name: fmnist-smoke
workload: image_classification
config: fashion_mnist_smoke
level: system
nodes: 1
ranks_per_node: 2
device: cpu
batch_size: 64
precision: fp32
seed: 1
system: local-cpu
)";

absl::StatusOr<v1::RunSpec> Parse(const std::string& yaml) {
  return ParseRunSpec(yaml, Registry::Builtin());
}

// Parses kGood with `from` replaced by `to` and returns the error message.
std::string RefusalOf(const std::string& from, const std::string& to) {
  std::string yaml = absl::StrReplaceAll(kGood, {{from, to}});
  EXPECT_NE(yaml, kGood) << "replacement of '" << from << "' did nothing";
  absl::StatusOr<v1::RunSpec> spec = Parse(yaml);
  if (spec.ok()) return "accepted";
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(spec.status().message());
}

TEST(RunSpec, AcceptsAGoodSpecAndFillsDefaults) {
  absl::StatusOr<v1::RunSpec> spec = Parse(kGood);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "fmnist-smoke");
  EXPECT_EQ(spec->ranks_per_node(), 2);
  EXPECT_EQ(spec->epochs(),
            Registry::Builtin()
                .FindConfig("image_classification", "fashion_mnist_smoke")
                ->epochs);
  EXPECT_EQ(spec->repetitions(), 1);
  EXPECT_TRUE(spec->ranked());
}

TEST(RunSpec, AcceptsLarsAtTheFreeLevelOnly) {
  const std::string lars = absl::StrReplaceAll(
      kGood, {{"config: fashion_mnist_smoke", "config: imagenet_lars"}});
  EXPECT_TRUE(
      Parse(absl::StrReplaceAll(lars, {{"level: system", "level: free"}}))
          .ok());
  absl::StatusOr<v1::RunSpec> hardware =
      Parse(absl::StrReplaceAll(lars, {{"level: system", "level: hardware"}}));
  ASSERT_FALSE(hardware.ok());
  EXPECT_NE(hardware.status().message().find("LARS"), std::string::npos);
}

TEST(RunSpec, FewerEpochsMakeItUnranked) {
  absl::StatusOr<v1::RunSpec> spec = Parse(std::string(kGood) + "epochs: 1\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->epochs(), 1);
  EXPECT_FALSE(spec->ranked());
}

TEST(RunSpec, NoopIsNeverRankedEvenWithItsWholeBudget) {
  absl::StatusOr<v1::RunSpec> spec = Parse(absl::StrReplaceAll(
      kGood, {{"workload: image_classification", "workload: noop"},
              {"config: fashion_mnist_smoke", "config: noop"},
              {"batch_size: 64", "batch_size: 1"},
              {"level: system", "level: hardware"}}));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->epochs(), 1);
  EXPECT_FALSE(spec->ranked());
}

TEST(RunSpec, RoundTripsThroughYaml) {
  absl::StatusOr<v1::RunSpec> spec = Parse(kGood);
  ASSERT_TRUE(spec.ok());
  absl::StatusOr<v1::RunSpec> again = Parse(RunSpecToYaml(*spec));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(*again, *spec));
}

// Every RunSpec field is a row of the one table of spec fields
// (methodology/spec_fields.h): the spec of every row's example sets each field
// the parser does not compute, and RunSpecToYaml gives it back whole.
TEST(RunSpec, EveryFieldIsARowOfTheTableAndRoundTripsThroughYaml) {
  std::string yaml;
  for (const SpecField& field : SpecFields()) {
    absl::StrAppend(&yaml, field.key, ": ", field.example, "\n");
  }
  absl::StatusOr<v1::RunSpec> spec = Parse(yaml);
  ASSERT_TRUE(spec.ok()) << spec.status() << " in:\n" << yaml;
  const google::protobuf::Descriptor* descriptor = v1::RunSpec::descriptor();
  const google::protobuf::Reflection* reflection = v1::RunSpec::GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = descriptor->field(i);
    const std::string name(field->name());
    if (std::find(kComputedSpecFields.begin(), kComputedSpecFields.end(),
                  name) != kComputedSpecFields.end()) {
      continue;
    }
    const bool set = field->is_repeated()
                         ? reflection->FieldSize(*spec, field) > 0
                         : reflection->HasField(*spec, field);
    EXPECT_TRUE(set) << "RunSpec." << name
                     << " is left at its default by the examples of "
                        "SpecFields(): a field without a row?";
  }
  const std::string written = RunSpecToYaml(*spec);
  absl::StatusOr<v1::RunSpec> again = Parse(written);
  ASSERT_TRUE(again.ok()) << again.status() << " in:\n" << written;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*again, *spec))
      << written;
}

struct Refusal {
  std::string from;
  std::string to;
  std::string expected;  // a substring of the message
};

class RunSpecRefusal : public ::testing::TestWithParam<Refusal> {};

TEST_P(RunSpecRefusal, NamesTheFieldAndTheReason) {
  const Refusal& r = GetParam();
  std::string message = RefusalOf(r.from, r.to);
  EXPECT_NE(message.find(r.expected), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    EachField, RunSpecRefusal,
    ::testing::Values(
        Refusal{"seed: 1\n", "seed: 1\ncolour: blue\n",
                "field 'colour': unknown key"},
        Refusal{"name: fmnist-smoke\n", "", "field 'name': is required"},
        Refusal{"name: fmnist-smoke", "name: a/b",
                "field 'name': character '/'"},
        Refusal{"workload: image_classification", "workload: chess",
                "field 'workload': unknown workload 'chess'"},
        Refusal{"config: fashion_mnist_smoke", "config: mnist",
                "field 'config': unknown config 'mnist'"},
        Refusal{"config: fashion_mnist_smoke", "config: imagenet_lars",
                "field 'config': config 'imagenet_lars' uses LARS, which only "
                "level free allows"},
        Refusal{"level: system", "level: anything",
                "field 'level': must be one of hardware, system, free"},
        Refusal{"nodes: 1", "nodes: 0", "field 'nodes': must be between 1"},
        Refusal{"nodes: 1", "nodes: two",
                "field 'nodes': must be an integer, got 'two'"},
        Refusal{"ranks_per_node: 2", "ranks_per_node: 1000",
                "field 'ranks_per_node': must be between 1 and 64"},
        Refusal{"device: cpu", "device: tpu", "field 'device': must be one of"},
        Refusal{"batch_size: 64", "batch_size: -3",
                "field 'batch_size': must be between 1"},
        Refusal{"precision: fp32", "precision: fp8",
                "field 'precision': must be one of"},
        Refusal{"precision: fp32", "precision: fp16",
                "field 'precision': fp16 needs device cuda"},
        Refusal{"seed: 1", "seed: -1", "field 'seed': must be between 0"},
        Refusal{"seed: 1\n", "seed: 1\ncompression: zip\n",
                "field 'compression': must be one of none, fp16, bf16, "
                "powersgd"},
        Refusal{"seed: 1\n", "seed: 1\ncompression: bf16\n",
                "field 'compression': bf16 needs device cuda"},
        Refusal{"system: local-cpu", "system: [a, b]",
                "field 'system': must be a string"},
        Refusal{"seed: 1\n", "seed: 1\nepochs: 1000\n",
                "field 'epochs': exceeds the epoch budget"},
        Refusal{"seed: 1\n", "seed: 1\nseed: 2\n", "seed"},
        Refusal{"seed: 1\n", "seed: 1\nmax_retries: 11\n",
                "field 'max_retries': must be between 0 and 10"},
        Refusal{"seed: 1\n", "seed: 1\ntime_limit: soon\n",
                "field 'time_limit': must be seconds or a duration"},
        Refusal{"seed: 1\n", "seed: 1\ntime_limit: -5\n",
                "field 'time_limit': must be between 0"},
        Refusal{"seed: 1\n", "seed: 1\nabort_if_hopeless: 1\n",
                "field 'abort_if_hopeless': must be a probability above 0 "
                "and below 1, got '1'"},
        Refusal{"seed: 1\n", "seed: 1\nabort_if_hopeless: 0\n",
                "field 'abort_if_hopeless': must be a probability above 0"},
        Refusal{"seed: 1\n", "seed: 1\nabort_if_hopeless: often\n",
                "field 'abort_if_hopeless': must be a probability above 0 "
                "and below 1, got 'often'"},
        Refusal{"seed: 1\n", "seed: 1\nmin_epochs: 1\n",
                "field 'min_epochs': needs abort_if_hopeless"},
        Refusal{"seed: 1\n", "seed: 1\nabort_if_hopeless: 0.1\nmin_epochs: 3\n",
                "field 'min_epochs': must be between 0 and 2"},
        Refusal{"seed: 1\n", "seed: 1\nabort_if_hopeless: 0.1\nmin_epochs: x\n",
                "field 'min_epochs': must be an integer, got 'x'"},
        Refusal{"seed: 1\n", "seed: 1\npriority: -1\n",
                "field 'priority': must be between 0 and 1000000"},
        Refusal{"seed: 1\n", "seed: 1\nqueue: a/b\n",
                "field 'queue': character '/' is not allowed"},
        Refusal{"seed: 1\n", "seed: 1\nconstraints: [rack]\n",
                "field 'constraints': each item must be \"label=value\""},
        Refusal{"seed: 1\n", "seed: 1\nconstraints: rack=1\n",
                "field 'constraints': must be a mapping"},
        Refusal{"seed: 1\n", "seed: 1\nconstraints: [a=1, a=2]\n",
                "field 'constraints': label 'a' given twice"},
        Refusal{"name: fmnist-smoke\n", "name: [unclosed\n",
                "spec is not valid YAML: line"},
        // yaml-cpp 0.7 would loop on it without end (common/yaml_text.h).
        Refusal{"system: local-cpu\n", "system: local-cpu\n---\n{},\n",
                "spec is not valid YAML: line 13"}));

TEST(RunSpec, QueuePriorityAndConstraintsRoundTrip) {
  absl::StatusOr<v1::RunSpec> spec =
      Parse(std::string(kGood) +
            "queue: gpu\npriority: 0\nconstraints: [rack=3, gpu_model=h200]\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->queue(), "gpu");
  EXPECT_TRUE(spec->has_priority());
  EXPECT_EQ(spec->priority(), 0);
  EXPECT_EQ(spec->constraints().at("rack"), "3");
  EXPECT_EQ(spec->constraints().at("gpu_model"), "h200");
  absl::StatusOr<v1::RunSpec> again = Parse(RunSpecToYaml(*spec));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(*again, *spec));
  spec = Parse(std::string(kGood) + "constraints: {rack: 3}\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_FALSE(spec->has_priority());  // the queue's default
  EXPECT_EQ(spec->constraints().at("rack"), "3");
}

TEST(RunSpec, LauncherDefaultsToAgentAndRoundTrips) {
  absl::StatusOr<v1::RunSpec> spec = Parse(kGood);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->launcher(), "agent");
  // The default is not written: a spec's text stays what it was.
  EXPECT_EQ(RunSpecToYaml(*spec).find("launcher"), std::string::npos);
  for (const char* launcher : {"mpirun", "srun"}) {
    spec = Parse(std::string(kGood) + "launcher: " + launcher + "\n");
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->launcher(), launcher);
    absl::StatusOr<v1::RunSpec> again = Parse(RunSpecToYaml(*spec));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(
        google::protobuf::util::MessageDifferencer::Equals(*again, *spec));
  }
  EXPECT_EQ(RefusalOf("seed: 1\n", "seed: 1\nlauncher: torchrun\n"),
            "field 'launcher': must be one of agent, mpirun, srun; got "
            "'torchrun'");
  // A spec stored before the field: the agent launches.
  v1::RunSpec stored = *Parse(kGood);
  stored.clear_launcher();
  EXPECT_TRUE(ValidateRunSpec(stored, Registry::Builtin()).ok());
  EXPECT_EQ(*ParseLauncher("launcher", ""), Launcher::kAgent);
}

TEST(RunSpec, SweepPointsCarryTheirSweepAndScalingThroughYaml) {
  absl::StatusOr<v1::RunSpec> spec =
      Parse(std::string(kGood) + "sweep: fmnist-20261205\nscaling: strong\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->sweep(), "fmnist-20261205");
  EXPECT_EQ(spec->scaling(), "strong");
  absl::StatusOr<v1::RunSpec> again = Parse(RunSpecToYaml(*spec));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(*again, *spec));
  // A run submitted alone writes neither.
  EXPECT_EQ(RunSpecToYaml(*Parse(kGood)).find("sweep"), std::string::npos);
  EXPECT_EQ(RefusalOf("seed: 1\n", "seed: 1\nsweep: a\nscaling: linear\n"),
            "field 'scaling': must be one of strong, weak; got 'linear'");
  EXPECT_EQ(RefusalOf("seed: 1\n", "seed: 1\nscaling: weak\n"),
            "field 'scaling': only a point of a sweep has one (sweep: ID)");
  EXPECT_EQ(RefusalOf("seed: 1\n", "seed: 1\nsweep: a b\n"),
            "field 'sweep': character ' ' is not allowed");
}

TEST(RunSpec, RetriesDefaultToOneAndTimeLimitsTakeUnits) {
  absl::StatusOr<v1::RunSpec> spec = Parse(kGood);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->max_retries(), 1);
  EXPECT_EQ(spec->time_limit_s(), 0);  // none
  spec = Parse(std::string(kGood) + "max_retries: 0\ntime_limit: 1h30m\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->max_retries(), 0);
  EXPECT_EQ(spec->time_limit_s(), 5400);
  spec = Parse(std::string(kGood) + "time_limit: 600\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->time_limit_s(), 600);
  absl::StatusOr<v1::RunSpec> again = Parse(RunSpecToYaml(*spec));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->time_limit_s(), 600);
}

TEST(RunSpec, EarlyAbortIsOffByDefaultAndSurvivesTheYamlRoundTrip) {
  absl::StatusOr<v1::RunSpec> spec = Parse(kGood);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->abort_if_hopeless(), 0);
  EXPECT_EQ(RunSpecToYaml(*spec).find("abort_if_hopeless"), std::string::npos);
  spec = Parse(std::string(kGood) + "abort_if_hopeless: 0.05\nmin_epochs: 2\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->abort_if_hopeless(), 0.05);
  EXPECT_EQ(spec->min_epochs(), 2);
  absl::StatusOr<v1::RunSpec> again = Parse(RunSpecToYaml(*spec));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->abort_if_hopeless(), 0.05);
  EXPECT_EQ(again->min_epochs(), 2);
}

TEST(RunSpec, FastPathsAreOffByDefaultNeedCudaAndSurviveTheYamlRoundTrip) {
  absl::StatusOr<v1::RunSpec> spec = Parse(kGood);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(FastPathsOn(*spec).empty());
  EXPECT_EQ(RunSpecToYaml(*spec).find("fused_bn"), std::string::npos);

  // ResNet-50 on synthetic data takes fused_bn and cuda_graph.
  const std::string resnet = absl::StrReplaceAll(
      kGood, {{"device: cpu", "device: cuda"},
              {"config: fashion_mnist_smoke", "config: synthetic_resnet50"}});
  spec =
      Parse(resnet + "fused_bn: true\ncuda_graph: true\ngpu_decode: false\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(FastPathsOn(*spec),
            std::vector<std::string>({"fused_bn", "cuda_graph"}));
  absl::StatusOr<v1::RunSpec> again = Parse(RunSpecToYaml(*spec));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(FastPathsOn(*again), FastPathsOn(*spec));

  EXPECT_EQ(Parse(std::string(kGood) + "gpu_decode: true\n").status().message(),
            "field 'gpu_decode': needs device cuda");
  EXPECT_EQ(Parse(absl::StrReplaceAll(resnet + "fused_bn: true\n",
                                      {{"level: system", "level: hardware"}}))
                .status()
                .message(),
            "field 'fused_bn': level hardware keeps the reference software "
            "stack; fused_bn needs level system or free");
  EXPECT_EQ(Parse(resnet + "fused_bn: yes please\n").status().message(),
            "field 'fused_bn': must be true or false, got 'yes please'");
}

TEST(RunSpec, FastPathsAreRefusedWhereTheConfigCannotTakeThem) {
  const std::string cuda =
      absl::StrReplaceAll(kGood, {{"device: cpu", "device: cuda"}});
  // The small residual CNN has no fused batch norm; Fashion-MNIST holds no
  // JPEG; the step of any classification config can be captured.
  EXPECT_TRUE(Parse(cuda + "cuda_graph: true\n").ok());
  EXPECT_EQ(Parse(cuda + "fused_bn: true\n").status().message(),
            "field 'fused_bn': config image_classification/"
            "fashion_mnist_smoke cannot take it (its model or data has no "
            "such path); configs that can: image_classification/imagenet, "
            "image_classification/imagenet_lars, image_classification/cifar10 "
            "or image_classification/synthetic_resnet50");
  EXPECT_NE(Parse(cuda + "gpu_decode: true\n")
                .status()
                .message()
                .find("configs that can: image_classification/imagenet or "
                      "image_classification/imagenet_lars"),
            std::string::npos);
  const std::string detector = absl::StrReplaceAll(
      cuda, {{"workload: image_classification", "workload: extreme_weather"},
             {"config: fashion_mnist_smoke", "config: ewa_smoke"}});
  ASSERT_TRUE(Parse(detector).ok()) << Parse(detector).status();
  EXPECT_NE(Parse(detector + "cuda_graph: true\n")
                .status()
                .message()
                .find("field 'cuda_graph': config extreme_weather/ewa_smoke "
                      "cannot take it"),
            std::string::npos);
}

TEST(RunSpec, CudaGraphRefusesPowerSgd) {
  const std::string cuda =
      absl::StrReplaceAll(kGood, {{"device: cpu", "device: cuda"}});
  ASSERT_TRUE(Parse(cuda + "cuda_graph: true\ncompression: fp16\n").ok());
  EXPECT_EQ(Parse(cuda + "cuda_graph: true\ncompression: powersgd\n")
                .status()
                .message(),
            "field 'cuda_graph': cannot capture compression powersgd; use "
            "none, fp16 or bf16");
  EXPECT_TRUE(Parse(cuda + "compression: powersgd\n").ok());
}

TEST(RunSpec, HardwareLevelKeepsTheReferenceBatch) {
  const int reference =
      Registry::Builtin()
          .FindConfig("image_classification", "fashion_mnist_smoke")
          ->batch_size;
  std::string yaml = absl::StrReplaceAll(
      kGood,
      {{"level: system", "level: hardware"},
       {"batch_size: 64", "batch_size: " + std::to_string(reference + 1)}});
  absl::StatusOr<v1::RunSpec> spec = Parse(yaml);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find(
                "field 'batch_size': level hardware keeps the reference batch "
                "of " +
                std::to_string(reference)),
            std::string::npos)
      << spec.status();
  // The mixed-precision variant of the reference doubles the batch.
  yaml = absl::StrReplaceAll(yaml,
                             {{"batch_size: " + std::to_string(reference + 1),
                               "batch_size: " + std::to_string(2 * reference)},
                              {"precision: fp32", "precision: bf16"}});
  EXPECT_TRUE(Parse(yaml).ok()) << Parse(yaml).status();
}

TEST(RunSpec, CompressionDefaultsToNoneAndNeedsAFreerLevelThanHardware) {
  absl::StatusOr<v1::RunSpec> spec = Parse(kGood);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->compression(), "none");
  spec = Parse(std::string(kGood) + "compression: powersgd\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->compression(), "powersgd");
  absl::StatusOr<v1::RunSpec> hardware =
      Parse(absl::StrReplaceAll(std::string(kGood) + "compression: fp16\n",
                                {{"level: system", "level: hardware"}}));
  ASSERT_FALSE(hardware.ok());
  EXPECT_NE(hardware.status().message().find(
                "field 'compression': level hardware keeps the reference "
                "software stack"),
            std::string::npos)
      << hardware.status();
}

TEST(RunSpec, RefusesANonMapping) {
  absl::StatusOr<v1::RunSpec> spec = Parse("- just\n- a list\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("mapping"), std::string::npos);
}

TEST(RunSpec, RefusesAnOversizedSpec) {
  absl::StatusOr<v1::RunSpec> spec =
      Parse(std::string(kGood) + "# " + std::string(70000, 'x') + "\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("exceeds the limit"),
            std::string::npos);
}

}  // namespace
}  // namespace hpcai500
