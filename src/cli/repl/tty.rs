//! What differs between terminals: saving and setting the keyboard's mode,
//! waiting for and reading one byte, the width, and writing straight to
//! stdout. termios and `poll` on Unix; the console's modes, with virtual
//! terminal input and output (so keys arrive as the same escape sequences
//! and ANSI styles show), and a wait on the input handle on Windows.

/// How the keyboard is read while cogni reads keys itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keys {
    /// One key at a time, unechoed; Ctrl-C stays a signal. Reads do not
    /// wait (the watch of a running turn polls first).
    Watch,
    /// One key at a time, unechoed, Ctrl-C a key; reads wait for a key.
    All,
}

#[cfg(unix)]
mod imp {
    use super::Keys;
    use std::time::Duration;

    /// The keyboard's settings.
    pub(crate) type Mode = libc::termios;

    pub(crate) fn get() -> Option<Mode> {
        // SAFETY: tcgetattr fills a termios we own.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        (unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut t) } == 0).then_some(t)
    }

    pub(crate) fn set(t: &Mode) {
        // SAFETY: tcsetattr reads a termios we own.
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, t) };
    }

    pub(crate) fn keys(mut mode: Mode, keys: Keys) -> Mode {
        mode.c_lflag &= !(libc::ICANON | libc::ECHO);
        match keys {
            Keys::Watch => mode.c_cc[libc::VMIN] = 0,
            Keys::All => {
                mode.c_lflag &= !libc::ISIG;
                mode.c_cc[libc::VMIN] = 1;
            }
        }
        mode.c_cc[libc::VTIME] = 0;
        mode
    }

    /// Whether stdin has a byte within `wait`.
    pub(crate) fn readable(wait: Duration) -> bool {
        let mut fd = libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: polls one pollfd we own.
        let n = unsafe { libc::poll(&mut fd, 1, wait.as_millis() as libc::c_int) };
        n > 0 && fd.revents & (libc::POLLIN | libc::POLLHUP) != 0
    }

    pub(crate) fn read_byte() -> Option<u8> {
        let mut byte = 0u8;
        // SAFETY: reads one byte into a local.
        let n = unsafe { libc::read(libc::STDIN_FILENO, (&mut byte as *mut u8).cast(), 1) };
        (n == 1).then_some(byte)
    }

    /// Columns of the terminal on stdout (`err`: stderr), if it is one.
    pub(crate) fn columns(err: bool) -> Option<usize> {
        let fd = if err {
            libc::STDERR_FILENO
        } else {
            libc::STDOUT_FILENO
        };
        // SAFETY: TIOCGWINSZ fills a winsize we own.
        let mut size: libc::winsize = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) };
        (rc == 0 && size.ws_col > 0).then_some(usize::from(size.ws_col))
    }

    /// Write `bytes` straight to stdout's descriptor (also from the panic
    /// hook, whatever holds stdout's lock).
    pub(crate) fn write_stdout(bytes: &[u8]) {
        // SAFETY: writes bytes we own to stdout.
        unsafe { libc::write(libc::STDOUT_FILENO, bytes.as_ptr().cast(), bytes.len()) };
    }

    /// Nothing to turn on: terminals take escape sequences as they are.
    pub(crate) fn enable_sequences() {}
}

#[cfg(windows)]
mod imp {
    use super::Keys;
    use std::time::Duration;
    use windows_sys::Win32::Foundation::{HANDLE, WAIT_OBJECT_0};
    use windows_sys::Win32::Storage::FileSystem::{ReadFile, WriteFile};
    use windows_sys::Win32::System::Console as con;
    use windows_sys::Win32::System::Threading::WaitForSingleObject;

    /// The input console's mode.
    pub(crate) type Mode = con::CONSOLE_MODE;

    fn handle(which: con::STD_HANDLE) -> HANDLE {
        // SAFETY: GetStdHandle has no preconditions.
        unsafe { con::GetStdHandle(which) }
    }

    pub(crate) fn get() -> Option<Mode> {
        let mut mode = 0;
        // SAFETY: fills a mode we own; fails when stdin is no console.
        (unsafe { con::GetConsoleMode(handle(con::STD_INPUT_HANDLE), &mut mode) } != 0)
            .then_some(mode)
    }

    pub(crate) fn set(mode: &Mode) {
        // SAFETY: sets the mode of our own stdin.
        unsafe { con::SetConsoleMode(handle(con::STD_INPUT_HANDLE), *mode) };
    }

    pub(crate) fn keys(mode: Mode, keys: Keys) -> Mode {
        let mut mode = (mode & !(con::ENABLE_LINE_INPUT | con::ENABLE_ECHO_INPUT))
            | con::ENABLE_VIRTUAL_TERMINAL_INPUT;
        if keys == Keys::All {
            mode &= !con::ENABLE_PROCESSED_INPUT;
        }
        mode
    }

    pub(crate) fn readable(wait: Duration) -> bool {
        let ms = u32::try_from(wait.as_millis()).unwrap_or(u32::MAX);
        // SAFETY: waits on our own stdin handle.
        unsafe { WaitForSingleObject(handle(con::STD_INPUT_HANDLE), ms) == WAIT_OBJECT_0 }
    }

    pub(crate) fn read_byte() -> Option<u8> {
        let (mut byte, mut read) = (0u8, 0u32);
        // SAFETY: reads one byte into a local.
        let ok = unsafe {
            ReadFile(
                handle(con::STD_INPUT_HANDLE),
                &mut byte,
                1,
                &mut read,
                std::ptr::null_mut(),
            )
        };
        (ok != 0 && read == 1).then_some(byte)
    }

    /// Columns of the console on stdout (`err`: stderr), if it is one.
    pub(crate) fn columns(err: bool) -> Option<usize> {
        let which = if err {
            con::STD_ERROR_HANDLE
        } else {
            con::STD_OUTPUT_HANDLE
        };
        // SAFETY: fills a buffer info we own.
        let info = unsafe {
            let mut info: con::CONSOLE_SCREEN_BUFFER_INFO = std::mem::zeroed();
            (con::GetConsoleScreenBufferInfo(handle(which), &mut info) != 0).then_some(info)
        }?;
        let cols = i32::from(info.srWindow.Right) - i32::from(info.srWindow.Left) + 1;
        usize::try_from(cols).ok().filter(|&c| c > 0)
    }

    pub(crate) fn write_stdout(bytes: &[u8]) {
        let mut written = 0;
        // SAFETY: writes bytes we own to our stdout.
        unsafe {
            WriteFile(
                handle(con::STD_OUTPUT_HANDLE),
                bytes.as_ptr(),
                bytes.len() as u32,
                &mut written,
                std::ptr::null_mut(),
            )
        };
    }

    /// Let the console interpret ANSI escape sequences on stdout and
    /// stderr (Windows 10 and later; older consoles show them raw).
    pub(crate) fn enable_sequences() {
        for which in [con::STD_OUTPUT_HANDLE, con::STD_ERROR_HANDLE] {
            let out = handle(which);
            let mut mode = 0;
            // SAFETY: reads and sets the mode of our own handles.
            unsafe {
                if con::GetConsoleMode(out, &mut mode) != 0 {
                    con::SetConsoleMode(out, mode | con::ENABLE_VIRTUAL_TERMINAL_PROCESSING);
                }
            }
        }
    }
}

pub(crate) use imp::{
    columns, enable_sequences, get, keys, read_byte, readable, set, write_stdout, Mode,
};
