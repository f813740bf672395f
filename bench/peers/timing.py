"""The timing loop the PyTorch peers share, mirroring TimeSteps and the
RESULT line of bench/train_step_bench.cc: set-up (threads, seed, device),
warm-up steps untimed, timed steps each ending in a device synchronise, the
median and minimum step time, and one RESULT line of JSON.
"""
import json
import statistics
import time

import torch


def add_step_args(parser, warmup=3, steps=10):
    """Adds the flags every step peer takes: --threads, --warmup, --steps,
    --device."""
    parser.add_argument("--threads", type=int, default=0,
                        help="torch.set_num_threads (0: PyTorch's default)")
    parser.add_argument("--warmup", type=int, default=warmup)
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")


def set_up(args):
    """Applies --threads and seed 0; returns the torch.device of --device."""
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    return torch.device(args.device)


def time_steps(step, device, warmup, steps):
    """Runs step() warmup times untimed, then steps times timed; returns the
    (median, min) seconds per step."""
    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(warmup):
        step()
    sync()
    seconds = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        sync()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), min(seconds)


def print_result(fields):
    """Prints fields as the one RESULT line compare.py reads, with
    impl "pytorch"."""
    print("RESULT " + json.dumps({"impl": "pytorch", **fields}), flush=True)


def print_step_result(fields, args, batch, median, fastest):
    """print_result() for a timed step: fields naming the case, then the
    batch, threads, device, steps and step times as the C++ bench prints."""
    print_result({
        **fields, "batch": batch, "threads": torch.get_num_threads(),
        "device": args.device, "steps": args.steps,
        "median_step_s": round(median, 6), "min_step_s": round(fastest, 6),
        "images_per_s": round(batch / median, 3),
        "torch": torch.__version__})
