#!/usr/bin/env python3
"""PyTorch eager side of bench.py: trains MLP or CNN, prints samples/s.

    python torch_train.py MLP|CNN STEPS THREADS [cpu|cuda] [bf16]

bf16: the step under torch.autocast(device, dtype=torch.bfloat16) (what
bench/precision/bench.py compares het --precision bf16 with).

The models mirror bench/codegen/mlp_784.mlir and cnn_b64.mlir (same shapes,
batch, SGD learning rate); the first step is a warm-up, as on het's side.
"""
import sys
import time

import torch


def torch_models(torch):
    nn = torch.nn

    def mlp():
        return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                             nn.Linear(1024, 10)), (256, 784), 0.1

    def cnn():
        def block(i, o):
            return [nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]
        layers = block(3, 16) + block(16, 32) + [nn.MaxPool2d(2)] + block(32, 32) + [
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)]
        return nn.Sequential(*layers), (64, 3, 32, 32), 0.05

    return {"MLP": mlp, "CNN": cnn}


def run(make, steps, threads, device="cpu", autocast=False):
    torch.manual_seed(0)
    torch.set_num_threads(threads)
    model, shape, lr = make()
    model = model.to(device)
    x = torch.randn(*shape).to(device)
    y = torch.randint(0, 10, (shape[0],)).to(device)
    # CUDA runs asynchronously: the clock reads after the device is done.
    synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=autocast):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step()  # warm-up, as het's first step
    synchronize()
    start = time.perf_counter()
    for _ in range(steps - 1):
        step()
    synchronize()
    seconds = time.perf_counter() - start
    return (steps - 1) * shape[0] / seconds, 1000.0 * seconds / (steps - 1)



if __name__ == "__main__":
    name, steps, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    device = sys.argv[4] if len(sys.argv) > 4 else "cpu"
    autocast = len(sys.argv) > 5 and sys.argv[5] == "bf16"
    samples, ms = run(torch_models(torch)[name], steps, threads, device, autocast)
    print(f"samples/s {samples:.1f} ms {ms:.3f} torch {torch.__version__}")
