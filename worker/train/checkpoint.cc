#include "worker/train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "common/checkpoint_manifest.h"
#include "common/worker_args.h"

namespace hpcai500::worker {

namespace {

namespace fs = std::filesystem;

constexpr int64_t kFormatVersion = 1;
constexpr char kPrefix[] = "checkpoint-epoch-";
constexpr char kSuffix[] = ".pt";

std::string Errno() { return std::strerror(errno); }

// The epoch a checkpoint file name stands for, or -1 when `name` is not
// kPrefix, digits, `suffix` (".pt" for a main file, ".rank-R.pt" for a
// rank's part).
int64_t EpochOfName(const std::string& name,
                    const std::string& suffix = kSuffix) {
  const size_t prefix = sizeof(kPrefix) - 1;
  if (name.size() <= prefix + suffix.size() ||
      name.compare(0, prefix, kPrefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return -1;
  }
  const std::string digits =
      name.substr(prefix, name.size() - prefix - suffix.size());
  if (digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(),
                   [](char c) { return c >= '0' && c <= '9'; })) {
    return -1;
  }
  return std::stoll(digits);
}

// What follows the epoch's digits in rank `rank`'s part.
std::string PartSuffix(int rank) {
  return ".rank-" + std::to_string(rank) + kSuffix;
}

// Every checkpoint file in `dir` whose name ends in `suffix`, by epoch;
// empty when the folder does not exist.
std::map<int64_t, std::string> ListCheckpoints(
    const std::string& dir, const std::string& suffix = kSuffix) {
  std::map<int64_t, std::string> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const int64_t epoch = EpochOfName(it->path().filename().string(), suffix);
    if (epoch >= 0 && it->is_regular_file(ec)) {
      found[epoch] = it->path().string();
    }
  }
  return found;
}

// Removes all but the newest `keep` of `files` (by epoch); a stale old
// checkpoint harms nothing, so a failure is ignored.
void KeepNewest(const std::map<int64_t, std::string>& files, int keep) {
  std::error_code ec;
  int64_t excess = static_cast<int64_t>(files.size()) - keep;
  for (auto it = files.begin(); excess > 0 && it != files.end();
       ++it, --excess) {
    fs::remove(it->second, ec);
  }
}

void CreateFolder(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw std::runtime_error("checkpoint folder " + dir +
                             ": cannot create: " + ec.message());
  }
}

void FsyncFolder(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open folder: " + Errno());
  const int rc = ::fsync(fd);
  const std::string error = rc != 0 ? Errno() : "";
  ::close(fd);
  if (rc != 0) throw std::runtime_error("fsync of the folder: " + error);
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += n + "\n";
  return out;
}

std::vector<std::string> Keys(
    const torch::OrderedDict<std::string, torch::Tensor>& dict) {
  std::vector<std::string> keys;
  for (const auto& item : dict) keys.push_back(item.key());
  return keys;
}

std::string ShapeString(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) {
    s += (i ? ", " : "") + std::to_string(t.size(i));
  }
  return s + "] " + std::string(c10::toString(t.scalar_type()));
}

void WriteTensors(const std::string& kind,
                  const torch::OrderedDict<std::string, torch::Tensor>& dict,
                  torch::serialize::OutputArchive& archive) {
  archive.write(kind + "_names", c10::IValue(Join(Keys(dict))));
  int64_t i = 0;
  for (const auto& item : dict) {
    archive.write(kind + "_" + std::to_string(i++),
                  item.value().detach().to(torch::kCPU).contiguous(),
                  /*is_buffer=*/true);
  }
}

// Copies the archive's tensors into `dict`'s, after checking that names,
// shapes and types agree.
void ReadTensors(const std::string& kind,
                 const torch::OrderedDict<std::string, torch::Tensor>& dict,
                 torch::serialize::InputArchive& archive) {
  c10::IValue names;
  archive.read(kind + "_names", names);
  if (names.toStringRef() != Join(Keys(dict))) {
    throw std::runtime_error("its " + kind +
                             " names differ from the model's (another model?)");
  }
  torch::NoGradGuard no_grad;
  int64_t i = 0;
  for (const auto& item : dict) {
    torch::Tensor saved;
    archive.read(kind + "_" + std::to_string(i++), saved, /*is_buffer=*/true);
    torch::Tensor target = item.value();
    if (saved.sizes() != target.sizes() ||
        saved.scalar_type() != target.scalar_type()) {
      throw std::runtime_error(kind + " " + item.key() + " is " +
                               ShapeString(saved) + " there but " +
                               ShapeString(target) + " in the model");
    }
    target.copy_(saved);
  }
}

}  // namespace

void WriteFileAtomically(const std::string& path,
                         const std::function<void(const ByteSink&)>& produce) {
  const fs::path final_path(path);
  const fs::path dir =
      final_path.has_parent_path() ? final_path.parent_path() : fs::path(".");
  const fs::path temp = dir / ("." + final_path.filename().string() + ".tmp-" +
                               std::to_string(::getpid()));
  const int fd =
      ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::runtime_error("writing " + path + ": cannot create " +
                             temp.string() + ": " + Errno());
  }
  try {
    produce([fd](const void* data, size_t size) {
      const char* p = static_cast<const char*>(data);
      while (size > 0) {
        const ssize_t n = ::write(fd, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw std::runtime_error(Errno());
        p += n;
        size -= static_cast<size_t>(n);
      }
    });
    if (::fsync(fd) != 0) throw std::runtime_error("fsync: " + Errno());
  } catch (const std::exception& e) {
    ::close(fd);
    ::unlink(temp.c_str());
    throw std::runtime_error("writing " + path + ": " + e.what());
  }
  if (::close(fd) != 0) {
    const std::string error = Errno();
    ::unlink(temp.c_str());
    throw std::runtime_error("writing " + path + ": close: " + error);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string error = Errno();
    ::unlink(temp.c_str());
    throw std::runtime_error("writing " + path + ": rename: " + error);
  }
  try {
    FsyncFolder(dir);
  } catch (const std::exception& e) {
    throw std::runtime_error("writing " + path + ": " + e.what());
  }
}

namespace {

// Loads `archive` from `path` and checks its format version.
void OpenArchive(const std::string& path,
                 torch::serialize::InputArchive& archive) {
  // Onto the CPU whatever device wrote it (rank 0's cuda:0 is not every
  // rank's device, nor one it should touch); tensors are copied or moved to
  // where they live from there.
  archive.load_from(path, torch::Device(torch::kCPU));
  c10::IValue value;
  archive.read("format_version", value);
  if (value.toInt() != kFormatVersion) {
    throw std::runtime_error("format version " + std::to_string(value.toInt()) +
                             ", expected " + std::to_string(kFormatVersion));
  }
}

// read(), with its errors rethrown as std::runtime_error naming `what` (the
// file's kind and path).
template <typename Read>
auto NamingErrors(const std::string& what, Read read) -> decltype(read()) {
  try {
    return read();
  } catch (const c10::Error& e) {
    throw std::runtime_error(what + " is unreadable, truncated or corrupt: " +
                             e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw std::runtime_error(what + ": " + e.what());
  }
}

// Writes `archive` to `path` atomically.
void SaveArchive(torch::serialize::OutputArchive& archive,
                 const std::string& path) {
  WriteFileAtomically(path, [&archive](const ByteSink& sink) {
    archive.save_to([&sink](const void* data, size_t size) -> size_t {
      sink(data, size);
      return size;
    });
  });
}

}  // namespace

std::string CheckpointPath(const std::string& dir, int64_t epoch) {
  return (fs::path(dir) / CheckpointFileName(epoch)).string();
}

std::string SaveCheckpoint(const std::string& dir, const TrainingState& state,
                           int keep) {
  const std::string path = CheckpointPath(dir, state.epoch);
  if (keep < 1) {
    throw std::invalid_argument("checkpoint " + path + ": keep must be >= 1");
  }
  CreateFolder(dir);
  torch::serialize::OutputArchive archive;
  archive.write("format_version", c10::IValue(kFormatVersion));
  archive.write("fingerprint", c10::IValue(state.fingerprint));
  archive.write("epoch", c10::IValue(state.epoch));
  WriteTensors("parameter", state.model->named_parameters(), archive);
  WriteTensors("buffer", state.model->named_buffers(), archive);
  torch::serialize::OutputArchive optimizer;
  state.optimizer->save(optimizer);
  archive.write("optimizer", optimizer);
  const LossScaler::State scaler = state.scaler->state();
  archive.write("scaler_scale", c10::IValue(scaler.scale));
  archive.write("scaler_growth_tracker", c10::IValue(scaler.growth_tracker));
  {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    archive.write("cpu_generator_state", generator.get_state(),
                  /*is_buffer=*/true);
  }
  SaveArchive(archive, path);
  KeepNewest(ListCheckpoints(dir), keep);
  return path;
}

std::string CheckpointPartPath(const std::string& dir, int64_t epoch,
                               int rank) {
  std::string name = CheckpointFileName(epoch);
  name.resize(name.size() - (sizeof(kSuffix) - 1));
  return (fs::path(dir) / (name + PartSuffix(rank))).string();
}

std::string SavePowerSgdPart(const std::string& dir, int64_t epoch, int rank,
                             const PowerSgdState& state, int keep) {
  const std::string path = CheckpointPartPath(dir, epoch, rank);
  if (keep < 1) {
    throw std::invalid_argument("checkpoint " + path + ": keep must be >= 1");
  }
  CreateFolder(dir);
  torch::serialize::OutputArchive archive;
  archive.write("format_version", c10::IValue(kFormatVersion));
  archive.write("powersgd_steps", c10::IValue(state.steps));
  archive.write("powersgd_parameters",
                c10::IValue(static_cast<int64_t>(state.q.size())));
  for (size_t k = 0; k < state.q.size(); ++k) {
    if (!state.q[k].defined()) continue;  // not compressed
    const std::string index = std::to_string(k);
    archive.write("powersgd_q_" + index, state.q[k].detach().to(torch::kCPU),
                  /*is_buffer=*/true);
    archive.write("powersgd_error_" + index,
                  state.error[k].detach().to(torch::kCPU), /*is_buffer=*/true);
  }
  SaveArchive(archive, path);
  KeepNewest(ListCheckpoints(dir, PartSuffix(rank)), keep);
  return path;
}

void WriteCheckpointManifest(const std::string& dir, int64_t run_id,
                             int64_t attempt, int64_t epoch,
                             const std::vector<std::string>& files,
                             std::vector<std::string> events, int keep) {
  const std::string path =
      (fs::path(dir) / CheckpointManifestFileName(epoch)).string();
  CheckpointManifest manifest;
  manifest.run_id = run_id;
  manifest.attempt = attempt;
  manifest.epoch = epoch;
  manifest.events = std::move(events);
  for (const std::string& name : files) {
    CheckpointManifest::File file;
    file.name = name;
    std::string error;
    if (!Sha256OfFile((fs::path(dir) / name).string(), &file.sha256, &error)) {
      throw std::runtime_error("manifest " + path + ": " + error);
    }
    manifest.files.push_back(std::move(file));
  }
  const std::string text = FormatCheckpointManifest(manifest);
  WriteFileAtomically(
      path, [&text](const ByteSink& sink) { sink(text.data(), text.size()); });
  KeepNewest(ListCheckpoints(dir, ".manifest"), keep);
}

PowerSgdState LoadPowerSgdPart(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw std::runtime_error(
        "checkpoint part " + path +
        " is missing: the checkpoint holds no PowerSGD state for this rank "
        "(written by a run without PowerSGD, or by a worker that did not "
        "save it), and resuming without it would not be the same run");
  }
  return NamingErrors("checkpoint part " + path, [&path] {
    torch::serialize::InputArchive archive;
    OpenArchive(path, archive);
    c10::IValue value;
    PowerSgdState state;
    archive.read("powersgd_steps", value);
    state.steps = value.toInt();
    archive.read("powersgd_parameters", value);
    const int64_t parameters = value.toInt();
    if (parameters < 0 || parameters > (int64_t{1} << 24)) {
      throw std::runtime_error("bad parameter count " +
                               std::to_string(parameters));
    }
    state.q.resize(static_cast<size_t>(parameters));
    state.error.resize(static_cast<size_t>(parameters));
    for (size_t k = 0; k < state.q.size(); ++k) {
      const std::string index = std::to_string(k);
      if (!archive.try_read("powersgd_q_" + index, state.q[k],
                            /*is_buffer=*/true)) {
        continue;  // not compressed
      }
      archive.read("powersgd_error_" + index, state.error[k],
                   /*is_buffer=*/true);
    }
    return state;
  });
}

std::optional<std::string> NewestCheckpoint(const std::string& dir) {
  const std::map<int64_t, std::string> all = ListCheckpoints(dir);
  if (all.empty()) return std::nullopt;
  return all.rbegin()->second;
}

void MoveStateToParameters(torch::optim::Optimizer& optimizer) {
  torch::NoGradGuard no_grad;
  auto& states = optimizer.state();
  for (auto& group : optimizer.param_groups()) {
    for (const torch::Tensor& p : group.params()) {
      const auto it = states.find(p.unsafeGetTensorImpl());
      if (it == states.end()) continue;
      auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(it->second.get());
      if (sgd == nullptr || !sgd->momentum_buffer().defined()) continue;
      if (sgd->momentum_buffer().device() != p.device()) {
        sgd->momentum_buffer(sgd->momentum_buffer().to(p.device()));
      }
    }
  }
}

void LoadCheckpoint(const std::string& path, TrainingState* state) {
  NamingErrors("checkpoint " + path, [&path, state] {
    torch::serialize::InputArchive archive;
    OpenArchive(path, archive);
    c10::IValue value;
    archive.read("fingerprint", value);
    if (value.toStringRef() != state->fingerprint) {
      throw std::runtime_error("it was written by a run of another shape (" +
                               value.toStringRef() + "), this run is (" +
                               state->fingerprint + ")");
    }
    archive.read("epoch", value);
    const int64_t epoch = value.toInt();
    if (epoch < 0) {
      throw std::runtime_error("negative epoch " + std::to_string(epoch));
    }
    c10::IValue scale, growth_tracker;
    archive.read("scaler_scale", scale);
    archive.read("scaler_growth_tracker", growth_tracker);
    torch::Tensor generator_state;
    archive.read("cpu_generator_state", generator_state, /*is_buffer=*/true);
    torch::serialize::InputArchive optimizer;
    archive.read("optimizer", optimizer);

    ReadTensors("parameter", state->model->named_parameters(), archive);
    ReadTensors("buffer", state->model->named_buffers(), archive);
    state->optimizer->load(optimizer);
    MoveStateToParameters(*state->optimizer);
    state->scaler->Restore({scale.toDouble(), growth_tracker.toInt()});
    {
      auto generator = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(generator_state);
    }
    state->epoch = epoch;
  });
}

}  // namespace hpcai500::worker
