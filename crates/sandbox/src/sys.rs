//! What differs between the systems cogni runs on, in one place: for the
//! code that works on directories held open (here and in
//! `cogni_tools::fs`) on Unix, and a file's identity and change time
//! everywhere.

use cogni_protocol::FileStamp;
use std::io;
use std::path::Path;

#[cfg(unix)]
pub use unix::*;

/// The stamp of `path`, whose `symlink_metadata` is `meta`: its device
/// and inode (a volume's serial number and a file index on Windows) and
/// the time its inode last changed (Unix's ctime, Windows' ChangeTime),
/// read without following a symlink: what tells a file replaced or
/// written behind cogni's back. On Unix it comes from `meta`; on Windows
/// the file is opened (as a reparse point, not followed) and asked.
#[cfg(unix)]
pub fn identity(_path: &Path, meta: &std::fs::Metadata) -> io::Result<FileStamp> {
    use std::os::unix::fs::MetadataExt;
    Ok(FileStamp {
        dev: meta.dev(),
        ino: meta.ino(),
        ctime: (meta.ctime(), meta.ctime_nsec()),
    })
}

/// See the Unix [`identity`].
#[cfg(windows)]
pub fn identity(path: &Path, _meta: &std::fs::Metadata) -> io::Result<FileStamp> {
    windows::identity(path)
}

/// Rename `from` to `to`, both in one directory, unless `to` exists (then
/// an error of kind `AlreadyExists`).
#[cfg(windows)]
pub fn rename_noreplace_path(from: &Path, to: &Path) -> io::Result<()> {
    windows::rename_noreplace(from, to)
}

/// `path` made absolute with every symlink resolved, as
/// [`std::fs::canonicalize`], but in the form people and other programs
/// use: on Windows without the `\\?\` prefix when the path needs none
/// (`C:\\src\\app`, `\\\\server\\share\\app`).
pub fn canonicalize(path: &Path) -> io::Result<std::path::PathBuf> {
    let real = std::fs::canonicalize(path)?;
    #[cfg(windows)]
    let real = match real.to_str().and_then(unverbatim) {
        Some(plain) => std::path::PathBuf::from(plain),
        None => real,
    };
    Ok(real)
}

/// A Windows path without its verbatim prefix, when it has a drive letter
/// or is a UNC path and means the same without it: `\\?\C:\x` ->
/// `C:\x`, `\\?\UNC\s\x` -> `\\s\x`. None when it has no such prefix or
/// needs it (a reserved device name, a trailing dot or space, 260
/// characters or more).
#[cfg(any(windows, test))]
fn unverbatim(text: &str) -> Option<String> {
    let plain = if let Some(rest) = text.strip_prefix(r"\\?\UNC\") {
        format!(r"\\{rest}")
    } else {
        let rest = text.strip_prefix(r"\\?\")?;
        let drive = rest.as_bytes();
        if !(drive.len() >= 3 && drive[0].is_ascii_alphabetic() && &drive[1..3] == b":\\") {
            return None;
        }
        rest.to_string()
    };
    let reserved = |part: &str| {
        let stem = part.split('.').next().unwrap_or("").trim_end();
        let stem = stem.to_ascii_uppercase();
        ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"].contains(&stem.as_str())
            || ((stem.starts_with("COM") || stem.starts_with("LPT"))
                && stem.len() == 4
                && stem.as_bytes()[3].is_ascii_digit())
    };
    let needs_prefix = plain
        .split('\\')
        .skip(1)
        .any(|part| reserved(part) || part.ends_with('.') || part.ends_with(' '));
    (!needs_prefix && plain.len() < 260).then_some(plain)
}

#[cfg(unix)]
mod unix {
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
        // The system call itself: Debian's musl 1.2.3, which the static
        // build links (scripts/build_musl.sh), has no renameat2() wrapper;
        // glibc's makes this same call.
        // SAFETY: both names are valid C strings and `fd` is an open
        // directory for the duration of the call.
        #[cfg(target_os = "linux")]
        let r = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                fd,
                from.as_ptr(),
                fd,
                to.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        // SAFETY: as above.
        #[cfg(target_os = "macos")]
        let r =
            unsafe { libc::renameatx_np(fd, from.as_ptr(), fd, to.as_ptr(), libc::RENAME_EXCL) };
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
}

#[cfg(windows)]
mod windows {
    use cogni_protocol::FileStamp;
    use std::ffi::OsStr;
    use std::io;
    use std::os::windows::ffi::OsStrExt;
    use std::os::windows::fs::OpenOptionsExt;
    use std::os::windows::io::AsRawHandle;
    use std::path::Path;
    use windows_sys::Win32::Storage::FileSystem as fs;

    /// 100-nanosecond ticks between 1601-01-01 (Windows' epoch) and
    /// 1970-01-01.
    const EPOCH_DIFFERENCE: i64 = 116_444_736_000_000_000;

    pub fn identity(path: &Path) -> io::Result<FileStamp> {
        let file = std::fs::OpenOptions::new()
            .access_mode(0)
            .custom_flags(fs::FILE_FLAG_BACKUP_SEMANTICS | fs::FILE_FLAG_OPEN_REPARSE_POINT)
            .open(path)?;
        let handle = file.as_raw_handle();
        // SAFETY: `handle` is open for the duration of both calls and each
        // buffer is the size the call is told.
        let (by_handle, basic) = unsafe {
            let mut by_handle: fs::BY_HANDLE_FILE_INFORMATION = std::mem::zeroed();
            if fs::GetFileInformationByHandle(handle, &mut by_handle) == 0 {
                return Err(io::Error::last_os_error());
            }
            let mut basic: fs::FILE_BASIC_INFO = std::mem::zeroed();
            if fs::GetFileInformationByHandleEx(
                handle,
                fs::FileBasicInfo,
                (&mut basic as *mut fs::FILE_BASIC_INFO).cast(),
                std::mem::size_of::<fs::FILE_BASIC_INFO>() as u32,
            ) == 0
            {
                return Err(io::Error::last_os_error());
            }
            (by_handle, basic)
        };
        let since_epoch = basic.ChangeTime - EPOCH_DIFFERENCE;
        Ok(FileStamp {
            dev: u64::from(by_handle.dwVolumeSerialNumber),
            ino: (u64::from(by_handle.nFileIndexHigh) << 32) | u64::from(by_handle.nFileIndexLow),
            ctime: (
                since_epoch.div_euclid(10_000_000),
                since_epoch.rem_euclid(10_000_000) * 100,
            ),
        })
    }

    fn wide(s: &OsStr) -> Vec<u16> {
        s.encode_wide().chain(Some(0)).collect()
    }

    pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
        let (from, to) = (wide(from.as_os_str()), wide(to.as_os_str()));
        // SAFETY: both are NUL-terminated wide strings that outlive the
        // call. Without MOVEFILE_REPLACE_EXISTING an existing `to` fails.
        if unsafe { fs::MoveFileExW(from.as_ptr(), to.as_ptr(), 0) } == 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::unverbatim;

    #[test]
    fn verbatim_prefixes_go_where_the_path_means_the_same_without() {
        assert_eq!(
            unverbatim(r"\\?\C:\src\app").as_deref(),
            Some(r"C:\src\app")
        );
        assert_eq!(
            unverbatim(r"\\?\UNC\server\share\x").as_deref(),
            Some(r"\\server\share\x")
        );
        assert_eq!(unverbatim(r"C:\src"), None, "no prefix");
        assert_eq!(unverbatim(r"\\?\Volume{1234}\x"), None, "no drive");
        assert_eq!(unverbatim(r"\\?\C:\src\nul.txt"), None, "a device name");
        assert_eq!(unverbatim(r"\\?\C:\src\COM1"), None, "a device name");
        assert_eq!(unverbatim(r"\\?\C:\src\dots."), None, "a trailing dot");
        let long = format!(r"\\?\C:\{}", "a".repeat(300));
        assert_eq!(unverbatim(&long), None, "too long without the prefix");
    }
}
