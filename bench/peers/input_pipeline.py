#!/usr/bin/python3
"""torchvision + PIL peer of hpcai500-input-bench: decode every JPEG of an
ImageNet-style folder and apply RandomResizedCrop(224) (bilinear),
RandomHorizontalFlip, ToTensor and Normalize (ImageNet mean/std) on one
thread, no DataLoader workers. One untimed pass warms the page cache; the
images/s reported is the best of the timed passes. Prints one RESULT line.

With --make DIR it instead writes a folder of synthetic photo-like JPEGs
(smooth colour gradients, a few soft blobs and sensor-like noise) for both
benches to read.
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
import torchvision
from PIL import Image
from torchvision import transforms

import timing


def make_images(root, count, width, height, quality):
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    for i in range(count):
        cls = os.path.join(root, f"class{i % 4}")
        os.makedirs(cls, exist_ok=True)
        img = np.zeros((height, width, 3), np.float32)
        for c in range(3):
            a, b, d = rng.uniform(-1, 1, 3)
            img[..., c] = 128 + 80 * np.sin(a * xx / 90 + b * yy / 70 + d * 6)
        for _ in range(4):
            cx, cy = rng.uniform(0, width), rng.uniform(0, height)
            r = rng.uniform(20, 120)
            blob = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r))
            img += blob[..., None] * rng.uniform(-90, 90, 3)
        img += rng.normal(0, 6, img.shape)
        Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(
            os.path.join(cls, f"img{i:05d}.jpg"), quality=quality)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--root", required=True)
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--crop", type=int, default=224)
    p.add_argument("--make", action="store_true",
                   help="write synthetic JPEGs under --root and exit")
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--width", type=int, default=500)
    p.add_argument("--height", type=int, default=375)
    p.add_argument("--quality", type=int, default=90)
    a = p.parse_args()
    if a.make:
        if a.count < 1:
            sys.exit("input_pipeline.py: --count must be >= 1")
        make_images(a.root, a.count, a.width, a.height, a.quality)
        return
    if a.passes < 1:
        sys.exit("input_pipeline.py: --passes must be >= 1")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    data = torchvision.datasets.ImageFolder(a.root, transform=transforms.Compose([
        transforms.RandomResizedCrop(a.crop),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    ]))
    checksum = 0.0

    def one_pass():
        nonlocal checksum
        for i in range(len(data)):
            x, _ = data[i]
            checksum += float(x[0, 0, 0])

    one_pass()
    best = float("inf")
    for _ in range(a.passes):
        start = time.perf_counter()
        one_pass()
        best = min(best, time.perf_counter() - start)
    timing.print_result({
        "images": len(data), "passes": a.passes,
        "best_pass_s": round(best, 6),
        "images_per_s": round(len(data) / best, 3),
        "pil": Image.__version__, "torchvision": torchvision.__version__})


if __name__ == "__main__":
    main()
