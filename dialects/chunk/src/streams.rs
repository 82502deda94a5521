//! What Synco's command-line tools check about their streams before MLIR
//! reads or writes them, and the large stack they parse on.
//!
//! MLIR reads a closed stdin, or a file that cannot be read such as
//! `/proc/self/mem`, as an empty module, and Rust's stdout drops what is
//! written to a closed descriptor: each would exit 0 with nothing done.
//! MLIR's parser recurses once per nesting level, so thousands of nested
//! regions overflow a thread's default stack; the tools run on
//! [`PARSE_STACK_BYTES`] instead.

use std::io::Read;
use std::path::Path;

/// The stack the tools parse and run passes on: deep enough for nesting
/// far beyond any real kernel (about a hundred thousand levels).
pub const PARSE_STACK_BYTES: usize = 1 << 30;

/// Whether file descriptor `fd` is open.
fn is_open(fd: i32) -> bool {
    // SAFETY: F_GETFD only reads the descriptor's flags.
    unsafe { libc::fcntl(fd, libc::F_GETFD) != -1 }
}

/// Refuses to read the module from stdin when stdin is closed.
pub fn check_stdin() -> Result<(), String> {
    if is_open(0) {
        Ok(())
    } else {
        Err("stdin is closed: give an input file, or pipe the module in".into())
    }
}

/// Refuses to write to stdout when stdout is closed.
pub fn check_stdout() -> Result<(), String> {
    if is_open(1) {
        Ok(())
    } else {
        Err("stdout is closed: give -o FILE, or let the output go somewhere".into())
    }
}

/// Refuses an input file that cannot be read (a directory, `/proc/self/mem`,
/// a file without permission): reading one byte must work, or the file must
/// be empty.
pub fn check_readable(path: &Path) -> Result<(), String> {
    let mut probe = [0u8; 1];
    std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut probe))
        .map(|_| ())
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Defines the binary's entry point as `run() -> i32`'s exit code. The C
/// runtime calls it directly (the crate says `#![cfg_attr(not(test),
/// no_main)]`): Rust's start-up would reopen a closed stdin or stdout on
/// /dev/null before [`check_stdin`] and [`check_stdout`] could see it.
/// Test builds keep Rust's own start-up, with libtest's main.
#[macro_export]
macro_rules! c_main {
    ($run:path) => {
        #[cfg(not(test))]
        #[unsafe(no_mangle)]
        extern "C" fn main(_argc: i32, _argv: *const *const ::std::ffi::c_char) -> i32 {
            $run()
        }

        #[cfg(test)]
        #[allow(dead_code)]
        fn main() {
            ::std::process::exit($run());
        }
    };
}

/// Runs `body` on a thread with [`PARSE_STACK_BYTES`] of stack and returns
/// its result (or `on_panic` if it panicked).
pub fn with_large_stack<T: Send + 'static>(
    body: impl FnOnce() -> T + Send + 'static,
    on_panic: T,
) -> T {
    std::thread::Builder::new()
        .name("synco-main".into())
        .stack_size(PARSE_STACK_BYTES)
        .spawn(body)
        .ok()
        .and_then(|handle| handle.join().ok())
        .unwrap_or(on_panic)
}
