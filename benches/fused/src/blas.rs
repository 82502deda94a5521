//! cuBLAS, the GEMM baseline and the reference of the checks.

use anyhow::{Result, bail};
use cudarc::{cublas::sys as cublas, driver::sys as cu};

pub(crate) struct Cublas(cublas::cublasHandle_t);

impl Cublas {
    pub(crate) fn new(stream: cu::CUstream) -> Result<Self> {
        let mut h = std::ptr::null_mut();
        unsafe {
            if cublas::cublasCreate_v2(&mut h) != cublas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
                bail!("cublasCreate failed");
            }
            cublas::cublasSetStream_v2(h, stream as _);
        }
        Ok(Cublas(h))
    }

    /// Row-major C[M,N] (fp32 or bf16) = A[M,K] @ B[K,N] (bf16), fp32 math.
    #[allow(clippy::too_many_arguments)] // cuBLAS's own shape
    pub(crate) fn gemm(
        &self,
        a: u64,
        b: u64,
        c: u64,
        m: usize,
        n: usize,
        k: usize,
        c_bf16: bool,
    ) -> Result<()> {
        self.gemm_beta(a, b, c, m, n, k, c_bf16, 0.0)
    }

    /// C = A @ B + beta * C.
    #[allow(clippy::too_many_arguments)] // cuBLAS's own shape
    pub(crate) fn gemm_beta(
        &self,
        a: u64,
        b: u64,
        c: u64,
        m: usize,
        n: usize,
        k: usize,
        c_bf16: bool,
        beta: f32,
    ) -> Result<()> {
        let alpha = 1.0f32;
        let c_type = if c_bf16 {
            cublas::cudaDataType_t::CUDA_R_16BF
        } else {
            cublas::cudaDataType_t::CUDA_R_32F
        };
        // Column-major view: C^T[N,M] = B^T[N,K] @ A^T[K,M].
        let status = unsafe {
            cublas::cublasGemmEx(
                self.0,
                cublas::cublasOperation_t::CUBLAS_OP_N,
                cublas::cublasOperation_t::CUBLAS_OP_N,
                n as i32,
                m as i32,
                k as i32,
                (&alpha as *const f32).cast(),
                b as *const _,
                cublas::cudaDataType_t::CUDA_R_16BF,
                n as i32,
                a as *const _,
                cublas::cudaDataType_t::CUDA_R_16BF,
                k as i32,
                (&beta as *const f32).cast(),
                c as *mut _,
                c_type,
                n as i32,
                cublas::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublas::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        };
        if status != cublas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            bail!("cublasGemmEx failed: {status:?}");
        }
        Ok(())
    }
}
