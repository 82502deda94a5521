//! `libSyncoChunkPlugin.so`: the `chunk` dialect and every Synco pass and
//! pipeline, for an MLIR driver built against the same MLIR (Debian's
//! `mlir-opt` 22, or another compiler that embeds the dialect):
//!
//! ```sh
//! mlir-opt --load-dialect-plugin=libSyncoChunkPlugin.so \
//!          --load-pass-plugin=libSyncoChunkPlugin.so \
//!          --allow-unregistered-dialect \
//!          --pass-pipeline='builtin.module(synco-fuse)' fused.mlir
//! ```
//!
//! The plugin links MLIR dynamically, so the driver's `libMLIR.so` (its
//! registries and contexts) is the one the passes use.

#![allow(non_snake_case)]

use std::ffi::{c_char, c_void};

/// `MLIR_PLUGIN_API_VERSION` of `mlir/Tools/Plugins/*Plugin.h` (MLIR 22).
const PLUGIN_API_VERSION: u32 = 1;
const NAME: &[u8] = b"SyncoChunk\0";
const VERSION: &[u8] = concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes();

/// `mlir::DialectPluginLibraryInfo`.
#[repr(C)]
pub struct DialectPluginLibraryInfo {
    api_version: u32,
    plugin_name: *const c_char,
    plugin_version: *const c_char,
    register_dialect_registry_callbacks: extern "C" fn(registry: *mut c_void),
}

/// `mlir::PassPluginLibraryInfo`.
#[repr(C)]
pub struct PassPluginLibraryInfo {
    api_version: u32,
    plugin_name: *const c_char,
    plugin_version: *const c_char,
    register_pass_registry_callbacks: extern "C" fn(),
}

extern "C" fn insert_chunk_dialect(registry: *mut c_void) {
    let registry = mlir_sys::MlirDialectRegistry { ptr: registry };
    // SAFETY: the driver hands over its live `mlir::DialectRegistry`; the
    // dialect handle is static.
    unsafe {
        mlir_sys::mlirDialectHandleInsertDialect(synco_chunk::dialect_handle().to_raw(), registry)
    }
}

extern "C" fn register_passes() {
    synco_passes::register_synco_passes();
}

/// The dialect plugin's entry point (`--load-dialect-plugin`).
#[unsafe(no_mangle)]
pub extern "C" fn mlirGetDialectPluginInfo() -> DialectPluginLibraryInfo {
    DialectPluginLibraryInfo {
        api_version: PLUGIN_API_VERSION,
        plugin_name: NAME.as_ptr().cast(),
        plugin_version: VERSION.as_ptr().cast(),
        register_dialect_registry_callbacks: insert_chunk_dialect,
    }
}

/// The pass plugin's entry point (`--load-pass-plugin`): every pass
/// declared in `ChunkPasses.td`, with its Rust body, and `synco-fuse`.
#[unsafe(no_mangle)]
pub extern "C" fn mlirGetPassPluginInfo() -> PassPluginLibraryInfo {
    PassPluginLibraryInfo {
        api_version: PLUGIN_API_VERSION,
        plugin_name: NAME.as_ptr().cast(),
        plugin_version: VERSION.as_ptr().cast(),
        register_pass_registry_callbacks: register_passes,
    }
}
