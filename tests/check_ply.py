#!/usr/bin/env python3
"""Reads a particle sequence written by `waterview capture --particles DIR` with Python's `plyfile`
(a PLY reader of another project than waterview's writer) and checks it the way Houdini, Blender and
ParaView will see it:

- every `DIR/particles_NNNNN.ply` is binary little-endian with one `vertex` element of float properties
  x, y, z, vx, vy, vz, density;
- file k's `comment time_s T` is k / FPS as a 32-bit float (frames exactly 1/fps apart);
- every value is finite and every density positive (live particles only: parked ones have density < 0);
- with --count N, every file holds N particles (a scene without emitters or sinks keeps its count).

Not run by `cargo test` (CI installs no Python packages); the Rust test tests/particle_files.rs reads the
same files with the `serde-ply` crate. Usage:

    pip install plyfile numpy
    waterview --scene assets/scenes/dam_break.ron capture --seconds 1 --fps 30 --particles frames
    python3 tests/check_ply.py frames 30 [--count N]
"""
import argparse
import pathlib
import sys

import numpy as np
from plyfile import PlyData

PROPERTIES = ["x", "y", "z", "vx", "vy", "vz", "density"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=pathlib.Path)
    parser.add_argument("fps", type=float)
    parser.add_argument("--count", type=int, default=None)
    args = parser.parse_args()
    files = sorted(args.dir.glob("particles_*.ply"))
    if not files:
        print(f"no particles_*.ply in {args.dir}", file=sys.stderr)
        return 1
    failures = []
    for k, path in enumerate(files):
        if path.name != f"particles_{k:05d}.ply":
            failures.append(f"{path.name}: expected particles_{k:05d}.ply (a frame is missing)")
            continue
        ply = PlyData.read(str(path))
        if ply.text or ply.byte_order != "<":
            failures.append(f"{path.name}: not binary little-endian")
        vertex = ply["vertex"]
        names = [p.name for p in vertex.properties]
        kinds = {p.name: p.val_dtype for p in vertex.properties}
        if names != PROPERTIES or any(np.dtype(kinds[n]) != np.float32 for n in names):
            failures.append(f"{path.name}: properties {names} {kinds}")
        times = [c.split()[1] for c in ply.comments if c.startswith("time_s ")]
        want = np.float32(k / args.fps)
        if len(times) != 1 or np.float32(times[0]) != want:
            failures.append(f"{path.name}: time {times} instead of {want}")
        data = np.stack([vertex[n] for n in PROPERTIES], axis=1)
        if not np.isfinite(data).all():
            failures.append(f"{path.name}: values that are not finite")
        if (vertex["density"] <= 0).any():
            failures.append(f"{path.name}: a density <= 0 (a parked particle?)")
        if args.count is not None and len(data) != args.count:
            failures.append(f"{path.name}: {len(data)} particles instead of {args.count}")
        lo, hi = data[:, :3].min(axis=0), data[:, :3].max(axis=0)
        print(f"{path.name}: t = {want} s, {len(data)} particles, box {lo} .. {hi}, "
              f"max speed {np.linalg.norm(data[:, 3:6], axis=1).max():.3f} m/s")
    for f in failures:
        print("FAIL", f, file=sys.stderr)
    print(f"{len(files)} files read with plyfile, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
