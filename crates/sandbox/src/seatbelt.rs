//! The macOS backend's policy: a Seatbelt profile (SBPL, what
//! `/usr/bin/sandbox-exec -p` takes) generated from the sandbox policy.
//! Built and tested on every platform; used on macOS.
//!
//! The profile denies everything by default and then allows: running and
//! forking programs, signals within the sandbox, reading every file,
//! writing only under the workspace's roots and the private temporary
//! directory (never a protected name at any depth: `.git`, `.cogni`,
//! `.claude`, `cogni.toml`, `AGENTS.md`, `CLAUDE.md`, nor the session's
//! pinned files), the terminal devices, the system services programs need
//! to start (user lookup, logging, preferences), and, with the network on,
//! every network operation; with it off, none (Unix sockets included).
//!
//! Paths never enter the profile's text: each is a parameter
//! (`-D WRITABLE_ROOT_0=/path`), so a directory named with quotes,
//! parentheses or newlines cannot change the rules.

use std::path::{Path, PathBuf};

/// The program that applies a profile to a command.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// A profile and the parameters its rules name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The SBPL text.
    pub text: String,
    /// `(name, value)` for each `(param "name")` in the text.
    pub params: Vec<(String, String)>,
}

/// What the profile allows.
#[derive(Debug, Clone, Default)]
pub struct Policy<'a> {
    /// Where commands may write (the workspace's real roots; empty in
    /// read-only mode).
    pub write_roots: &'a [PathBuf],
    /// The private temporary directory (also writable in read-only mode,
    /// as on Linux).
    pub temp_dir: Option<&'a Path>,
    /// Files that stay as they are even under a writable root.
    pub pinned: &'a [PathBuf],
    /// Whether commands may use the network.
    pub network: bool,
}

/// System services a program commonly needs to start and to look up
/// users, hosts and preferences.
const MACH_SERVICES: &[&str] = &[
    "com.apple.system.opendirectoryd.libinfo",
    "com.apple.system.logger",
    "com.apple.system.notification_center",
    "com.apple.logd",
    "com.apple.cfprefsd.daemon",
    "com.apple.cfprefsd.agent",
    "com.apple.trustd",
    "com.apple.SecurityServer",
    "com.apple.coreservices.launchservicesd",
];

/// The profile of `policy`.
pub fn profile(policy: &Policy<'_>) -> Profile {
    let mut params: Vec<(String, String)> = Vec::new();
    let mut param = |prefix: &str, path: &Path| {
        let name = format!("{prefix}_{}", params.len());
        params.push((name.clone(), path.display().to_string()));
        format!("(param \"{name}\")")
    };
    let roots: Vec<String> = policy
        .write_roots
        .iter()
        .map(|r| param("WRITABLE_ROOT", r))
        .collect();
    let temp = policy.temp_dir.map(|t| param("TEMP_DIR", t));
    let pinned: Vec<String> = policy.pinned.iter().map(|p| param("PINNED", p)).collect();

    let mut text = String::from(
        "(version 1)\n\
         (deny default)\n\
         (allow process-exec)\n\
         (allow process-fork)\n\
         (allow signal (target same-sandbox))\n\
         (allow process-info* (target same-sandbox))\n\
         (allow file-read*)\n\
         (allow sysctl-read)\n\
         (allow ipc-posix-shm-read-data)\n\
         (allow file-ioctl (regex #\"^/dev/tty\"))\n\
         (allow file-write-data\n  (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/dtracehelper\")\n  (regex #\"^/dev/tty\") (regex #\"^/dev/ttys[0-9]+$\"))\n",
    );
    text.push_str("(allow mach-lookup\n");
    for service in MACH_SERVICES {
        text.push_str(&format!("  (global-name \"{service}\")\n"));
    }
    text.push_str(")\n");

    let writable: Vec<&String> = roots.iter().chain(temp.iter()).collect();
    if !writable.is_empty() {
        // Protected names at any depth, and the pinned files, stay
        // read-only even where writing is allowed.
        let mut keep = Vec::new();
        for dir in crate::protected::PROTECTED_DIRS {
            keep.push(format!("(regex #\"/{}(/|$)\")", regex_literal(dir)));
        }
        for file in crate::protected::PROTECTED_FILES {
            keep.push(format!("(regex #\"/{}$\")", regex_literal(file)));
        }
        keep.extend(pinned.iter().map(|p| format!("(literal {p})")));
        text.push_str("(allow file-write*\n  (require-all\n    (require-any\n");
        for root in &writable {
            text.push_str(&format!("      (subpath {root})\n"));
        }
        text.push_str("    )\n");
        for rule in &keep {
            text.push_str(&format!("    (require-not {rule})\n"));
        }
        text.push_str("  ))\n");
    }

    // With the network off nothing is allowed, Unix sockets included
    // (stricter than Linux, where those inside the workspace work).
    if policy.network {
        text.push_str("(allow network*)\n(allow system-socket)\n");
    }
    Profile { text, params }
}

impl Profile {
    /// `command` run under this profile: `sandbox-exec -p PROFILE -D
    /// NAME=VALUE ... command...`.
    pub fn argv(&self, command: &[String]) -> Vec<String> {
        let mut argv = vec![SANDBOX_EXEC.to_string(), "-p".into(), self.text.clone()];
        for (name, value) in &self.params {
            argv.push("-D".into());
            argv.push(format!("{name}={value}"));
        }
        argv.extend(command.iter().cloned());
        argv
    }
}

/// `name` with the characters a regular expression gives a meaning
/// escaped (the protected names hold `.`).
fn regex_literal(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if ".[]{}()*+?^$|\\".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parentheses balance outside strings: the profile is one well-formed
    /// list of rules.
    fn balanced(text: &str) -> bool {
        let (mut depth, mut in_string) = (0i32, false);
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' => in_string = !in_string,
                '\\' if in_string => {
                    chars.next();
                }
                '(' if !in_string => depth += 1,
                ')' if !in_string => {
                    depth -= 1;
                    if depth < 0 {
                        return false;
                    }
                }
                _ => {}
            }
        }
        depth == 0 && !in_string
    }

    #[test]
    fn workspace_write_allows_the_roots_but_not_protected_names_and_no_network() {
        let roots = [
            PathBuf::from("/Users/me/proj"),
            PathBuf::from("/Users/me/cache"),
        ];
        let pinned = [PathBuf::from("/Users/me/proj/hooks/pre.sh")];
        let p = profile(&Policy {
            write_roots: &roots,
            temp_dir: Some(Path::new("/private/var/folders/x/T/cogni-1")),
            pinned: &pinned,
            network: false,
        });
        assert!(balanced(&p.text), "{}", p.text);
        assert!(p.text.starts_with("(version 1)\n(deny default)\n"));
        assert!(p.text.contains("(subpath (param \"WRITABLE_ROOT_0\"))"));
        assert!(p.text.contains("(subpath (param \"WRITABLE_ROOT_1\"))"));
        assert!(p.text.contains("(subpath (param \"TEMP_DIR_2\"))"));
        assert!(p.text.contains("(require-not (regex #\"/\\.git(/|$)\"))"));
        assert!(p.text.contains("(require-not (regex #\"/AGENTS\\.md$\"))"));
        assert!(p
            .text
            .contains("(require-not (literal (param \"PINNED_3\")))"));
        assert!(!p.text.contains("network"));
        assert_eq!(
            p.params,
            [
                ("WRITABLE_ROOT_0".to_string(), "/Users/me/proj".to_string()),
                ("WRITABLE_ROOT_1".into(), "/Users/me/cache".into()),
                (
                    "TEMP_DIR_2".into(),
                    "/private/var/folders/x/T/cogni-1".into()
                ),
                ("PINNED_3".into(), "/Users/me/proj/hooks/pre.sh".into()),
            ]
        );
    }

    #[test]
    fn read_only_writes_only_the_temp_dir_and_network_on_allows_it() {
        let p = profile(&Policy {
            write_roots: &[],
            temp_dir: Some(Path::new("/tmp/cogni-1")),
            pinned: &[],
            network: true,
        });
        assert!(balanced(&p.text), "{}", p.text);
        assert!(!p.text.contains("WRITABLE_ROOT"));
        assert!(p.text.contains("(subpath (param \"TEMP_DIR_0\"))"));
        assert!(p.text.contains("(allow network*)"));
        let none = profile(&Policy::default());
        assert!(balanced(&none.text));
        assert!(!none.text.contains("(allow file-write*\n"));
    }

    #[test]
    fn a_hostile_path_is_a_parameter_never_profile_text() {
        let evil = PathBuf::from("/Users/me/x\")) (allow file-write* (subpath \"/");
        let p = profile(&Policy {
            write_roots: std::slice::from_ref(&evil),
            ..Policy::default()
        });
        assert!(balanced(&p.text), "{}", p.text);
        assert!(!p.text.contains("/Users/me/x"));
        assert_eq!(p.params[0].1, evil.display().to_string());
        let argv = p.argv(&["/bin/sh".into(), "-c".into(), "true".into()]);
        assert_eq!(argv[0], SANDBOX_EXEC);
        assert_eq!(argv[1], "-p");
        assert_eq!(argv[3], "-D");
        assert_eq!(argv[4], format!("WRITABLE_ROOT_0={}", evil.display()));
        assert_eq!(argv[5..], ["/bin/sh", "-c", "true"]);
    }
}
