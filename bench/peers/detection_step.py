#!/usr/bin/python3
"""PyTorch eager peer of `hpcai500-train-step-bench --model
faster_rcnn_resnetN`: torchvision's Faster R-CNN built like the detector the
worker trains (worker/models/faster_rcnn.h's DetectorOptionsFor), trained on one
fixed synthetic batch. Warm-up steps excluded, median of the timed steps
(bench/peers/timing.py); prints one RESULT line of JSON with the same keys
as the C++ bench.

The model, for a grid of H x W:
  - backbone: torchvision resnet18/34/50/101 (ordinary BatchNorm, trained,
    as ours) with a 16-channel conv1, truncated after layer2 (C3, stride 8,
    out_channels 128 / 512 for basic / bottleneck blocks) when H < 192, else
    after layer3 (C4, stride 16, out_channels 256 / 1024);
  - AnchorGenerator with one feature level, sizes (16, 32, 64, 128) x H / 96,
    aspect ratios (0.25, 0.5, 1, 2, 4);
  - RPN: 3x3 conv head, pre-NMS top-n 1000 (train) / 500 (test), post-NMS
    top-n 500 / 300 capped at 4 / 2 x --rois when --rois is set, NMS 0.7,
    IoU 0.7/0.3, 256 anchors per image, half positive;
  - box head: MultiScaleRoIAlign 7x7 sampling ratio 2, TwoMLPHead of
    --box-head-width (0: 1024), 4 classes + background, IoU 0.5/0.5,
    --rois RoIs per image (0: 512), a quarter positive;
  - GeneralizedRCNNTransform min_size=H, max_size=W (scale 1: no resizing),
    mean 0 and std 1, size_divisible 16 (so 144 is not padded to 160).
--precision bf16 runs the forward pass under autocast (as the C++ bench's
AutocastScope does). Optimiser: SGD lr 0.01, momentum 0.9, weight decay 1e-4,
zero_grad with set_to_none. The synthetic boxes are bench_boxes() below, which the C++ bench
reproduces exactly (SyntheticTargets in bench/train_step_bench.cc).
"""
import argparse
import sys

import torch
import torchvision
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.faster_rcnn import (FastRCNNPredictor,
                                                      TwoMLPHead)
from torchvision.ops import MultiScaleRoIAlign

import timing

IN_CHANNELS = 16
NUM_CLASSES = 4  # foreground classes, as FasterRCNNOptions
SIZE_DIVISIBLE = 16  # --height and --width are multiples: never padded
# DetectorOptionsFor's rule (worker/models/faster_rcnn.h).
MIN_ROWS_FOR_C4 = 192  # kDetectorMinRowsForC4
ANCHOR_ROWS = 96  # kDetectorAnchorRows
ANCHOR_SIZES = (16, 32, 64, 128)
DEFAULT_ROIS = 512
DEFAULT_BOX_HEAD_WIDTH = 1024
RPN_POST_NMS_TOP_N_TRAIN = 500
RPN_POST_NMS_TOP_N_TEST = 300


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


def feature_stage(height):
    """3 (C3) below MIN_ROWS_FOR_C4 rows, else 4 (C4)."""
    return 3 if height < MIN_ROWS_FOR_C4 else 4


def build_model(name, height, width, rois=0, box_head_width=0):
    """The detector of DetectorOptionsFor(name, 16, height, rois,
    box_head_width) in torchvision."""
    depth = {f"faster_rcnn_resnet{d}": d for d in (18, 34, 50, 101)}.get(name)
    if depth is None:
        sys.exit(f"detection_step.py: unknown --model {name!r} (expected "
                 "faster_rcnn_resnet18, 34, 50 or 101)")
    stage = feature_stage(height)
    trunk = getattr(torchvision.models, f"resnet{depth}")(weights=None)
    trunk.conv1 = torch.nn.Conv2d(IN_CHANNELS, 64, kernel_size=7, stride=2,
                                  padding=3, bias=False)
    layers = [trunk.layer1, trunk.layer2, trunk.layer3][:stage - 1]
    backbone = torch.nn.Sequential(trunk.conv1, trunk.bn1, trunk.relu,
                                   trunk.maxpool, *layers)
    # C3 / C4 channels: 128 / 256 for basic blocks, x4 for bottlenecks.
    backbone.out_channels = (64 << (stage - 2)) * (1 if depth < 50 else 4)
    scale = height / ANCHOR_ROWS
    anchors = AnchorGenerator(sizes=(tuple(s * scale for s in ANCHOR_SIZES),),
                              aspect_ratios=((0.25, 0.5, 1.0, 2.0, 4.0),))
    roi_pool = MultiScaleRoIAlign(featmap_names=["0"], output_size=7,
                                  sampling_ratio=2)
    width_fc = box_head_width or DEFAULT_BOX_HEAD_WIDTH
    post_train, post_test = RPN_POST_NMS_TOP_N_TRAIN, RPN_POST_NMS_TOP_N_TEST
    if rois:
        post_train, post_test = min(post_train, 4 * rois), min(post_test,
                                                               2 * rois)
    return FasterRCNN(
        backbone, num_classes=None, min_size=height,
        max_size=width, image_mean=[0.0] * IN_CHANNELS,
        image_std=[1.0] * IN_CHANNELS, size_divisible=SIZE_DIVISIBLE,
        rpn_anchor_generator=anchors, box_roi_pool=roi_pool,
        box_head=TwoMLPHead(backbone.out_channels * 7 * 7, width_fc),
        box_predictor=FastRCNNPredictor(width_fc, NUM_CLASSES + 1),
        rpn_pre_nms_top_n_train=1000, rpn_post_nms_top_n_train=post_train,
        rpn_pre_nms_top_n_test=500, rpn_post_nms_top_n_test=post_test,
        rpn_nms_thresh=0.7, rpn_fg_iou_thresh=0.7, rpn_bg_iou_thresh=0.3,
        rpn_batch_size_per_image=256, rpn_positive_fraction=0.5,
        box_score_thresh=0.05, box_nms_thresh=0.5, box_detections_per_img=100,
        box_fg_iou_thresh=0.5, box_bg_iou_thresh=0.5,
        box_batch_size_per_image=rois or DEFAULT_ROIS,
        box_positive_fraction=0.25)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", default="faster_rcnn_resnet18")
    p.add_argument("--height", type=int, default=96)
    p.add_argument("--width", type=int, default=144)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--boxes", type=int, default=3)
    p.add_argument("--rois", type=int, default=0,
                   help="RoIs per image (0: 512)")
    p.add_argument("--box-head-width", type=int, default=0,
                   help="fc6/fc7 width (0: 1024)")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: the forward pass under autocast")
    p.add_argument("--channels-last", type=int, choices=[0, 1], default=0)
    timing.add_step_args(p)
    a = p.parse_args()
    if a.steps < 1 or a.batch < 1 or a.warmup < 0 or a.boxes < 1:
        sys.exit("detection_step.py: --steps, --batch and --boxes must be "
                 ">= 1, --warmup >= 0")
    if a.rois < 0 or a.box_head_width < 0:
        sys.exit("detection_step.py: --rois and --box-head-width must be "
                 ">= 0")
    if (a.height % SIZE_DIVISIBLE or a.width % SIZE_DIVISIBLE
            or a.height < 32 or a.width < 32):
        sys.exit(f"detection_step.py: --height and --width must be multiples "
                 f"of {SIZE_DIVISIBLE} and >= 32, got {a.height} x {a.width}")
    device = timing.set_up(a)
    model = build_model(a.model, a.height, a.width, a.rois,
                        a.box_head_width).to(device)
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
        with torch.autocast(device_type=a.device, dtype=torch.bfloat16,
                            enabled=a.precision == "bf16"):
            losses = model(images, targets)
        sum(losses.values()).backward()
        optimizer.step()

    median, fastest = timing.time_steps(step, device, a.warmup, a.steps)
    timing.print_step_result(
        {"model": a.model, "height": a.height, "width": a.width,
         "feature_stage": feature_stage(a.height),
         "rois_per_image": a.rois or DEFAULT_ROIS,
         "box_head_width": a.box_head_width or DEFAULT_BOX_HEAD_WIDTH,
         "precision": a.precision, "channels_last": bool(a.channels_last)},
        a, a.batch, median, fastest)


if __name__ == "__main__":
    main()
