#include "server/coordinator/queues.h"

#include <yaml-cpp/yaml.h>

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "methodology/spec.h"

namespace hpcai500 {
namespace {

constexpr int kMaxQueues = 64;
constexpr int32_t kMaxPriority = 1'000'000;

absl::Status QueueError(size_t index, const std::string& name,
                        const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "queues: queue ", index + 1,
      name.empty() ? "" : absl::StrCat(" (", name, ")"), ": ", why));
}

bool IsName(const std::string& text) {
  if (text.empty() || text.size() > 64) return false;
  for (char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' &&
        c != '.') {
      return false;
    }
  }
  return true;
}

absl::StatusOr<int32_t> Priority(const YAML::Node& node, size_t index,
                                 const std::string& name, const char* key) {
  int32_t value = 0;
  if (!node.IsScalar() || !absl::SimpleAtoi(node.Scalar(), &value) ||
      value < 0 || value > kMaxPriority) {
    return QueueError(
        index, name,
        absl::StrCat(key, ": must be an integer from 0 to ", kMaxPriority));
  }
  return value;
}

absl::StatusOr<Scheduler::Queue> ParseQueue(const YAML::Node& node,
                                            size_t index) {
  if (!node.IsMap()) return QueueError(index, "", "must be a mapping");
  Scheduler::Queue queue;
  if (node["name"] && node["name"].IsScalar()) {
    queue.name = node["name"].Scalar();
  }
  if (!IsName(queue.name)) {
    return QueueError(index, "",
                      "name: required; letters, digits, '-', '_' and '.', at "
                      "most 64");
  }
  for (const auto& entry : node) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
    const YAML::Node& value = entry.second;
    if (key == "name") continue;
    if (key == "default") {
      if (!value.IsScalar() ||
          (value.Scalar() != "true" && value.Scalar() != "false")) {
        return QueueError(index, queue.name, "default: must be true or false");
      }
      queue.is_default = value.Scalar() == "true";
    } else if (key == "nodes") {
      if (!value.IsMap()) {
        return QueueError(index, queue.name,
                          "nodes: must be a mapping of label to value");
      }
      for (const auto& label : value) {
        if (!label.first.IsScalar() || !label.second.IsScalar() ||
            !IsName(label.first.Scalar()) || !IsName(label.second.Scalar())) {
          return QueueError(index, queue.name,
                            "nodes: labels and values must be plain names");
        }
        queue.node_labels[label.first.Scalar()] = label.second.Scalar();
      }
    } else if (key == "priority") {
      ASSIGN_OR_RETURN(queue.priority,
                       Priority(value, index, queue.name, "priority"));
    } else if (key == "max_priority") {
      ASSIGN_OR_RETURN(queue.max_priority,
                       Priority(value, index, queue.name, "max_priority"));
    } else if (key == "max_time_limit" || key == "preflight_max_age") {
      if (!value.IsScalar()) {
        return QueueError(index, queue.name,
                          absl::StrCat(key, ": must be a duration"));
      }
      absl::StatusOr<int64_t> seconds = DurationSeconds(value.Scalar(), key);
      if (!seconds.ok() || *seconds < 0) {
        return QueueError(index, queue.name,
                          seconds.ok()
                              ? absl::StrCat(key, ": must not be negative")
                              : std::string(seconds.status().message()));
      }
      (key == "max_time_limit" ? queue.max_time_limit_s
                               : queue.preflight_max_age_s) = *seconds;
    } else {
      return QueueError(
          index, queue.name,
          absl::StrCat("unknown key '", key.substr(0, 64),
                       "'; known: name, default, nodes, priority, "
                       "max_priority, max_time_limit, preflight_max_age"));
    }
  }
  if (queue.priority > queue.max_priority) {
    return QueueError(
        index, queue.name,
        absl::StrCat("priority ", queue.priority, " is above max_priority ",
                     queue.max_priority));
  }
  return queue;
}

}  // namespace

absl::StatusOr<std::vector<Scheduler::Queue>> ParseQueues(
    std::string_view yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("queues: not valid YAML: line ", e.mark.line + 1,
                     ", column ", e.mark.column + 1, ": ", e.msg));
  }
  if (!root.IsMap() || root.size() != 1 || !root["queues"] ||
      !root["queues"].IsSequence() || root["queues"].size() == 0) {
    return absl::InvalidArgumentError(
        "queues: the file must be one key, queues, holding a list of queues");
  }
  const YAML::Node list = root["queues"];
  if (list.size() > kMaxQueues) {
    return absl::InvalidArgumentError(
        absl::StrCat("queues: ", list.size(), " queues; at most ", kMaxQueues));
  }
  std::vector<Scheduler::Queue> queues;
  std::set<std::string> names;
  int defaults = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    ASSIGN_OR_RETURN(Scheduler::Queue queue, ParseQueue(list[i], i));
    if (!names.insert(queue.name).second) {
      return QueueError(i, queue.name, "name given twice");
    }
    defaults += queue.is_default;
    queues.push_back(std::move(queue));
  }
  if (queues.size() == 1) queues.front().is_default = true;
  if (queues.size() > 1 && defaults != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "queues: exactly one queue must say default: true; ", defaults, " do"));
  }
  return queues;
}

absl::StatusOr<QueueChoice> ChooseQueue(
    const v1::RunSpec& spec, const std::vector<Scheduler::Queue>& queues) {
  const Scheduler::Queue* queue = nullptr;
  std::vector<std::string> names;
  for (const Scheduler::Queue& q : queues) {
    names.push_back(q.name);
    if (spec.queue().empty() ? q.is_default : q.name == spec.queue()) {
      queue = &q;
    }
  }
  if (queue == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'queue': unknown queue '", spec.queue(),
                     "'; queues: ", absl::StrJoin(names, ", ")));
  }
  QueueChoice choice;
  choice.queue = queue->name;
  choice.priority = spec.has_priority() ? spec.priority() : queue->priority;
  if (choice.priority > queue->max_priority) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field 'priority': queue ", queue->name, " allows at most ",
        queue->max_priority, ", got ", choice.priority));
  }
  choice.time_limit_s = spec.time_limit_s();
  if (queue->max_time_limit_s > 0) {
    if (choice.time_limit_s > queue->max_time_limit_s) {
      return absl::InvalidArgumentError(absl::StrCat(
          "field 'time_limit': queue ", queue->name, " allows at most ",
          queue->max_time_limit_s, " s, got ", choice.time_limit_s));
    }
    if (choice.time_limit_s == 0) choice.time_limit_s = queue->max_time_limit_s;
  }
  return choice;
}

v1::Queue QueueToProto(const Scheduler::Queue& queue) {
  v1::Queue proto;
  proto.set_name(queue.name);
  proto.set_is_default(queue.is_default);
  proto.mutable_node_labels()->insert(queue.node_labels.begin(),
                                      queue.node_labels.end());
  proto.set_priority(queue.priority);
  proto.set_max_priority(queue.max_priority);
  proto.set_max_time_limit_s(queue.max_time_limit_s);
  proto.set_preflight_max_age_s(queue.preflight_max_age_s);
  return proto;
}

}  // namespace hpcai500
