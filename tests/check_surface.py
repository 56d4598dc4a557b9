#!/usr/bin/env python3
"""Reads a surface sequence written by `waterview capture --surface DIR` with meshio (a mesh reader of
another project than waterview's writer) and checks it the way Blender, Houdini and ParaView will see it:

- DIR holds exactly FRAMES files surface_00000.EXT ... (EXT: ply or obj, --format);
- each is one block of triangles over finite points, every index in range, at least one triangle;
- the mesh is closed (every edge shared by exactly two triangles) and wound outwards (positive volume);
- PLY files carry unit vertex normals nx, ny, nz; OBJ files are read for their points and triangles;
- every point lies inside the box --min X Y Z .. --max X Y Z (the scene's domain, widened by the caller).

Prints one line per file (points, triangles, volume) and exits non-zero with the reason on the first
failure. Run by tests/surface_files.rs (`cargo test`; CI installs meshio). Usage:

    pip install meshio
    waterview --scene assets/scenes/dam_break.ron capture --seconds 0.5 --fps 20 --surface frames
    python3 tests/check_surface.py frames --frames 10 --min -1 -1 -1 --max 5 3 3
"""
import argparse
import pathlib
import sys

try:
    import meshio
    import numpy as np
except ImportError as e:  # the Rust test shows this message
    print(f"check_surface.py needs meshio and numpy ({e}): pip install meshio", file=sys.stderr)
    sys.exit(3)


def fail(message: str) -> int:
    print(f"check_surface.py: {message}", file=sys.stderr)
    return 1


def check(path: pathlib.Path, lo: np.ndarray, hi: np.ndarray, normals: bool) -> str:
    """Checks one mesh file; returns its summary line or raises ValueError with the reason."""
    mesh = meshio.read(path)
    blocks = [c for c in mesh.cells if c.type == "triangle"]
    if len(blocks) != 1 or len(mesh.cells) != 1:
        raise ValueError(f"{path.name}: {[c.type for c in mesh.cells]} cell blocks, want one of triangles")
    points = np.asarray(mesh.points, dtype=np.float64)
    tris = np.asarray(blocks[0].data, dtype=np.int64)
    if len(tris) == 0 or points.shape[1] != 3 or not np.isfinite(points).all():
        raise ValueError(f"{path.name}: {len(tris)} triangles, points {points.shape}, finite {np.isfinite(points).all()}")
    if tris.min() < 0 or tris.max() >= len(points):
        raise ValueError(f"{path.name}: a triangle index outside 0 .. {len(points)}")
    if (points < lo).any() or (points > hi).any():
        raise ValueError(f"{path.name}: points span {points.min(0)} .. {points.max(0)}, outside {lo} .. {hi}")
    edges = np.sort(np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]), axis=1)
    _, uses = np.unique(edges, axis=0, return_counts=True)
    if (uses != 2).any():
        raise ValueError(f"{path.name}: {(uses != 2).sum()} edges not shared by exactly two triangles (not closed)")
    a, b, c = points[tris[:, 0]], points[tris[:, 1]], points[tris[:, 2]]
    volume = np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0
    if volume <= 0.0:
        raise ValueError(f"{path.name}: enclosed volume {volume} m^3 (wound inwards?)")
    if normals:
        missing = [k for k in ("nx", "ny", "nz") if k not in mesh.point_data]
        if missing:
            raise ValueError(f"{path.name}: no vertex normals {missing} (point data: {list(mesh.point_data)})")
        n = np.stack([mesh.point_data[k] for k in ("nx", "ny", "nz")], axis=1)
        length = np.linalg.norm(n, axis=1)
        if not np.isfinite(n).all() or np.abs(length - 1.0).max() > 1e-3:
            raise ValueError(f"{path.name}: normals of length {length.min()} .. {length.max()}")
    return f"{path.name}: {len(points)} points, {len(tris)} triangles, volume {volume:.6g} m^3"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=pathlib.Path)
    parser.add_argument("--frames", type=int, required=True)
    parser.add_argument("--format", choices=["ply", "obj"], default="ply")
    parser.add_argument("--min", type=float, nargs=3, required=True)
    parser.add_argument("--max", type=float, nargs=3, required=True)
    args = parser.parse_args()
    files = sorted(args.dir.glob(f"surface_*.{args.format}"))
    expected = [f"surface_{k:05}.{args.format}" for k in range(args.frames)]
    if [f.name for f in files] != expected:
        return fail(f"{args.dir} holds {[f.name for f in files]}, want {expected}")
    lo, hi = np.array(args.min), np.array(args.max)
    for f in files:
        try:
            print(check(f, lo, hi, normals=args.format == "ply"))
        except ValueError as e:
            return fail(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
