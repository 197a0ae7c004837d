"""The GPU (NVPTX) target: the CPU backend's kernels run by CUDA thread grids, and GPU contraction kernels."""
