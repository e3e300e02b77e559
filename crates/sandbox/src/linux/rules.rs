//! The kernel rules, built in the parent: the Landlock ruleset (file
//! system) and the seccomp program (network).

use crate::SandboxError;
use landlock::{
    Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, ABI,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;

/// The oldest Landlock ABI whose write rights cogni requires: V3 is the
/// first that handles truncation, so every way to change a file's content
/// is covered.
pub const REQUIRED_LANDLOCK_ABI: i32 = 3;

/// Character devices every command may write (and read).
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

fn landlock_error(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Landlock(e.to_string())
}

/// Read and execute everywhere; every right under the directories
/// `write_roots` (held open: the pinned workspace) and `temp_dir`; write to
/// a few harmless devices. The write rights of ABI v3 must be handled in
/// full or this fails (nothing is enforced halfway); newer rights (device
/// ioctls) and scopes (signals to processes outside the sandbox, abstract
/// UNIX sockets when the network is off) are added where the kernel has
/// them.
pub(super) fn landlock_ruleset<'a>(
    write_roots: impl IntoIterator<Item = BorrowedFd<'a>>,
    temp_dir: &Path,
    network_off: bool,
) -> Result<OwnedFd, SandboxError> {
    let newest = ABI::V5;
    let scopes = if network_off {
        Scope::AbstractUnixSocket | Scope::Signal
    } else {
        Scope::Signal.into()
    };
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V3))
        .map_err(landlock_error)?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(newest))
        .map_err(landlock_error)?
        .scope(scopes)
        .map_err(landlock_error)?
        .create()
        .map_err(landlock_error)?
        .add_rule(PathBeneath::new(
            path_fd(Path::new("/"))?,
            AccessFs::from_read(newest),
        ))
        .map_err(landlock_error)?;
    for root in write_roots {
        ruleset = ruleset
            .add_rule(PathBeneath::new(root, AccessFs::from_all(newest)))
            .map_err(landlock_error)?;
    }
    ruleset = ruleset
        .add_rule(PathBeneath::new(
            path_fd(temp_dir)?,
            AccessFs::from_all(newest),
        ))
        .map_err(landlock_error)?;
    for device in WRITABLE_DEVICES.iter().map(Path::new) {
        if device.exists() {
            ruleset = ruleset
                .add_rule(PathBeneath::new(
                    path_fd(device)?,
                    AccessFs::from_file(newest),
                ))
                .map_err(landlock_error)?;
        }
    }
    Option::<OwnedFd>::from(ruleset)
        .ok_or_else(|| SandboxError::Landlock("the kernel returned no ruleset".into()))
}

/// A ruleset that only scopes abstract Unix sockets (Landlock ABI 6+),
/// entered by the Unix-socket guard's supervisor; `None` where the kernel
/// has no scopes.
pub(super) fn abstract_scope_ruleset() -> Result<Option<OwnedFd>, SandboxError> {
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .scope(Scope::AbstractUnixSocket)
        .map_err(landlock_error)?
        .create()
        .map_err(landlock_error)?;
    Ok(created.into())
}

fn path_fd(path: &Path) -> Result<PathFd, SandboxError> {
    PathFd::new(path).map_err(|e| SandboxError::Landlock(format!("{}: {e}", path.display())))
}

/// x32 system calls are the x86_64 numbers with this bit set; a filter
/// that only lists the plain numbers would let them through.
#[cfg(target_arch = "x86_64")]
const X32_BIT: i64 = 0x4000_0000;

/// Deny creating sockets other than AF_UNIX (`socket`, `socketpair`) and
/// io_uring (which could open sockets without those calls) with EACCES.
pub(super) fn network_filter() -> Result<BpfProgram, SandboxError> {
    let fail = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(fail)?;
    let not_unix = SeccompRule::new(vec![SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        libc::AF_UNIX as u64,
    )
    .map_err(fail)?])
    .map_err(fail)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (nr, conditional) in [
        (libc::SYS_socket, true),
        (libc::SYS_socketpair, true),
        (libc::SYS_io_uring_setup, false),
        (libc::SYS_io_uring_enter, false),
        (libc::SYS_io_uring_register, false),
    ] {
        let rule = if conditional {
            vec![not_unix.clone()]
        } else {
            Vec::new()
        };
        #[cfg(target_arch = "x86_64")]
        rules.insert(nr | X32_BIT, rule.clone());
        rules.insert(nr, rule);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(fail)?;
    BpfProgram::try_from(filter).map_err(fail)
}
