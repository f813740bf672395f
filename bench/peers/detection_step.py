#!/usr/bin/python3
"""PyTorch eager peer of `hpcai500-train-step-bench --model
faster_rcnn_resnet18|faster_rcnn_resnet50`: torchvision's Faster R-CNN built
like worker/faster_rcnn.h's default FasterRCNNOptions, trained on one fixed
synthetic batch. Warm-up steps excluded, median of the timed steps; prints
one RESULT line of JSON with the same keys as the C++ bench.

The model:
  - backbone: torchvision resnet18/resnet50 (ordinary BatchNorm, trained, as
    ours) with a 16-channel conv1, truncated after layer3 (C4, stride 16),
    out_channels 256 / 1024;
  - AnchorGenerator with one feature level, sizes (16, 32, 64, 128), aspect
    ratios (0.25, 0.5, 1, 2, 4);
  - RPN: 3x3 conv head, pre/post NMS top-n 1000/500 (train), 500/300
    (test), NMS 0.7, IoU 0.7/0.3, 256 anchors per image, half positive;
  - box head: MultiScaleRoIAlign 7x7 sampling ratio 2, TwoMLPHead 1024,
    4 classes + background, IoU 0.5/0.5, 512 RoIs per image, a quarter
    positive;
  - GeneralizedRCNNTransform min_size=H, max_size=W (scale 1: no resizing),
    mean 0 and std 1, size_divisible 16 (so 144 is not padded to 160).
Optimiser: SGD lr 0.01, momentum 0.9, weight decay 1e-4, zero_grad with
set_to_none. The synthetic boxes are bench_boxes() below, which the C++ bench
reproduces exactly (SyntheticTargets in bench/train_step_bench.cc).
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torchvision
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.ops import MultiScaleRoIAlign

IN_CHANNELS = 16
NUM_CLASSES = 4  # foreground classes, as FasterRCNNOptions
STRIDE = 16


def bench_boxes(batch, height, width, boxes_per_image):
    """The synthetic ground truth both sides use: per image b and box i a box
    of (14 + 10 i + 6 b) x (10 + 8 i + 4 b) pixels at a spread-out centre,
    class (b + i) % 4."""
    targets = []
    for b in range(batch):
        rows, labels = [], []
        for i in range(boxes_per_image):
            w = min(14.0 + 10.0 * i + 6.0 * b, 0.9 * width)
            h = min(10.0 + 8.0 * i + 4.0 * b, 0.9 * height)
            cx = ((0.15 + 0.29 * i + 0.07 * b) % 0.8 + 0.1) * width
            cy = ((0.25 + 0.31 * i + 0.11 * b) % 0.8 + 0.1) * height
            x1 = min(max(cx - w / 2, 0.0), width - w)
            y1 = min(max(cy - h / 2, 0.0), height - h)
            rows.append([x1, y1, x1 + w, y1 + h])
            labels.append((b + i) % NUM_CLASSES)
        targets.append({"boxes": torch.tensor(rows, dtype=torch.float32),
                        "labels": torch.tensor(labels, dtype=torch.int64)})
    return targets


def build_model(name, height, width):
    depth = {"faster_rcnn_resnet18": 18, "faster_rcnn_resnet50": 50}.get(name)
    if depth is None:
        sys.exit(f"detection_step.py: unknown --model {name!r} (expected "
                 "faster_rcnn_resnet18 or faster_rcnn_resnet50)")
    trunk = getattr(torchvision.models, f"resnet{depth}")(weights=None)
    trunk.conv1 = torch.nn.Conv2d(IN_CHANNELS, 64, kernel_size=7, stride=2,
                                  padding=3, bias=False)
    backbone = torch.nn.Sequential(trunk.conv1, trunk.bn1, trunk.relu,
                                   trunk.maxpool, trunk.layer1, trunk.layer2,
                                   trunk.layer3)
    backbone.out_channels = 256 if depth < 50 else 1024
    anchors = AnchorGenerator(sizes=((16, 32, 64, 128),),
                              aspect_ratios=((0.25, 0.5, 1.0, 2.0, 4.0),))
    roi_pool = MultiScaleRoIAlign(featmap_names=["0"], output_size=7,
                                  sampling_ratio=2)
    return FasterRCNN(
        backbone, num_classes=NUM_CLASSES + 1, min_size=height,
        max_size=width, image_mean=[0.0] * IN_CHANNELS,
        image_std=[1.0] * IN_CHANNELS, size_divisible=STRIDE,
        rpn_anchor_generator=anchors, box_roi_pool=roi_pool,
        rpn_pre_nms_top_n_train=1000, rpn_post_nms_top_n_train=500,
        rpn_pre_nms_top_n_test=500, rpn_post_nms_top_n_test=300,
        rpn_nms_thresh=0.7, rpn_fg_iou_thresh=0.7, rpn_bg_iou_thresh=0.3,
        rpn_batch_size_per_image=256, rpn_positive_fraction=0.5,
        box_score_thresh=0.05, box_nms_thresh=0.5, box_detections_per_img=100,
        box_fg_iou_thresh=0.5, box_bg_iou_thresh=0.5,
        box_batch_size_per_image=512, box_positive_fraction=0.25)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", default="faster_rcnn_resnet18")
    p.add_argument("--height", type=int, default=96)
    p.add_argument("--width", type=int, default=144)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--boxes", type=int, default=3)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--precision", choices=["fp32"], default="fp32")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--channels-last", type=int, choices=[0, 1], default=0)
    a = p.parse_args()
    if a.steps < 1 or a.batch < 1 or a.warmup < 0 or a.boxes < 1:
        sys.exit("detection_step.py: --steps, --batch and --boxes must be "
                 ">= 1, --warmup >= 0")
    if a.height % STRIDE or a.width % STRIDE or a.height < 32 or a.width < 32:
        sys.exit(f"detection_step.py: --height and --width must be multiples "
                 f"of {STRIDE} and >= 32, got {a.height} x {a.width}")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    device = torch.device(a.device)
    model = build_model(a.model, a.height, a.width).to(device)
    if a.channels_last:
        model = model.to(memory_format=torch.channels_last)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9,
                                weight_decay=1e-4)
    images = list(torch.randn(a.batch, IN_CHANNELS, a.height, a.width,
                              device=device).unbind(0))
    targets = [{k: v.to(device) for k, v in t.items()}
               for t in bench_boxes(a.batch, a.height, a.width, a.boxes)]

    def step():
        optimizer.zero_grad(set_to_none=True)
        losses = model(images, targets)
        sum(losses.values()).backward()
        optimizer.step()

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(a.warmup):
        step()
    sync()
    seconds = []
    for _ in range(a.steps):
        start = time.perf_counter()
        step()
        sync()
        seconds.append(time.perf_counter() - start)
    median = statistics.median(seconds)
    print("RESULT " + json.dumps({
        "impl": "pytorch", "model": a.model, "height": a.height,
        "width": a.width, "batch": a.batch, "threads": torch.get_num_threads(),
        "precision": a.precision, "device": a.device,
        "channels_last": bool(a.channels_last), "steps": a.steps,
        "median_step_s": round(median, 6), "min_step_s": round(min(seconds), 6),
        "images_per_s": round(a.batch / median, 3),
        "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
