# One call on nvidia-h200-x2 (driver 580.159.04, torch 2.11.0+cu130), no build:
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
timeout 300 python3 benches/ag_gemm/experiments/copy_stream_probe.py --out $OUT/probe.json 2>&1 | tee $OUT/probe.txt
# A second call (same machine kind, the probe's --link part, added after the first call):
timeout 300 python3 benches/ag_gemm/experiments/copy_stream_probe.py --link --reps 20 --out $OUT/link.json 2>&1 | tee $OUT/link.txt
