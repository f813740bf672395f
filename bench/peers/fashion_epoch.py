#!/usr/bin/python3
"""PyTorch peer of the worker's Fashion-MNIST epoch: the worker's ResNetSmall
(worker/models/resnet_small.cc) written in PyTorch, trained with the loop of
worker/train/trainer.cc (SGD lr 0.8 with per-step cosine decay over the epoch,
momentum 0.9, weight decay 5e-4, cross entropy, batch 64, fp32,
channels-last as the worker trains convolutional models in every precision;
--channels-last 0 for contiguous NCHW) on torchvision.datasets.FashionMNIST
through a DataLoader (shuffled, ToTensor + Normalize with the worker's mean/std).
Times the training loop only (first batch fetch to last optimizer step),
like the worker's hpcai500_epoch_stats seconds. Prints one RESULT line.

--root must hold FashionMNIST/raw/ with the IDX files (bench/compare.py
prepares it from /usr/share/datasets/fashion-mnist), so nothing is
downloaded.
"""
import argparse
import math
import sys
import time

import torch
import torchvision
from torch import nn
from torchvision import transforms

import timing


class ResidualBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.project = None
        if stride != 1 or cin != cout:
            self.project = nn.Conv2d(cin, cout, 1, stride, 0, bias=False)
            self.project_bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        shortcut = x if self.project is None else self.project_bn(
            self.project(x))
        return torch.relu(y + shortcut)


class ResNetSmall(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Conv2d(1, 16, 3, 1, 1, bias=False)
        self.stem_bn = nn.BatchNorm2d(16)
        self.block1 = ResidualBlock(16, 24, 2)
        self.block2 = ResidualBlock(24, 48, 2)
        self.block3 = ResidualBlock(48, 48, 1)
        self.fc = nn.Linear(48, num_classes)

    def forward(self, x):
        y = torch.relu(self.stem_bn(self.stem(x)))
        y = self.block3(self.block2(self.block1(y)))
        return self.fc(y.mean((2, 3)))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--root", required=True)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=0,
                   help="stop after this many batches (0: the whole epoch)")
    p.add_argument("--workers", type=int, default=0,
                   help="DataLoader worker processes")
    p.add_argument("--lr", type=float, default=0.8)
    p.add_argument("--channels-last", type=int, choices=[0, 1], default=1)
    a = p.parse_args()
    if a.batch < 1 or a.threads < 1 or a.steps < 0 or a.workers < 0:
        sys.exit("fashion_epoch.py: --batch and --threads must be >= 1, "
                 "--steps and --workers >= 0")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    data = torchvision.datasets.FashionMNIST(
        a.root, train=True, download=False,
        transform=transforms.Compose([
            transforms.ToTensor(),
            transforms.Normalize((0.2860,), (0.3530,))]))
    loader = torch.utils.data.DataLoader(data, batch_size=a.batch,
                                         shuffle=True, num_workers=a.workers)
    steps = len(loader) if a.steps == 0 else min(a.steps, len(loader))
    model = ResNetSmall()
    layout = (torch.channels_last if a.channels_last
              else torch.contiguous_format)
    model = model.to(memory_format=layout)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9,
                                weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    samples = 0
    loss_sum = 0.0
    input_wait = 0.0  # inside the DataLoader: indexing, PIL, ToTensor
    start = time.perf_counter()
    batches = iter(loader)
    for step in range(steps):
        fetch = time.perf_counter()
        x, y = next(batches)
        input_wait += time.perf_counter() - fetch
        lr = a.lr * 0.5 * (1.0 + math.cos(math.pi * step / steps))
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad()
        x = x.contiguous(memory_format=layout)
        loss = loss_fn(model(x), y)
        loss.backward()
        loss_sum += loss.item() * x.shape[0]
        samples += x.shape[0]
        optimizer.step()
    seconds = time.perf_counter() - start
    timing.print_result({
        "samples": samples, "steps": steps,
        "seconds": round(seconds, 4),
        "input_wait_seconds": round(input_wait, 4),
        "images_per_s": round(samples / seconds, 3),
        "train_loss": round(loss_sum / max(samples, 1), 4),
        "threads": torch.get_num_threads(), "workers": a.workers})


if __name__ == "__main__":
    main()
