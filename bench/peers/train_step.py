#!/usr/bin/python3
"""PyTorch eager peer of hpcai500-train-step-bench: the same synthetic ResNet
training step (torchvision's resnet18/resnet50, SGD with momentum, zero_grad
with set_to_none, optional channels-last and autocast), warm-up steps
excluded, median of the timed steps. Prints one RESULT line of JSON with the
same keys as the C++ bench.

--compile 1 is the torch.compile peer (issue 25): the model wrapped in
torch.compile with --compile-mode (default "default"; "max-autotune-no-cudagraphs"
autotunes its kernels without CUDA graphs); compilation happens in the first
warm-up step, so --warmup must be at least 1.

For images of 64 pixels or less the model gets the small-input stem of
worker/models/resnet.h (3x3 stride-1 conv1, no max-pool) and 10 classes; the last
BatchNorm of each block starts at zero as in the worker (no effect on speed).
"""
import argparse
import sys

import torch
import torchvision

import timing


def build_model(name, image_size, small_stem):
    num_classes = 10 if image_size <= 64 else 1000
    factory = getattr(torchvision.models, name, None)
    if factory is None or name not in ("resnet18", "resnet34", "resnet50",
                                       "resnet101"):
        sys.exit(f"train_step.py: unknown --model {name!r}")
    model = factory(weights=None, num_classes=num_classes,
                    zero_init_residual=True)
    if small_stem:
        model.conv1 = torch.nn.Conv2d(3, 64, kernel_size=3, stride=1,
                                      padding=1, bias=False)
        torch.nn.init.kaiming_normal_(model.conv1.weight, mode="fan_out",
                                      nonlinearity="relu")
        model.maxpool = torch.nn.Identity()
    return model, num_classes


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", default="resnet50")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--precision", choices=["fp32", "bf16", "fp16"],
                   default="fp32")
    p.add_argument("--channels-last", type=int, choices=[0, 1], default=1)
    p.add_argument("--small-stem", type=int, choices=[0, 1], default=None)
    p.add_argument("--compile", type=int, choices=[0, 1], default=0)
    p.add_argument("--compile-mode", default="default",
                   choices=["default", "reduce-overhead", "max-autotune",
                            "max-autotune-no-cudagraphs"])
    timing.add_step_args(p)
    a = p.parse_args()
    if a.steps < 1 or a.batch < 1 or a.warmup < 0:
        sys.exit("train_step.py: --steps and --batch must be >= 1, "
                 "--warmup >= 0")
    if a.compile and a.warmup < 1:
        sys.exit("train_step.py: --compile 1 needs --warmup >= 1 (the first "
                 "step compiles)")
    if a.precision == "fp16" and a.device != "cuda":
        sys.exit("train_step.py: --precision fp16 runs only on --device cuda")
    device = timing.set_up(a)
    small_stem = a.image_size <= 64 if a.small_stem is None else bool(
        a.small_stem)
    model, num_classes = build_model(a.model, a.image_size, small_stem)
    model = model.to(device)
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9,
                                weight_decay=1e-4)
    if a.compile:
        model = torch.compile(model, mode=a.compile_mode)
    scaler = torch.cuda.amp.GradScaler(enabled=a.precision == "fp16")
    images = torch.randn(a.batch, 3, a.image_size, a.image_size,
                         device=device).contiguous(memory_format=fmt)
    labels = torch.randint(num_classes, (a.batch,), device=device)
    autocast_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(
        a.precision)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=a.device,
                            dtype=autocast_dtype or torch.bfloat16,
                            enabled=autocast_dtype is not None):
            loss = loss_fn(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    median, fastest = timing.time_steps(step, device, a.warmup, a.steps)
    timing.print_step_result(
        {"model": a.model, "image_size": a.image_size,
         "precision": a.precision, "channels_last": bool(a.channels_last),
         "compile": a.compile_mode if a.compile else None},
        a, a.batch, median, fastest)


if __name__ == "__main__":
    main()
