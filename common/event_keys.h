// The names inside worker event lines (common/events.h, docs/events.md):
// every event key, the metadata keys, run_stop's statuses and the members of
// hpcai500_epoch_stats. The worker writes them; the agent, the coordinator
// and the scorer read them. Standard library only: the worker includes it.
//
// Thread-safe: constants.
#ifndef HPCAI500_COMMON_EVENT_KEYS_H_
#define HPCAI500_COMMON_EVENT_KEYS_H_

namespace hpcai500::event_keys {

// Event keys of the run's life, MLPerf's names.
inline constexpr char kInitStart[] = "init_start";
inline constexpr char kInitStop[] = "init_stop";
inline constexpr char kRunStart[] = "run_start";
inline constexpr char kRunStop[] = "run_stop";
inline constexpr char kBlockStart[] = "block_start";
inline constexpr char kBlockStop[] = "block_stop";
inline constexpr char kEpochStart[] = "epoch_start";
inline constexpr char kEpochStop[] = "epoch_stop";
inline constexpr char kEvalStart[] = "eval_start";
inline constexpr char kEvalStop[] = "eval_stop";
inline constexpr char kEvalAccuracy[] = "eval_accuracy";
inline constexpr char kEvalTop5[] = "eval_top5";

// Event keys of the run's setup, MLPerf's names.
inline constexpr char kSubmissionBenchmark[] = "submission_benchmark";
inline constexpr char kSeed[] = "seed";
inline constexpr char kGlobalBatchSize[] = "global_batch_size";
inline constexpr char kTrainSamples[] = "train_samples";
inline constexpr char kEvalSamples[] = "eval_samples";

// Event keys of this project (prefix hpcai500_).
inline constexpr char kConfig[] = "hpcai500_config";
inline constexpr char kUnranked[] = "hpcai500_unranked";
inline constexpr char kResume[] = "hpcai500_resume";
inline constexpr char kForwardFlopsPerSample[] =
    "hpcai500_forward_flops_per_sample";
inline constexpr char kEpochStats[] = "hpcai500_epoch_stats";
inline constexpr char kEvalAp50[] = "hpcai500_eval_ap50";
inline constexpr char kParamChecksum[] = "hpcai500_param_checksum";
inline constexpr char kCheckpoint[] = "hpcai500_checkpoint";
// `hpcai500-worker preflight`'s one line (worker/preflight.h): its value is
// an object of the figures below that were measured.
inline constexpr char kPreflight[] = "hpcai500_preflight";

// Metadata keys.
inline constexpr char kMetaSeq[] = "seq";
inline constexpr char kMetaRank[] = "rank";
inline constexpr char kMetaEpochNum[] = "epoch_num";
inline constexpr char kMetaStatus[] = "status";  // run_stop
inline constexpr char kMetaReason[] = "reason";  // run_stop when aborted
// run_start: the fast paths on (common/fast_paths.h), comma-separated; absent
// when none is.
inline constexpr char kMetaFastPaths[] = "fast_paths";

// run_stop's metadata.status values.
inline constexpr char kStatusSuccess[] = "success";
inline constexpr char kStatusAborted[] = "aborted";

// Members of hpcai500_epoch_stats' value the service reads.
inline constexpr char kStatsSamples[] = "samples";
inline constexpr char kStatsSeconds[] = "seconds";
inline constexpr char kStatsTrainLoss[] = "train_loss";
inline constexpr char kStatsEnergyJoules[] = "energy_joules";
inline constexpr char kStatsComputeSeconds[] = "compute_seconds";
inline constexpr char kStatsInputWaitSeconds[] = "input_wait_seconds";
inline constexpr char kStatsCommWaitSeconds[] = "comm_wait_seconds";

// Members of hpcai500_preflight's value: the figures (each a rate, higher
// is better) and the seconds the measurement took.
inline constexpr char kPreflightGemmGflops[] = "gemm_gflops";
inline constexpr char kPreflightMemoryGbps[] = "memory_gbps";
inline constexpr char kPreflightHostToDeviceGbps[] = "h2d_gbps";
inline constexpr char kPreflightAllReduceGbps[] = "allreduce_busbw_gbps";
inline constexpr char kPreflightSeconds[] = "seconds";
// hpcai500_preflight's metadata: the device measured ("cpu", "cuda:0").
inline constexpr char kMetaDevice[] = "device";

}  // namespace hpcai500::event_keys

#endif  // HPCAI500_COMMON_EVENT_KEYS_H_
