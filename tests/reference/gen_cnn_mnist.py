#!/usr/bin/python3
# tests/reference/gen_cnn_mnist.py — PyTorch's test accuracy for train_mnist's --model cnn recipe,
# written to tests/reference/cnn_mnist_ref.cmake for the ctest train_mnist_cnn_limit; with
# --model mlp, the same for train_mnist's default MLP recipe (printed only, never written).
#
# The same job as `build/bin/train_mnist --model cnn|mlp --epochs E --limit N --seed S`:
#   data   Fashion-MNIST IDX files from $TINYTORCH_DATA or /usr/share/datasets/fashion-mnist
#          (Debian's dataset-fashion-mnist), pixels / 255, the first N training images,
#          normalised (x - 0.2860) / 0.3530, shaped (N, 1, 28, 28) (cnn) or (N, 784) (mlp)
#   model  cnn: Conv2d(1, 8, 3, padding=1) - ReLU - MaxPool2d(2) - Conv2d(8, 16, 3, padding=1) - ReLU
#          - MaxPool2d(2) - Flatten - Linear(16*7*7, 10);
#          mlp: Linear(784, 256) - ReLU - Linear(256, 128) - ReLU - Linear(128, 10);
#          PyTorch's default initialisation (tinytorch draws from the same distributions, not the
#          same numbers)
#   train  CrossEntropyLoss, batch 64, reshuffled every epoch, SGD(lr=0.02, momentum=0.9),
#          CosineAnnealingLR(T_max = all iterations) stepped after every batch
#   test   accuracy on the 10000 test images
# Random streams differ between the two frameworks (initial weights, shuffling), so a single run
# cannot be matched number for number; the script trains with several seeds and records the
# mean, minimum and maximum test accuracy. The ctest requires tinytorch (seed 0) to reach
# TT_CNN_MNIST_REF_THRESHOLD = PyTorch's mean - TOLERANCE (0.02; PyTorch's own seeds spread by about
# +-0.01 around their mean at this setting).
#
# Run with Debian's PyTorch (python3-torch), not the python3 on PATH:
#   /usr/bin/python3 tests/reference/gen_cnn_mnist.py                  # the ctest's setting, writes the .cmake
#   /usr/bin/python3 tests/reference/gen_cnn_mnist.py --epochs 10 --limit 0 --seeds 1 --no-write  # the full run
#   /usr/bin/python3 tests/reference/gen_cnn_mnist.py --model mlp --epochs 10 --limit 0 --seeds 3
#                    # train_mnist's default MLP run (examples/train_mnist.cpp's header); prints only
import argparse
import gzip
import os
import struct
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

MEAN, STD = 0.2860, 0.3530
TOLERANCE = 0.02  # how far below PyTorch's mean accuracy tinytorch may land


def read_images(path):
    with gzip.open(path, "rb") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        assert magic == 2051, path
        data = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8)
    return data.reshape(n, 1, rows, cols).to(torch.float32) / 255.0


def read_labels(path):
    with gzip.open(path, "rb") as f:
        magic, n = struct.unpack(">II", f.read(8))
        assert magic == 2049, path
        data = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8)
    return data.to(torch.int64)


def make_cnn():
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(16 * 7 * 7, 10))


def make_mlp():
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


def train(model_name, seed, epochs, train_x, train_y, test_x, test_y, batch_size=64, lr=0.02, momentum=0.9):
    torch.manual_seed(seed)
    model = make_cnn() if model_name == "cnn" else make_mlp()
    gen = torch.Generator().manual_seed(seed)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train_x, train_y), batch_size=batch_size,
                                         shuffle=True, generator=gen)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * len(loader))
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
            sched.step()
    model.eval()
    with torch.no_grad():
        correct = sum(int((model(test_x[i:i + 1000]).argmax(1) == test_y[i:i + 1000]).sum())
                      for i in range(0, len(test_x), 1000))
    return correct / len(test_x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["cnn", "mlp"], default="cnn",
                    help="train_mnist's --model; mlp only prints (cnn_mnist_ref.cmake is the cnn's)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--limit", type=int, default=10000, help="first N training images (0: all)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--no-write", action="store_true", help="print only; keep cnn_mnist_ref.cmake")
    args = ap.parse_args()
    torch.set_num_threads(1)
    d = os.environ.get("TINYTORCH_DATA") or "/usr/share/datasets/fashion-mnist"
    train_x = (read_images(os.path.join(d, "train-images-idx3-ubyte.gz")) - MEAN) / STD
    train_y = read_labels(os.path.join(d, "train-labels-idx1-ubyte.gz"))
    test_x = (read_images(os.path.join(d, "t10k-images-idx3-ubyte.gz")) - MEAN) / STD
    test_y = read_labels(os.path.join(d, "t10k-labels-idx1-ubyte.gz"))
    if args.limit > 0:
        train_x, train_y = train_x[:args.limit], train_y[:args.limit]
    if args.model == "mlp":  # the MLP sees flat images: (N, 784)
        train_x, test_x = train_x.reshape(len(train_x), -1), test_x.reshape(len(test_x), -1)
    accs = []
    for seed in range(args.seeds):
        t0 = time.time()
        accs.append(train(args.model, seed, args.epochs, train_x, train_y, test_x, test_y))
        print(f"seed {seed}: test_accuracy={accs[-1]:.4f} ({time.time() - t0:.1f}s, "
              f"{args.epochs * len(train_x) / (time.time() - t0):.0f} training samples/s incl. evaluation)")
    mean = sum(accs) / len(accs)
    print(f"PyTorch {torch.__version__}, model {args.model}, epochs {args.epochs}, limit {args.limit}: "
          f"mean {mean:.4f} min {min(accs):.4f} max {max(accs):.4f} over {len(accs)} seeds")
    if args.no_write or args.model != "cnn":
        return
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cnn_mnist_ref.cmake")
    with open(out, "w") as f:
        f.write("# generated by gen_cnn_mnist.py — do not edit.\n")
        f.write(f"# Regenerate: /usr/bin/python3 tests/reference/gen_cnn_mnist.py  (PyTorch {torch.__version__})\n")
        f.write(f"# PyTorch's test accuracy for train_mnist --model cnn --epochs {args.epochs} --limit {args.limit},\n")
        f.write(f"# seeds 0..{args.seeds - 1}: " + ", ".join(f"{a:.4f}" for a in accs) + "\n")
        f.write(f"set(TT_CNN_MNIST_REF_EPOCHS {args.epochs})\n")
        f.write(f"set(TT_CNN_MNIST_REF_LIMIT {args.limit})\n")
        f.write(f"set(TT_CNN_MNIST_REF_MEAN {mean:.4f})\n")
        f.write(f"set(TT_CNN_MNIST_REF_MIN {min(accs):.4f})\n")
        f.write(f"set(TT_CNN_MNIST_REF_MAX {max(accs):.4f})\n")
        f.write(f"set(TT_CNN_MNIST_REF_TOLERANCE {TOLERANCE})\n")
        f.write(f"set(TT_CNN_MNIST_REF_THRESHOLD {mean - TOLERANCE:.4f})  # mean - tolerance\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
