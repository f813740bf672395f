#!/usr/bin/python3
"""Runs an hpcai500 benchmark and its PyTorch peer side by side in one run
and prints a Markdown table with images/s and the ratio ours / PyTorch.

  bench/compare.py train-step [--build-dir DIR] [--threads N] [--rounds N]
  bench/compare.py epoch      [--build-dir DIR] [--threads N] [--steps N]
  bench/compare.py input      [--build-dir DIR] [--images N]
  bench/compare.py detection  [--build-dir DIR] [--threads N] [--steps N]
  bench/compare.py gpu-decode [--build-dir DIR] [--threads N] [--images N]

Each round runs both sides one after the other (the order alternates between
rounds, so a load change on a shared machine hits both alike); the ratio
reported is the median of the rounds' ratios. See bench/README.md.
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "peers")
# The peers run on the checkout's .venv (torch and torchvision pinned in
# scripts/requirements.txt: the same LibTorch the worker links); gpu.sh
# points this at the GPU machine's python instead.
PYTHON = os.environ.get("HPCAI500_BENCH_PYTHON",
                        os.path.join(os.path.dirname(HERE), ".venv", "bin",
                                     "python3"))
FASHION = "/usr/share/datasets/fashion-mnist"


def run(cmd, env=None):
    """Runs cmd, echoes it to stderr, returns the parsed RESULT line."""
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"compare.py: {cmd[0]} failed ({out.returncode}):\n"
                 f"{out.stderr[-3000:]}")
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    sys.exit(f"compare.py: {cmd[0]} printed no RESULT line:\n{out.stdout}")


def binary(build_dir, name):
    path = os.path.join(build_dir, "bin", name)
    if not os.access(path, os.X_OK):
        sys.exit(f"compare.py: {path} not found; build it with "
                 "-DHPCAI500_BUILD_BENCH=ON (see bench/README.md)")
    return path


def side_by_side(ours_cmd, peer_cmd, rounds):
    """[(ours, peer)] results, the order alternating between rounds."""
    pairs = []
    for r in range(rounds):
        if r % 2 == 0:
            ours = run(ours_cmd)
            peer = run(peer_cmd)
        else:
            peer = run(peer_cmd)
            ours = run(ours_cmd)
        pairs.append((ours, peer))
    return pairs


def table(title, rows):
    print(f"\n{title}\n")
    print("| case | hpcai500 images/s | PyTorch images/s | ratio |")
    print("|---|---:|---:|---:|")
    for case, ours, peer, ratio in rows:
        print(f"| {case} | {ours:.2f} | {peer:.2f} | {ratio:.2f}x |")
    sys.stdout.flush()


def summarize(pairs):
    ours = statistics.median(p[0]["images_per_s"] for p in pairs)
    peer = statistics.median(p[1]["images_per_s"] for p in pairs)
    ratio = statistics.median(
        p[0]["images_per_s"] / p[1]["images_per_s"] for p in pairs)
    return ours, peer, ratio


def train_step(a):
    bench = binary(a.build_dir, "hpcai500-train-step-bench")
    cases = [
        ("resnet50", 224, a.resnet50_batch),
        ("resnet18", 32, a.resnet18_batch),
    ]
    rows = []
    for model, size, batch in cases:
        if a.only and model != a.only:
            continue
        args = ["--model", model, "--image-size", str(size), "--batch",
                str(batch), "--threads", str(a.threads), "--warmup",
                str(a.warmup), "--steps", str(a.steps), "--precision",
                a.precision, "--device", a.device, "--channels-last",
                str(a.channels_last)]
        ours_cmd = [bench] + args
        peer_cmd = [PYTHON, os.path.join(PEERS, "train_step.py")] + args
        # Fast paths on our side, torch.compile on the peer's (issue 25).
        if a.cuda_graph:
            ours_cmd += ["--cuda-graph", "1"]
        if a.fused_bn:
            ours_cmd += ["--fused-bn", "1"]
        if a.compile:
            peer_cmd += ["--compile", "1", "--compile-mode", a.compile_mode]
        pairs = side_by_side(ours_cmd, peer_cmd, a.rounds)
        ours, peer, ratio = summarize(pairs)
        rows.append((f"{model} {size}x{size} batch {batch} {a.precision} "
                     f"{a.device} threads {a.threads}"
                     f"{' channels-last' if a.channels_last else ''}"
                     f"{' cuda-graph' if a.cuda_graph else ''}"
                     f"{' fused-bn' if a.fused_bn else ''}"
                     f"{' vs torch.compile ' + a.compile_mode if a.compile else ''}",
                     ours, peer, ratio))
    table("Training step (synthetic data, median step after warm-up)", rows)


def detection(a):
    bench = binary(a.build_dir, "hpcai500-train-step-bench")
    rows = []
    for depth in a.depths.split(","):
        model = f"faster_rcnn_resnet{depth}"
        args = ["--model", model, "--height", str(a.height), "--width",
                str(a.width), "--batch", str(a.batch), "--boxes",
                str(a.boxes), "--threads", str(a.threads), "--warmup",
                str(a.warmup), "--steps", str(a.steps), "--channels-last",
                str(a.channels_last), "--rois", str(a.rois),
                "--box-head-width", str(a.box_head_width), "--precision",
                a.precision, "--device", a.device]
        ours_cmd = [bench] + args
        if a.conv_box_head is not None:
            ours_cmd += ["--conv-box-head", str(a.conv_box_head)]
        pairs = side_by_side(
            ours_cmd, [PYTHON, os.path.join(PEERS, "detection_step.py")] + args,
            a.rounds)
        ours, peer, ratio = summarize(pairs)
        first_ours, first_peer = pairs[0]
        shape = ("feature_stage", "rois_per_image", "box_head_width")
        if any(first_ours[k] != first_peer[k] for k in shape):
            sys.exit("compare.py: the two sides built different detectors: "
                     f"{ {k: first_ours[k] for k in shape} } vs "
                     f"{ {k: first_peer[k] for k in shape} }")
        head = first_ours.get("conv_box_head")
        rows.append((f"{model} C{first_ours['feature_stage']} "
                     f"{a.height}x{a.width} batch {a.batch}, "
                     f"{a.boxes} boxes/image, "
                     f"{first_ours['rois_per_image']} RoIs/image, head "
                     f"{first_ours['box_head_width']}, {a.precision} "
                     f"{a.device} threads {a.threads}"
                     f"{', conv box head' if head else ', linear box head'}",
                     ours, peer, ratio))
    table("Faster R-CNN training step (synthetic batch, median step after "
          "warm-up; images/s = samples/s)", rows)


def prepare_fashion_root(root):
    """FashionMNIST/raw/ under root with the IDX files torchvision reads
    (decompressed, as its own download would leave them), so it never
    downloads."""
    raw = os.path.join(root, "FashionMNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for stem in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                 "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        src = os.path.join(FASHION, stem + ".gz")
        if not os.path.exists(src):
            sys.exit(f"compare.py: {src} is missing (Debian package "
                     "dataset-fashion-mnist)")
        link = os.path.join(raw, stem + ".gz")
        if not os.path.lexists(link):
            os.symlink(src, link)
        out = os.path.join(raw, stem)
        if not os.path.exists(out):
            with gzip.open(src, "rb") as f, open(out + ".tmp", "wb") as g:
                shutil.copyfileobj(f, g)
            os.replace(out + ".tmp", out)


def worker_epoch_stats(cmd, events):
    """Runs the worker cmd (writing events); every hpcai500_epoch_stats
    value it wrote, in order."""
    if os.path.exists(events):
        os.remove(events)
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"compare.py: the worker failed ({out.returncode}):\n"
                 f"{out.stderr[-3000:]}")
    stats = []
    with open(events) as f:
        for line in f:
            if "hpcai500_epoch_stats" in line:
                event = json.loads(line[line.index("{"):])
                if event.get("key") == "hpcai500_epoch_stats":
                    stats.append(event["value"])
    if not stats:
        sys.exit(f"compare.py: no hpcai500_epoch_stats event in {events}")
    return stats


def worker_epoch(worker, a, events):
    cmd = [worker, "--workload", "image_classification", "--config",
           "fashion_mnist", "--epochs", "1", "--threads", str(a.threads),
           "--batch-size", str(a.batch), "--events-file", events]
    if a.steps > 0:
        cmd += ["--steps-per-epoch", str(a.steps)]
    v = worker_epoch_stats(cmd, events)[0]
    return {"impl": "hpcai500", "samples": v["samples"],
            "seconds": v["seconds"],
            "images_per_s": v["samples"] / v["seconds"],
            "train_loss": v["train_loss"],
            "input_wait_seconds": v.get("input_wait_seconds", 0.0)}


def epoch(a):
    worker = binary(a.build_dir, "hpcai500-worker")
    work = a.work_dir or tempfile.mkdtemp(prefix="hpcai500-bench-")
    prepare_fashion_root(work)
    events = os.path.join(work, "worker-events.mllog")
    peer_cmd = [PYTHON, os.path.join(PEERS, "fashion_epoch.py"), "--root",
                work, "--batch", str(a.batch), "--threads", str(a.threads),
                "--steps", str(a.steps), "--workers", str(a.loader_workers)]
    pairs = []
    for r in range(a.rounds):
        if os.path.exists(events):
            os.remove(events)
        if r % 2 == 0:
            ours = worker_epoch(worker, a, events)
            peer = run(peer_cmd)
        else:
            peer = run(peer_cmd)
            ours = worker_epoch(worker, a, events)
        print(f"round {r}: hpcai500 {ours['samples']} samples "
              f"{ours['seconds']:.2f} s (input {ours['input_wait_seconds']:.2f} s) "
              f"loss {ours['train_loss']:.3f}; PyTorch {peer['samples']} "
              f"samples {peer['seconds']:.2f} s (input "
              f"{peer['input_wait_seconds']:.2f} s) loss "
              f"{peer['train_loss']:.3f}", file=sys.stderr)
        pairs.append((ours, peer))
    ours, peer, ratio = summarize(pairs)
    steps = "whole epoch" if a.steps == 0 else f"first {a.steps} steps"
    table("Fashion-MNIST epoch (training seconds only)",
          [(f"resnet_small batch {a.batch} fp32 threads {a.threads}, "
            f"{steps}, DataLoader workers {a.loader_workers}",
            ours, peer, ratio)])


def input_pipeline(a):
    bench = binary(a.build_dir, "hpcai500-input-bench")
    root = a.images_dir or os.path.join(tempfile.gettempdir(),
                                        f"hpcai500-bench-jpegs-{a.images}")
    if not os.path.isdir(root):
        run_make = [PYTHON, os.path.join(PEERS, "input_pipeline.py"), "--make",
                    "--root", root, "--count", str(a.images)]
        print("$ " + " ".join(run_make), file=sys.stderr, flush=True)
        subprocess.run(run_make, check=True)
    args = ["--root", root, "--passes", str(a.passes)]
    pairs = side_by_side(
        [bench] + args,
        [PYTHON, os.path.join(PEERS, "input_pipeline.py")] + args, a.rounds)
    ours, peer, ratio = summarize(pairs)
    n = pairs[0][0]["images"]
    table("Input pipeline, one thread (JPEG decode + random-resized-crop 224 "
          "+ flip + normalise)",
          [(f"{n} JPEGs ~500x375, best of {a.passes} passes", ours, peer,
            ratio)])


def epoch_rate(stats):
    return stats["samples"] / stats["seconds"]


def make_jpeg_tree(root, images):
    """An ImageNet-style tree under root (train/, val/ of class0..3) of
    `images` 500x375 JPEGs: 256 distinct ones (input_pipeline.py --make),
    copied over and over (reading and decoding cost the same)."""
    if os.path.isdir(os.path.join(root, "train")):
        return
    distinct = os.path.join(root, "distinct")
    subprocess.run([PYTHON, os.path.join(PEERS, "input_pipeline.py"),
                    "--make", "--root", distinct, "--count", "256"],
                   check=True)
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(distinct)
                   for f in fs)
    for split, count in (("train", images), ("val", 256)):
        for i in range(count):
            src = files[i % len(files)]
            cls = os.path.basename(os.path.dirname(src))
            dst = os.path.join(root, split, cls)
            os.makedirs(dst, exist_ok=True)
            shutil.copyfile(src, os.path.join(dst, f"{i:06d}.jpg"))


def gpu_decode(a):
    """The worker on a real JPEG folder (decoded on the CPU, and with
    --gpu-decode) against the same worker on synthetic data: the end-to-end
    rate of each, the last of two epochs (the first warms cuDNN and the
    page cache), and the ratio issue 25 asks for (>= 95%)."""
    worker = binary(a.build_dir, "hpcai500-worker")
    root = a.images_dir or os.path.join(
        tempfile.gettempdir(), f"hpcai500-bench-jpeg-tree-{a.images}")
    make_jpeg_tree(root, a.images)
    events = os.path.join(tempfile.gettempdir(), "hpcai500-gpu-decode.mllog")
    steps = a.images // a.batch
    base = [worker, "--workload", "image_classification", "--config",
            "imagenet", "--model", "resnet50", "--precision", a.precision,
            "--device", "cuda", "--batch-size", str(a.batch), "--epochs", "2",
            "--steps-per-epoch", str(steps), "--threads", str(a.threads),
            "--events-file", events]
    cases = [("synthetic data", ["--data", "synthetic"]),
             ("JPEG folder, CPU decode", ["--data", root]),
             ("JPEG folder, --gpu-decode", ["--data", root, "--gpu-decode"])]
    rates = {}
    for name, more in cases:
        rates[name] = statistics.median(
            epoch_rate(worker_epoch_stats(base + more, events)[-1])
            for _ in range(a.rounds))
    synthetic = rates["synthetic data"]
    print(f"\nResNet-50 v1.5 end to end, {a.precision}, batch {a.batch}, "
          f"{steps} steps an epoch ({a.images} JPEGs ~500x375), the second "
          f"epoch\n")
    print("| input | images/s | of synthetic |")
    print("|---|---:|---:|")
    for name, _ in cases:
        print(f"| {name} | {rates[name]:.1f} | "
              f"{100 * rates[name] / synthetic:.1f}% |")
    sys.stdout.flush()


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build-dir", default=os.path.join(HERE, "..",
                                                        "build-bench"))
    p.add_argument("--rounds", type=int, default=1)
    sub = p.add_subparsers(dest="bench", required=True)
    t = sub.add_parser("train-step")
    t.add_argument("--threads", type=int, default=os.cpu_count())
    t.add_argument("--resnet50-batch", type=int, default=8)
    t.add_argument("--resnet18-batch", type=int, default=64)
    t.add_argument("--warmup", type=int, default=2)
    t.add_argument("--steps", type=int, default=5)
    t.add_argument("--precision", default="fp32")
    t.add_argument("--device", default="cpu")
    t.add_argument("--channels-last", type=int, choices=[0, 1], default=1)
    t.add_argument("--only", choices=["resnet50", "resnet18"])
    t.add_argument("--cuda-graph", type=int, choices=[0, 1], default=0,
                   help="our side: the worker's --cuda-graph step")
    t.add_argument("--fused-bn", type=int, choices=[0, 1], default=0,
                   help="our side with the fused batch-norm kernels")
    t.add_argument("--compile", type=int, choices=[0, 1], default=0,
                   help="the peer: torch.compile(model)")
    t.add_argument("--compile-mode", default="default",
                   help="the peer's torch.compile mode")
    e = sub.add_parser("epoch")
    e.add_argument("--threads", type=int, default=os.cpu_count())
    e.add_argument("--batch", type=int, default=64)
    e.add_argument("--steps", type=int, default=0,
                   help="train only this many steps (0: the whole epoch)")
    e.add_argument("--loader-workers", type=int, default=0)
    e.add_argument("--work-dir", help="where FashionMNIST/raw/ is prepared")
    i = sub.add_parser("input")
    i.add_argument("--images", type=int, default=200)
    i.add_argument("--images-dir", help="an existing JPEG folder tree")
    i.add_argument("--passes", type=int, default=3)
    d = sub.add_parser("detection")
    d.add_argument("--threads", type=int, default=os.cpu_count())
    d.add_argument("--depths", default="18",
                   help="comma-separated backbone depths (18,50)")
    d.add_argument("--height", type=int, default=96)
    d.add_argument("--width", type=int, default=144)
    d.add_argument("--batch", type=int, default=2)
    d.add_argument("--boxes", type=int, default=3)
    d.add_argument("--warmup", type=int, default=1)
    d.add_argument("--steps", type=int, default=3)
    d.add_argument("--channels-last", type=int, choices=[0, 1], default=0)
    d.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    d.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    d.add_argument("--rois", type=int, default=0,
                   help="RoIs per image, both sides (0: 512)")
    d.add_argument("--box-head-width", type=int, default=0,
                   help="box head width, both sides (0: 1024)")
    d.add_argument("--conv-box-head", type=int, choices=[0, 1], default=None,
                   help="our side only (default: FasterRCNNOptions')")
    g = sub.add_parser("gpu-decode")
    g.add_argument("--threads", type=int, default=os.cpu_count())
    g.add_argument("--images", type=int, default=4096)
    g.add_argument("--images-dir", help="an existing train/ val/ JPEG tree")
    g.add_argument("--batch", type=int, default=256)
    g.add_argument("--precision", choices=["fp32", "bf16"], default="bf16")
    a = p.parse_args()
    if a.rounds < 1:
        sys.exit("compare.py: --rounds must be >= 1")
    {"train-step": train_step, "epoch": epoch,
     "input": input_pipeline, "detection": detection,
     "gpu-decode": gpu_decode}[a.bench](a)


if __name__ == "__main__":
    main()
