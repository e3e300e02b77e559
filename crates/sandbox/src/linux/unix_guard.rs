//! The Unix-socket guard: with the network off, a sandboxed command may
//! reach only the pathname Unix sockets under its writable roots.
//!
//! Landlock does not mediate `connect()` to a pathname socket (before the
//! `RESOLVE_UNIX` right of Linux 7.1), and the network filter has to allow
//! `AF_UNIX` (pipes, socketpairs and test servers in the workspace need
//! it), so without this a command could talk to the Docker socket, a D-Bus
//! session bus or an ssh-agent.
//!
//! How: the namespace's init installs a seccomp filter that turns
//! `connect`, `sendmsg`, `sendmmsg` and `sendto` with an address into user
//! notifications, and hands the listener to P, the supervisor outside the
//! PID namespace and outside the command's Landlock domain
//! (`pidfd_getfd`). For each notification P reads the address from the
//! caller's memory and
//!
//! - `connect` and `sendto`: opens the named path itself (`O_PATH`,
//!   following symlinks as `connect` would), checks that the socket it
//!   found lies under a writable root, and performs the call on the
//!   caller's own socket (`pidfd_getfd`) with the address
//!   `/proc/self/fd/N` of the inode it checked. The caller's memory is
//!   read once and the checked inode is the one used, so neither a second
//!   thread rewriting the address nor a symlink swapped in between can
//!   redirect the call. Abstract addresses go through as given: P itself
//!   is in a Landlock domain that scopes abstract sockets (ABI 6+), so only
//!   those created inside the sandbox are reachable; without that scope
//!   they are refused.
//! - `sendmsg` and `sendmmsg`: checks every destination address the same
//!   way and lets the call continue in the caller. This one can race: a
//!   second thread may change the address between the check and the
//!   kernel's copy of it. Only datagram sockets take a destination address
//!   (stream and seqpacket sockets refuse or ignore one), so what the race
//!   can reach is a datagram socket outside (syslog, journald), never a
//!   connection to a stream service.
//!
//! Calls that would block (a blocking socket whose peer's queue is full)
//! run in a short-lived worker forked from P, so one blocked caller never
//! stalls the others. Everything here runs in forked processes of a
//! multithreaded parent: system calls on stack memory only (the data of a
//! `sendto` goes through an `mmap`ed buffer).

use super::forked::{
    block_for_signalfd, drain_signals, format_path, last_errno, recv_i32, send_i32,
};
use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, OwnedFd};

/// What P needs, prepared before the fork.
#[derive(Debug)]
pub(super) struct Guard {
    /// The seccomp program the namespace's init installs.
    filter: Vec<libc::sock_filter>,
    /// Canonical writable roots: sockets under them are reachable.
    roots: Vec<CString>,
    /// A Landlock ruleset that only scopes abstract sockets, entered by P
    /// so the calls it makes for the command cannot reach abstract sockets
    /// outside the sandbox; `None` when the kernel has no scopes.
    abstract_scope: Option<OwnedFd>,
}

/// `struct sockaddr_un`: family + 108 bytes of path.
const SOCKADDR_UN_LEN: usize = size_of::<libc::sockaddr_un>();
/// `struct msghdr` and `struct mmsghdr` on 64-bit Linux.
const MSGHDR_LEN: usize = 56;
const MMSGHDR_LEN: usize = 64;
/// The kernel's cap on `sendmmsg`'s vector (UIO_MAXIOV).
const MAX_MMSG: u64 = 1024;
/// Largest `sendto` payload copied on the caller's behalf; more fails with
/// EMSGSIZE (a Unix datagram cannot be larger than the send buffer anyway).
const MAX_SENDTO: usize = 8 << 20;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

impl Guard {
    pub(super) fn new(roots: &[std::path::PathBuf], abstract_scope: Option<OwnedFd>) -> Self {
        use std::os::unix::ffi::OsStrExt;
        Guard {
            filter: program(),
            roots: roots
                .iter()
                .filter_map(|r| CString::new(r.as_os_str().as_bytes()).ok())
                .collect(),
            abstract_scope,
        }
    }

    /// P, before forking the namespace's init: enter the abstract-socket
    /// scope, so the init and the command nest inside P's domain (P may
    /// then still read their memory and take their descriptors).
    ///
    /// # Safety
    /// Async-signal-safe; for use after fork.
    pub(super) unsafe fn enter_scope(&self) -> io::Result<()> {
        if let Some(ruleset) = &self.abstract_scope {
            if libc::syscall(
                libc::SYS_landlock_restrict_self,
                ruleset.as_raw_fd(),
                0 as libc::c_uint,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// The namespace's init: install the filter and hand its listener to P
    /// through `handoff` (I → P), waiting for P's answer on `ack` (P → I).
    /// The init is briefly dumpable so P may take the descriptor; nothing
    /// else runs in the sandbox yet.
    ///
    /// # Safety
    /// Async-signal-safe; for use after fork, with no-new-privs set.
    pub(super) unsafe fn install(&self, handoff: libc::c_int, ack: libc::c_int) -> io::Result<()> {
        let prog = libc::sock_fprog {
            len: self.filter.len() as libc::c_ushort,
            filter: self.filter.as_ptr().cast_mut(),
        };
        let listener = libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &prog as *const libc::sock_fprog,
        ) as libc::c_int;
        if listener < 0 {
            let errno = last_errno();
            send_i32(handoff, -errno);
            return Err(io::Error::from_raw_os_error(errno));
        }
        libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        let sent = send_i32(handoff, listener);
        let answer = if sent { recv_i32(ack) } else { None };
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        libc::close(listener);
        match answer {
            Some(0) => Ok(()),
            Some(errno) => Err(io::Error::from_raw_os_error(errno)),
            None => Err(io::Error::from_raw_os_error(libc::EPIPE)),
        }
    }

    /// P: take the listener from the init `init` (its number comes through
    /// `handoff`) and answer on `ack`. Without the listener the command
    /// does not run (the init fails).
    ///
    /// # Safety
    /// Async-signal-safe; for use after fork.
    pub(super) unsafe fn receive(
        &self,
        init: libc::pid_t,
        handoff: libc::c_int,
        ack: libc::c_int,
    ) -> Option<libc::c_int> {
        let number = recv_i32(handoff).filter(|&n| n >= 0)?;
        let pidfd = libc::syscall(libc::SYS_pidfd_open, init, 0 as libc::c_uint) as libc::c_int;
        let listener = if pidfd >= 0 {
            let fd = libc::syscall(libc::SYS_pidfd_getfd, pidfd, number, 0 as libc::c_uint)
                as libc::c_int;
            let errno = last_errno();
            libc::close(pidfd);
            if fd < 0 {
                Err(errno)
            } else {
                Ok(fd)
            }
        } else {
            Err(last_errno())
        };
        send_i32(ack, *listener.as_ref().err().unwrap_or(&0));
        listener.ok()
    }

    /// P: answer notifications on `listener` until `init` exits; its wait
    /// status, or `None` if waiting failed.
    ///
    /// # Safety
    /// Async-signal-safe; for use after fork, in P.
    pub(super) unsafe fn serve(&self, listener: libc::c_int, init: libc::pid_t) -> Option<i32> {
        // Workers forked for blocking calls are P's children in the
        // command's PID namespace: one left a zombie keeps the init's exit
        // (it waits for every process of the namespace to be gone) from
        // ever finishing, so each worker is reaped as soon as it exits.
        let init_fd = libc::syscall(libc::SYS_pidfd_open, init, 0 as libc::c_uint) as libc::c_int;
        let children = block_for_signalfd(&[libc::SIGCHLD]);
        let children = match (init_fd, children) {
            (0.., Ok(children)) => children,
            _ => {
                // Cannot watch the init or the workers: stop serving (the
                // command's filtered calls then fail with ENOSYS) and just
                // wait.
                if init_fd >= 0 {
                    libc::close(init_fd);
                }
                libc::close(listener);
                return super::forked::wait_for(init);
            }
        };
        let watch = |fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let mut fds = [watch(listener), watch(init_fd), watch(children.as_raw_fd())];
        loop {
            if let Some(status) = reap(init) {
                return Some(status);
            }
            if libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) < 0 {
                if last_errno() == libc::EINTR {
                    continue;
                }
                return super::forked::wait_for(init);
            }
            if fds[2].revents != 0 {
                drain_signals(&children, libc::SIGCHLD);
            }
            if fds[0].revents & libc::POLLIN != 0 {
                self.handle(listener);
            } else if fds[0].revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
                // No filtered process is left.
                fds[0].fd = -1;
            }
        }
    }

    unsafe fn handle(&self, listener: libc::c_int) {
        let mut notif: libc::seccomp_notif = zeroed();
        if libc::ioctl(
            listener,
            libc::SECCOMP_IOCTL_NOTIF_RECV as _,
            &mut notif as *mut libc::seccomp_notif,
        ) != 0
        {
            // The caller went away (ENOENT) or an interrupted receive.
            return;
        }
        let call = Call {
            listener,
            id: notif.id,
            pid: notif.pid,
            args: notif.data.args,
        };
        let nr = i64::from(notif.data.nr);
        let reply = if nr == libc::SYS_connect {
            self.connect(&call)
        } else if nr == libc::SYS_sendto {
            self.sendto(&call)
        } else if nr == libc::SYS_sendmsg {
            self.check_msghdrs(&call, call.args[1], 1, MSGHDR_LEN as u64)
        } else if nr == libc::SYS_sendmmsg {
            self.check_msghdrs(
                &call,
                call.args[1],
                call.args[2].min(MAX_MMSG),
                MMSGHDR_LEN as u64,
            )
        } else {
            Reply::Error(libc::ENOSYS)
        };
        call.respond(reply);
    }

    /// `connect(fd, addr, len)`, made by P on the caller's socket.
    unsafe fn connect(&self, call: &Call) -> Reply {
        let mut raw = [0u8; SOCKADDR_UN_LEN];
        let addr = match call.read_sockaddr(call.args[1], call.args[2], &mut raw) {
            Ok(addr) => addr,
            Err(errno) => return Reply::Error(errno),
        };
        let dest = match self.destination(call, addr) {
            Ok(dest) => dest,
            Err(errno) => return Reply::Error(errno),
        };
        let socket = match call.take_fd(call.args[0]) {
            Ok(fd) => fd,
            Err(errno) => return Reply::Error(errno),
        };
        let blocking = is_blocking(socket.0, 0);
        on_behalf(call, blocking, || {
            let (ptr, len) = dest.sockaddr();
            if libc::connect(socket.0, ptr, len) == 0 {
                Reply::Value(0)
            } else {
                Reply::Error(last_errno())
            }
        })
    }

    /// `sendto(fd, buf, len, flags, addr, addrlen)` with an address, made
    /// by P on the caller's socket with a copy of the data.
    unsafe fn sendto(&self, call: &Call) -> Reply {
        let [fd, buf, len, flags, addr, addr_len] = call.args;
        let mut raw = [0u8; SOCKADDR_UN_LEN];
        let addr = match call.read_sockaddr(addr, addr_len, &mut raw) {
            Ok(addr) => addr,
            Err(errno) => return Reply::Error(errno),
        };
        let dest = match self.destination(call, addr) {
            Ok(dest) => dest,
            Err(errno) => return Reply::Error(errno),
        };
        let len = len as usize;
        if len > MAX_SENDTO {
            return Reply::Error(libc::EMSGSIZE);
        }
        let mut data = match Mapping::new(len) {
            Some(data) => data,
            None => return Reply::Error(libc::ENOMEM),
        };
        if !call.read(buf, data.bytes()) {
            return Reply::Error(libc::EFAULT);
        }
        let socket = match call.take_fd(fd) {
            Ok(fd) => fd,
            Err(errno) => return Reply::Error(errno),
        };
        let flags = flags as libc::c_int;
        let blocking = is_blocking(socket.0, flags);
        on_behalf(call, blocking, || {
            let (ptr, addr_len) = dest.sockaddr();
            let sent = libc::sendto(
                socket.0,
                data.ptr.cast(),
                len,
                flags | libc::MSG_NOSIGNAL,
                ptr,
                addr_len,
            );
            if sent >= 0 {
                Reply::Value(sent as i64)
            } else {
                Reply::Error(last_errno())
            }
        })
    }

    /// `sendmsg` / `sendmmsg`: every destination address is checked, then
    /// the call continues in the caller (see the module's note on the race).
    unsafe fn check_msghdrs(&self, call: &Call, vec: u64, count: u64, stride: u64) -> Reply {
        for i in 0..count {
            let mut hdr = [0u8; MSGHDR_LEN];
            if !call.read(vec.wrapping_add(i * stride), &mut hdr) {
                return Reply::Error(libc::EFAULT);
            }
            let name = u64::from_ne_bytes(hdr[0..8].try_into().unwrap_or_default());
            let name_len = u32::from_ne_bytes(hdr[8..12].try_into().unwrap_or_default());
            if name == 0 || name_len == 0 {
                continue;
            }
            let mut raw = [0u8; SOCKADDR_UN_LEN];
            let len = u64::from(name_len).min(SOCKADDR_UN_LEN as u64);
            let addr = match call.read_sockaddr(name, len, &mut raw) {
                Ok(addr) => addr,
                Err(errno) => return Reply::Error(errno),
            };
            if let Err(errno) = self.destination(call, addr) {
                return Reply::Error(errno);
            }
        }
        Reply::Continue
    }

    /// Where a call addressed to `addr` may go: a checked pathname socket
    /// (pinned), the address as given, or refused with an errno.
    unsafe fn destination<'a>(&self, call: &Call, addr: &'a [u8]) -> Result<Dest<'a>, i32> {
        let family = u16::from_ne_bytes([addr[0], addr[1]]);
        let path = &addr[2..];
        if family != libc::AF_UNIX as u16 || path.is_empty() {
            // Not a Unix address: the kernel refuses it on a Unix socket.
            return Ok(Dest::AsGiven(addr));
        }
        if path[0] == 0 {
            return if self.abstract_scope.is_some() {
                Ok(Dest::AsGiven(addr))
            } else {
                Err(libc::EACCES)
            };
        }
        let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
        let mut cpath = [0u8; SOCKADDR_UN_LEN + 1];
        cpath[..end].copy_from_slice(&path[..end]);
        let dir = if path[0] == b'/' {
            Fd(libc::AT_FDCWD)
        } else {
            let mut buf = [0u8; 64];
            let Some(cwd) = format_path(&mut buf, b"/proc/", u64::from(call.pid), b"/cwd") else {
                return Err(libc::ENAMETOOLONG);
            };
            let fd = libc::open(
                cwd.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            );
            if fd < 0 {
                return Err(libc::EACCES);
            }
            Fd(fd)
        };
        let pin = libc::openat(dir.0, cpath.as_ptr().cast(), libc::O_PATH | libc::O_CLOEXEC);
        if pin < 0 {
            return Err(last_errno());
        }
        let pin = Fd(pin);
        let mut st: libc::stat = zeroed();
        if libc::fstat(pin.0, &mut st) != 0 || st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
            return Err(libc::ECONNREFUSED);
        }
        if !self.is_inside(pin.0) {
            return Err(libc::EACCES);
        }
        Ok(Dest::Pinned(PinAddr::new(pin)?))
    }

    /// True when the file open as `fd` lies under a writable root.
    unsafe fn is_inside(&self, fd: libc::c_int) -> bool {
        let mut link = [0u8; 64];
        let Some(link) = format_path(&mut link, b"/proc/self/fd/", fd as u64, b"") else {
            return false;
        };
        let mut real = [0u8; libc::PATH_MAX as usize];
        let n = libc::readlink(link.as_ptr(), real.as_mut_ptr().cast(), real.len());
        if n <= 0 || n as usize >= real.len() {
            return false;
        }
        let real = &real[..n as usize];
        self.roots.iter().any(|root| under(real, root.as_bytes()))
    }
}

/// True when `path` is `root` or below it.
fn under(path: &[u8], root: &[u8]) -> bool {
    let root = if root.len() > 1 {
        root.strip_suffix(b"/").unwrap_or(root)
    } else {
        root
    };
    root == b"/"
        || path == root
        || (path.len() > root.len() && path.starts_with(root) && path[root.len()] == b'/')
}

/// The seccomp program: `connect`, `sendmsg`, `sendmmsg`, and `sendto`
/// with a destination address become user notifications; x32 calls fail
/// (they would bypass the numbers checked here), another architecture's
/// calls kill the process.
fn program() -> Vec<libc::sock_filter> {
    const LD_W_ABS: u32 = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    const JEQ: u32 = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
    const RET: u32 = libc::BPF_RET | libc::BPF_K;
    const NR: u32 = 0;
    const ARCH: u32 = 4;
    const ARG4_LOW: u32 = 16 + 4 * 8;
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let mut p = vec![
        stmt(LD_W_ABS, ARCH),
        jump(JEQ, AUDIT_ARCH, 1, 0),
        stmt(RET, libc::SECCOMP_RET_KILL_PROCESS),
        stmt(LD_W_ABS, NR),
    ];
    #[cfg(target_arch = "x86_64")]
    {
        const JGE: u32 = libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K;
        p.push(jump(JGE, 0x4000_0000, 0, 1));
        p.push(stmt(RET, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32));
    }
    // The tail, with jump offsets counted from each instruction:
    //  0 connect?  -> notify (+8)
    //  1 sendmsg?  -> notify (+7)
    //  2 sendmmsg? -> notify (+6)
    //  3 sendto?   else -> allow (+4)
    //  4 load the low word of the address argument
    //  5 zero?     else -> notify (+3)
    //  6 load the high word
    //  7 zero?     -> allow (+0) else notify (+1)
    //  8 allow
    //  9 notify
    p.extend([
        jump(JEQ, libc::SYS_connect as u32, 8, 0),
        jump(JEQ, libc::SYS_sendmsg as u32, 7, 0),
        jump(JEQ, libc::SYS_sendmmsg as u32, 6, 0),
        jump(JEQ, libc::SYS_sendto as u32, 0, 4),
        stmt(LD_W_ABS, ARG4_LOW),
        jump(JEQ, 0, 0, 3),
        stmt(LD_W_ABS, ARG4_LOW + 4),
        jump(JEQ, 0, 0, 1),
        stmt(RET, libc::SECCOMP_RET_ALLOW),
        stmt(RET, libc::SECCOMP_RET_USER_NOTIF),
    ]);
    p
}

/// Reap whatever has exited among P's children (the init, workers): the
/// init's wait status once it is gone.
unsafe fn reap(init: libc::pid_t) -> Option<i32> {
    let mut found = None;
    loop {
        let mut status = 0;
        let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
        if pid <= 0 {
            return found;
        }
        if pid == init {
            found = Some(status);
        }
    }
}

/// A descriptor P owns, closed when dropped.
struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        if self.0 >= 0 {
            // SAFETY: closing a descriptor this value owns.
            unsafe { libc::close(self.0) };
        }
    }
}

/// `sockaddr_un` naming `/proc/self/fd/N`: the inode P checked, held
/// open while the address is in use.
struct PinAddr {
    _pin: Fd,
    addr: libc::sockaddr_un,
    len: libc::socklen_t,
}

impl PinAddr {
    fn new(pin: Fd) -> Result<Self, i32> {
        // SAFETY: sockaddr_un is plain data.
        let mut addr: libc::sockaddr_un = unsafe { zeroed() };
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let mut buf = [0u8; 108];
        let path = format_path(&mut buf, b"/proc/self/fd/", pin.0 as u64, b"")
            .ok_or(libc::ENAMETOOLONG)?;
        let bytes = path.to_bytes_with_nul();
        for (dst, src) in addr.sun_path.iter_mut().zip(bytes) {
            *dst = *src as libc::c_char;
        }
        Ok(PinAddr {
            _pin: pin,
            addr,
            len: (size_of::<libc::sa_family_t>() + bytes.len()) as libc::socklen_t,
        })
    }
}

enum Dest<'a> {
    /// A pathname socket under a writable root, by its pinned inode.
    Pinned(PinAddr),
    /// An address passed through unchanged (abstract, unnamed, or not Unix).
    AsGiven(&'a [u8]),
}

impl Dest<'_> {
    fn sockaddr(&self) -> (*const libc::sockaddr, libc::socklen_t) {
        match self {
            Dest::Pinned(pin) => ((&pin.addr as *const libc::sockaddr_un).cast(), pin.len),
            Dest::AsGiven(raw) => (raw.as_ptr().cast(), raw.len() as libc::socklen_t),
        }
    }
}

enum Reply {
    /// Let the call run in the caller as it is.
    Continue,
    /// The call's return value.
    Value(i64),
    /// The call fails with this errno.
    Error(i32),
    /// A worker answers.
    Deferred,
}

/// One notification.
struct Call {
    listener: libc::c_int,
    id: u64,
    pid: u32,
    args: [u64; 6],
}

impl Call {
    /// Read `buf.len()` bytes at `addr` in the caller's memory, then check
    /// the notification is still live (the pid was not reused meanwhile).
    unsafe fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
        if buf.is_empty() {
            return self.valid();
        }
        let local = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let remote = libc::iovec {
            iov_base: addr as usize as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let n = libc::process_vm_readv(self.pid as libc::pid_t, &local, 1, &remote, 1, 0);
        n == buf.len() as isize && self.valid()
    }

    unsafe fn valid(&self) -> bool {
        libc::ioctl(
            self.listener,
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID as _,
            &self.id as *const u64,
        ) == 0
    }

    /// Read a socket address of `len` bytes at `addr`.
    unsafe fn read_sockaddr<'b>(
        &self,
        addr: u64,
        len: u64,
        raw: &'b mut [u8; SOCKADDR_UN_LEN],
    ) -> Result<&'b [u8], i32> {
        let len = len as usize;
        if !(2..=SOCKADDR_UN_LEN).contains(&len) {
            return Err(libc::EINVAL);
        }
        if !self.read(addr, &mut raw[..len]) {
            return Err(libc::EFAULT);
        }
        Ok(&raw[..len])
    }

    /// A copy of the caller's descriptor `fd` (the same open socket).
    unsafe fn take_fd(&self, fd: u64) -> Result<Fd, i32> {
        let pidfd = open_pidfd(self.pid)?;
        let copy =
            libc::syscall(libc::SYS_pidfd_getfd, pidfd.0, fd as libc::c_int, 0u32) as libc::c_int;
        if copy < 0 {
            return Err(match last_errno() {
                libc::EBADF => libc::EBADF,
                _ => libc::EACCES,
            });
        }
        if !self.valid() {
            libc::close(copy);
            return Err(libc::ESRCH);
        }
        Ok(Fd(copy))
    }

    unsafe fn respond(&self, reply: Reply) {
        let mut resp: libc::seccomp_notif_resp = zeroed();
        resp.id = self.id;
        match reply {
            Reply::Continue => resp.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
            Reply::Value(v) => resp.val = v,
            Reply::Error(errno) => resp.error = -errno,
            Reply::Deferred => return,
        }
        // ENOENT: the caller was killed meanwhile; nothing to answer.
        libc::ioctl(
            self.listener,
            libc::SECCOMP_IOCTL_NOTIF_SEND as _,
            &mut resp as *mut libc::seccomp_notif_resp,
        );
    }
}

/// A pidfd for the thread `tid`'s process: thread pidfds where the kernel
/// has them (6.9+), else the thread group leader from /proc.
unsafe fn open_pidfd(tid: u32) -> Result<Fd, i32> {
    let fd = libc::syscall(libc::SYS_pidfd_open, tid, 0 as libc::c_uint) as libc::c_int;
    if fd >= 0 {
        return Ok(Fd(fd));
    }
    let fd = libc::syscall(libc::SYS_pidfd_open, tid, libc::PIDFD_THREAD) as libc::c_int;
    if fd >= 0 {
        return Ok(Fd(fd));
    }
    let tgid = thread_group(tid).ok_or(libc::ESRCH)?;
    let fd = libc::syscall(libc::SYS_pidfd_open, tgid, 0 as libc::c_uint) as libc::c_int;
    if fd < 0 {
        return Err(libc::ESRCH);
    }
    Ok(Fd(fd))
}

/// The `Tgid:` of `/proc/<tid>/status`.
unsafe fn thread_group(tid: u32) -> Option<u32> {
    let mut path = [0u8; 64];
    let path = format_path(&mut path, b"/proc/", u64::from(tid), b"/status")?;
    let fd = Fd(libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC));
    if fd.0 < 0 {
        return None;
    }
    let mut buf = [0u8; 2048];
    let n = libc::read(fd.0, buf.as_mut_ptr().cast(), buf.len());
    if n <= 0 {
        return None;
    }
    let text = &buf[..n as usize];
    let key = b"\nTgid:";
    let at = text.windows(key.len()).position(|w| w == key)? + key.len();
    let digits = text[at..]
        .iter()
        .skip_while(|b| b.is_ascii_whitespace())
        .take_while(|b| b.is_ascii_digit());
    let mut n: u32 = 0;
    for d in digits {
        n = n.checked_mul(10)?.checked_add(u32::from(d - b'0'))?;
    }
    (n > 0).then_some(n)
}

/// True when a send or connect on `fd` with `flags` may block.
unsafe fn is_blocking(fd: libc::c_int, flags: libc::c_int) -> bool {
    flags & libc::MSG_DONTWAIT == 0 && libc::fcntl(fd, libc::F_GETFL) & libc::O_NONBLOCK == 0
}

/// Run `op` for the caller: here when it cannot block, else in a worker
/// that answers the notification itself, so P keeps serving the others.
unsafe fn on_behalf(call: &Call, blocking: bool, op: impl FnOnce() -> Reply) -> Reply {
    if !blocking {
        return op();
    }
    match libc::fork() {
        0 => {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            call.respond(op());
            libc::_exit(0)
        }
        // No worker: answer here (a blocked call then delays the others).
        -1 => op(),
        _ => Reply::Deferred,
    }
}

/// An anonymous mapping for a copy of the caller's data (no allocator
/// after fork).
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    unsafe fn new(len: usize) -> Option<Self> {
        if len == 0 {
            return Some(Mapping {
                ptr: std::ptr::NonNull::dangling().as_ptr(),
                len,
            });
        }
        let ptr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        (ptr != libc::MAP_FAILED).then(|| Mapping {
            ptr: ptr.cast(),
            len,
        })
    }

    unsafe fn bytes(&mut self) -> &mut [u8] {
        std::slice::from_raw_parts_mut(self.ptr, self.len)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: unmapping the mapping this value owns.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_contain_their_own_subtrees_only() {
        assert!(under(b"/work/a.sock", b"/work"));
        assert!(under(b"/work", b"/work"));
        assert!(under(b"/work/x/y.sock", b"/work/"));
        assert!(!under(b"/workspace/a.sock", b"/work"));
        assert!(!under(b"/tmp/a.sock", b"/work"));
        assert!(under(b"/anything", b"/"));
    }

    #[test]
    fn the_program_ends_in_allow_and_notify() {
        let p = program();
        let n = p.len();
        assert_eq!(p[n - 2].k, libc::SECCOMP_RET_ALLOW);
        assert_eq!(p[n - 1].k, libc::SECCOMP_RET_USER_NOTIF);
        // Every jump lands inside the program.
        for (i, ins) in p.iter().enumerate() {
            if u32::from(ins.code) & 0x07 == libc::BPF_JMP {
                assert!(i + 1 + usize::from(ins.jt) < n, "{i}");
                assert!(i + 1 + usize::from(ins.jf) < n, "{i}");
            }
        }
    }
}
