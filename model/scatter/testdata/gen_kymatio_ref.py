"""Writes kymatio_ref.json.gz: inputs and outputs of kymatio's Scattering2D
(numpy frontend, float32 input) that scatter's tests compare against.

Run with kymatio installed (`pip install kymatio==0.3.0`; the 2-D filter
bank and core used here are the same in 0.3.0 and in the 0.4.0.dev0 source
the reference was made with), numpy and scipy:

    python3 gen_kymatio_ref.py MNIST_T10K_IMAGES_GZ
"""
import gzip
import json
import sys

import numpy as np
from kymatio.numpy import Scattering2D


def mnist(path, idx):
    with gzip.open(path, "rb") as f:
        data = f.read()
    n, h, w = (int.from_bytes(data[4 * i:4 * i + 4], "big") for i in (1, 2, 3))
    off = 16 + idx * h * w
    img = np.frombuffer(data[off:off + h * w], np.uint8).reshape(h, w)
    return img.astype(np.float32) / np.float32(255)


def main():
    rng = np.random.RandomState(20151125)
    cases = []

    def add(name, img, J, L):
        img = np.ascontiguousarray(img, np.float32)
        out = Scattering2D(J=J, shape=img.shape, L=L)(img)
        cases.append({
            "name": name, "h": img.shape[0], "w": img.shape[1], "J": J, "L": L,
            "shape": list(out.shape),
            "img": [float(v) for v in img.ravel()],
            "out": [float(v) for v in out.ravel()],
        })

    add("mnist-t10k-0", mnist(sys.argv[1], 0), 2, 8)
    add("mnist-t10k-1", mnist(sys.argv[1], 1), 2, 8)
    add("uniform-32x32", rng.rand(32, 32), 2, 8)
    add("uniform-30x27", rng.rand(30, 27), 2, 8)
    add("uniform-32x32-J3-L6", rng.rand(32, 32), 3, 6)
    add("uniform-16x16-J1-L5", rng.rand(16, 16), 1, 5)
    add("uniform-20x24-J4-L3", rng.rand(20, 24), 4, 3)
    # Padding wider than the image: reflection repeats.
    add("uniform-4x4", rng.rand(4, 4), 2, 8)
    add("uniform-5x7-L2", rng.rand(5, 7), 2, 2)
    with gzip.open("kymatio_ref.json.gz", "wt") as f:
        json.dump({"kymatio_commit": "11552ed5533d566e6c60d77eecccb37dfb229dec",
                   "cases": cases}, f)


if __name__ == "__main__":
    main()
