//! Everything a command starts, held as one thing to kill: its process
//! group on Unix, a Job Object on Windows.
//!
//! - **Unix**: the child calls `setpgid(0, 0)` before exec (and, on
//!   Linux, asks to be killed when cogni dies); the group is signalled
//!   with `kill(-pgid, ...)`. On Linux the subreaper or the sandbox's PID
//!   namespace also collects what escapes the group (`setsid`).
//! - **Windows**: the child starts suspended, is put in a new Job Object
//!   that kills every process in it when its last handle closes (so when
//!   cogni exits, however it exits), and only then runs: nothing it
//!   starts can escape the job before it is in it. Windows has no
//!   SIGTERM: ending the tree is `TerminateJobObject` at once.

use std::io;
use tokio::process::{Child, Command};

/// What ending a tree means: ask it to stop, or kill it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// SIGTERM on Unix; on Windows the same as [`Signal::Kill`].
    Term,
    /// SIGKILL; `TerminateJobObject` on Windows.
    Kill,
}

#[cfg(unix)]
impl Signal {
    pub(crate) fn number(self) -> i32 {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        }
    }
}

/// A handle that kills a running command's whole tree, for whoever
/// started it in the background (a job table). Killing a tree that
/// already ended does nothing.
#[derive(Debug, Clone)]
pub struct Tree {
    #[cfg(unix)]
    pgid: i32,
    #[cfg(windows)]
    job: std::sync::Arc<windows::Job>,
}

impl Tree {
    /// Kill every process in the tree now.
    pub fn kill(&self) {
        self.signal(Signal::Kill);
    }

    /// Signal every process in the tree (on Windows: end them).
    fn signal(&self, signal: Signal) {
        #[cfg(unix)]
        // SAFETY: kill has no memory-safety preconditions. ESRCH (group
        // already gone) is expected and ignored.
        unsafe {
            libc::kill(-self.pgid, signal.number());
        }
        #[cfg(windows)]
        {
            let _ = signal;
            self.job.terminate();
        }
    }
}

/// The tree of cogni's own child; kills it when dropped while armed, which
/// is what makes dropping a run's future a cancellation.
#[derive(Debug)]
pub(crate) struct Group {
    tree: Tree,
    armed: bool,
}

impl Group {
    /// The tree of `child`, just spawned by a command [`isolate`]d.
    pub(crate) fn attach(child: &Child) -> io::Result<Group> {
        let pid = child
            .id()
            .ok_or_else(|| io::Error::other("the process ended before it was supervised"))?;
        #[cfg(unix)]
        let tree = Tree {
            // The child called setpgid(0, 0): its group id is its pid.
            pgid: pid as i32,
        };
        #[cfg(windows)]
        let tree = Tree {
            job: std::sync::Arc::new(windows::Job::take(child, pid)?),
        };
        Ok(Group { tree, armed: true })
    }

    /// A handle to kill the tree from elsewhere.
    pub(crate) fn tree(&self) -> Tree {
        self.tree.clone()
    }

    /// Signal every process in the tree.
    pub(crate) fn signal(&self, signal: Signal) {
        self.tree.signal(signal);
    }

    /// The run ended normally: nothing to kill when it is dropped (on
    /// Windows the job still ends what is left when its handle closes).
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.armed {
            self.signal(Signal::Kill);
        }
    }
}

/// Make `cmd` start its own tree: on Unix its own process group and, on
/// Linux, death with the thread that spawned it (tokio spawns from runtime
/// worker threads, which live as long as the runtime); on Windows a
/// suspended start (the job takes it before it runs) without a console
/// window.
pub(crate) fn isolate(cmd: &mut Command) {
    #[cfg(unix)]
    {
        #[cfg(target_os = "linux")]
        let parent = std::process::id();
        // SAFETY: the closure runs between fork and exec and only calls
        // async-signal-safe functions (setpgid, prctl, getppid) without
        // allocating.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setpgid(0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                #[cfg(target_os = "linux")]
                {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    // The parent may have died before prctl took effect.
                    if libc::getppid() as u32 != parent {
                        return Err(io::Error::from_raw_os_error(libc::ESRCH));
                    }
                }
                Ok(())
            });
        }
    }
    #[cfg(windows)]
    {
        use windows_sys::Win32::System::Threading::{CREATE_NO_WINDOW, CREATE_SUSPENDED};
        cmd.creation_flags(CREATE_SUSPENDED | CREATE_NO_WINDOW);
    }
}

#[cfg(windows)]
mod windows {
    use std::io;
    use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
    use tokio::process::Child;
    use windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE;
    use windows_sys::Win32::System::Diagnostics::ToolHelp as th;
    use windows_sys::Win32::System::JobObjects as jo;
    use windows_sys::Win32::System::Threading as t;

    /// A Job Object that kills its processes when its last handle closes.
    #[derive(Debug)]
    pub(crate) struct Job(OwnedHandle);

    /// The exit code of a process the job ended (`1`, as Windows' own
    /// `taskkill /f` leaves).
    const KILLED: u32 = 1;

    fn check(ok: i32) -> io::Result<()> {
        if ok == 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    fn owned(handle: windows_sys::Win32::Foundation::HANDLE) -> io::Result<OwnedHandle> {
        if handle.is_null() || handle == INVALID_HANDLE_VALUE {
            Err(io::Error::last_os_error())
        } else {
            // SAFETY: a valid handle just returned to us, owned by no one.
            Ok(unsafe { OwnedHandle::from_raw_handle(handle) })
        }
    }

    impl Job {
        /// Put `child` (started suspended, process id `pid`) in a new job,
        /// then let it run. On failure the child is killed.
        pub(crate) fn take(child: &Child, pid: u32) -> io::Result<Job> {
            let taken = Job::new().and_then(|job| {
                let process = child
                    .raw_handle()
                    .ok_or_else(|| io::Error::other("the process has no handle"))?;
                // SAFETY: both handles are open for the call.
                check(unsafe { jo::AssignProcessToJobObject(job.0.as_raw_handle(), process) })?;
                resume(pid)?;
                Ok(job)
            });
            if taken.is_err() {
                if let Some(process) = child.raw_handle() {
                    // SAFETY: the process handle is open.
                    unsafe { t::TerminateProcess(process, KILLED) };
                }
            }
            taken
        }

        fn new() -> io::Result<Job> {
            // SAFETY: no attributes, no name; the result is checked.
            let job = Job(owned(unsafe {
                jo::CreateJobObjectW(std::ptr::null(), std::ptr::null())
            })?);
            // SAFETY: a zeroed JOBOBJECT_EXTENDED_LIMIT_INFORMATION is
            // valid (no limits) and is passed with its size.
            unsafe {
                let mut limits: jo::JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
                limits.BasicLimitInformation.LimitFlags = jo::JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
                check(jo::SetInformationJobObject(
                    job.0.as_raw_handle(),
                    jo::JobObjectExtendedLimitInformation,
                    (&limits as *const jo::JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                    std::mem::size_of::<jo::JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
                ))?;
            }
            Ok(job)
        }

        /// Kill every process in the job; one that already ended is no
        /// error.
        pub(crate) fn terminate(&self) {
            // SAFETY: the job handle is open.
            unsafe { jo::TerminateJobObject(self.0.as_raw_handle(), KILLED) };
        }
    }

    /// Resume the threads of the suspended process `pid` (its one main
    /// thread).
    fn resume(pid: u32) -> io::Result<()> {
        // SAFETY: the snapshot handle is owned below; THREADENTRY32 is
        // plain data given with its size; each thread handle is closed.
        unsafe {
            let snapshot = owned(th::CreateToolhelp32Snapshot(th::TH32CS_SNAPTHREAD, 0))?;
            let mut entry: th::THREADENTRY32 = std::mem::zeroed();
            entry.dwSize = std::mem::size_of::<th::THREADENTRY32>() as u32;
            let mut resumed = 0;
            let mut more = th::Thread32First(snapshot.as_raw_handle(), &mut entry) != 0;
            while more {
                if entry.th32OwnerProcessID == pid {
                    let thread = owned(t::OpenThread(
                        t::THREAD_SUSPEND_RESUME,
                        0,
                        entry.th32ThreadID,
                    ))?;
                    if t::ResumeThread(thread.as_raw_handle()) == u32::MAX {
                        return Err(io::Error::last_os_error());
                    }
                    resumed += 1;
                }
                more = th::Thread32Next(snapshot.as_raw_handle(), &mut entry) != 0;
            }
            if resumed == 0 {
                return Err(io::Error::other("the process has no thread to resume"));
            }
        }
        Ok(())
    }
}
