//! What differs between the Unix systems cogni runs on, in one place, for
//! the code that works on directories held open (here and in
//! `cogni_tools::fs`).

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// The access flag of a directory held open only as a place to look up
/// names in: `O_PATH` on Linux (no read permission needed, nothing
/// read); elsewhere `O_RDONLY` (macOS has no `O_PATH`).
#[cfg(target_os = "linux")]
pub const DIR_HANDLE: libc::c_int = libc::O_PATH;
/// The access flag of a directory held open only as a place to look up
/// names in: `O_PATH` on Linux (no read permission needed, nothing
/// read); elsewhere `O_RDONLY` (macOS has no `O_PATH`).
#[cfg(not(target_os = "linux"))]
pub const DIR_HANDLE: libc::c_int = libc::O_RDONLY;

/// Rename `from` in `dir` to `to` in the same directory unless `to`
/// exists (then `EEXIST`): `renameat2(RENAME_NOREPLACE)` on Linux,
/// `renameatx_np(RENAME_EXCL)` on macOS.
pub fn rename_noreplace(dir: BorrowedFd<'_>, from: &CStr, to: &CStr) -> io::Result<()> {
    let fd = dir.as_raw_fd();
    // SAFETY: both names are valid C strings and `fd` is an open
    // directory for the duration of the call.
    #[cfg(target_os = "linux")]
    let r = unsafe { libc::renameat2(fd, from.as_ptr(), fd, to.as_ptr(), libc::RENAME_NOREPLACE) };
    // SAFETY: as above.
    #[cfg(target_os = "macos")]
    let r = unsafe { libc::renameatx_np(fd, from.as_ptr(), fd, to.as_ptr(), libc::RENAME_EXCL) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The permission bits of `st` (`mode_t` is 16 bits on macOS, 32 on
/// Linux, where the conversion does nothing).
#[allow(clippy::useless_conversion)]
pub fn permission_bits(st: &libc::stat) -> u32 {
    u32::from(st.st_mode) & 0o7777
}
