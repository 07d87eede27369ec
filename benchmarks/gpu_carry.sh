#!/usr/bin/env bash
# Downloads into .gpu_carry/ (git ignores it) the wheels that the GPU machine lacks for
# benchmarks/gpu_check.py: Keras, and what Keras and the grader import that its image does not
# hold (its image has numpy, jax, torch, absl-py, rich, h5py, ml-dtypes, click, packaging, attrs,
# matplotlib and typing-extensions; it has no network). Linux x86-64 wheels for CPython
# GPU_CARRY_PYTHONS (default 3.11 and 3.12: Keras 3.15 needs 3.11; the image's python3 was 3.12).
# The command that installs them there is at the end of benchmarks/gpu_check.py's docstring.
set -euo pipefail
cd "$(dirname "$0")/.."

folder=.gpu_carry
# Pinned to the versions the kit was tested with here; all are pure Python but optree and rpds-py.
packages=(
  keras==3.15.1 namex==0.1.0 optree==0.20.0
  # grader.notebook (nbformat) is imported by `grader check`
  nbformat==5.11.1 fastjsonschema==2.22.3 jsonschema==4.26.0 jsonschema-specifications
  referencing rpds-py jupyter-core==5.9.1 platformdirs traitlets==5.15.0
)
rm -rf "$folder"
mkdir -p "$folder"
for version in ${GPU_CARRY_PYTHONS:-3.11 3.12}; do
  python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$folder" \
    --python-version "$version" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 "${packages[@]}"
done
ls "$folder"
du -sh "$folder"
