//! The programs the classifier knows, and the options and forms of each
//! that keep it read-only.

use super::*;

/// The allowlisted name a program word stands for, if it is a bare name or
/// lives in `/bin` or `/usr/bin`.
fn program_name(word: &str) -> Option<&str> {
    let name = match word
        .strip_prefix("/usr/bin/")
        .or_else(|| word.strip_prefix("/bin/"))
    {
        Some(rest) => rest,
        None => word,
    };
    if name.is_empty() || name.contains('/') {
        None
    } else {
        Some(name)
    }
}

pub(super) fn words_are_safe<A: Arg>(words: &[A], depth: u8) -> bool {
    let Some((program, args)) = words.split_first() else {
        return false;
    };
    if program.globbed() {
        return false;
    }
    let Some(name) = program_name(program.text()) else {
        return false;
    };
    match name {
        "ls" | "cat" | "head" | "tail" | "wc" | "pwd" | "echo" | "true" | "false" | "which"
        | "whoami" | "id" | "uname" | "printenv" | "stat" | "du" | "df" | "nl" | "cut" | "tr"
        | "diff" | "cmp" | "basename" | "dirname" | "realpath" | "readlink" | "grep" | "egrep"
        | "fgrep" => true,
        "env" => args.is_empty(),
        "date" => date_is_safe(args),
        "uniq" => uniq_is_safe(args),
        "sort" => denylist_ok(args, &SORT),
        "file" => denylist_ok(args, &FILE),
        "tree" => denylist_ok(args, &TREE),
        "rg" => denylist_ok(args, &RG),
        "find" => find_is_safe(args),
        "sed" => sed_is_safe(args),
        "git" => git_is_safe(args),
        "bash" | "sh" | "zsh" => shell_is_safe(args, depth),
        _ => false,
    }
}

/// `-c SCRIPT` / `-lc SCRIPT` with a safe script.
fn shell_is_safe<A: Arg>(args: &[A], depth: u8) -> bool {
    match args {
        [flag, script] => {
            !flag.globbed()
                && matches!(flag.text(), "-c" | "-lc")
                && !script.globbed()
                && depth < MAX_DEPTH
                && script_is_safe(script.text(), depth + 1)
        }
        _ => false,
    }
}

/// The name of a long option (`--name` or `--name=value`), without dashes.
fn split_long(word: &str) -> Option<(&str, Option<&str>)> {
    let rest = word.strip_prefix("--")?;
    Some(match rest.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (rest, None),
    })
}

/// The letters of a short-option cluster (`-abc`), not `-` or `--…`.
fn short_cluster(word: &str) -> Option<&str> {
    let rest = word.strip_prefix('-')?;
    if rest.is_empty() || rest.starts_with('-') {
        None
    } else {
        Some(rest)
    }
}

/// Options that make an otherwise read-only program write or run something.
pub(super) struct Denied {
    /// Long names; a given name that is a prefix of one of these (an
    /// abbreviation) is denied too.
    long: &'static [&'static str],
    /// Letters denied anywhere in a short-option cluster.
    short: &'static [u8],
    /// `--` ends option parsing, so later words are operands.
    dashdash_ends_options: bool,
}

const SORT: Denied = Denied {
    long: &["output", "compress-program", "temporary-directory"],
    short: b"oT",
    dashdash_ends_options: true,
};
const FILE: Denied = Denied {
    long: &["compile", "uncompress", "uncompress-noreport"],
    short: b"CzZ",
    dashdash_ends_options: true,
};
const TREE: Denied = Denied {
    long: &["output"],
    short: b"oR",
    dashdash_ends_options: false,
};
const RG: Denied = Denied {
    long: &["pre", "pre-glob", "search-zip", "hostname-bin"],
    short: b"z",
    dashdash_ends_options: true,
};
const GIT_COMMON: Denied = Denied {
    long: &["output", "ext-diff", "show-signature"],
    short: b"",
    dashdash_ends_options: true,
};
const GIT_GREP: Denied = Denied {
    long: &["output", "ext-diff", "open-files-in-pager"],
    short: b"O",
    dashdash_ends_options: true,
};

fn denylist_ok<A: Arg>(args: &[A], denied: &Denied) -> bool {
    for arg in args {
        if arg.may_be_option() {
            return false;
        }
        let text = arg.text();
        if text == "--" {
            if denied.dashdash_ends_options {
                return true;
            }
        } else if let Some((name, _)) = split_long(text) {
            if denied.long.iter().any(|d| d.starts_with(name)) {
                return false;
            }
        } else if let Some(cluster) = short_cluster(text) {
            if cluster.bytes().any(|c| denied.short.contains(&c)) {
                return false;
            }
        }
    }
    true
}

fn date_is_safe<A: Arg>(args: &[A]) -> bool {
    let mut format_seen = false;
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg.globbed() {
            return false;
        }
        let text = arg.text();
        match text {
            "-u" | "--utc" | "--universal" | "-R" | "--rfc-email" | "--debug" | "--resolution"
            | "--iso-8601" => {}
            // Options with a separate value.
            "-d" | "--date" | "-r" | "--reference" | "-f" | "--file" => match args.get(i) {
                Some(value) if !value.globbed() => i += 1,
                _ => return false,
            },
            _ if text.starts_with("-I")
                || text.starts_with("--iso-8601=")
                || text.starts_with("--rfc-3339=")
                || text.starts_with("--date=")
                || text.starts_with("--reference=")
                || text.starts_with("--file=")
                || ((text.starts_with("-d")
                    || text.starts_with("-r")
                    || text.starts_with("-f"))
                    && text.len() > 2) => {}
            _ if text.starts_with('+') && !format_seen => format_seen = true,
            _ => return false,
        }
    }
    true
}

fn uniq_is_safe<A: Arg>(args: &[A]) -> bool {
    let mut operands = 0;
    let mut options_done = false;
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg.globbed() {
            return false;
        }
        let text = arg.text();
        if options_done || text == "-" || !text.starts_with('-') {
            operands += 1;
            continue;
        }
        if text == "--" {
            options_done = true;
            continue;
        }
        let takes_value = if let Some((name, value)) = split_long(text) {
            match name {
                "count" | "repeated" | "ignore-case" | "unique" | "zero-terminated"
                    if value.is_none() =>
                {
                    false
                }
                "all-repeated" | "group" => false,
                "skip-fields" | "skip-chars" | "check-chars" => value.is_none(),
                _ => return false,
            }
        } else {
            let cluster = &text[1..];
            let mut takes_value = false;
            for (j, c) in cluster.bytes().enumerate() {
                match c {
                    b'c' | b'd' | b'D' | b'i' | b'u' | b'z' => {}
                    b'f' | b's' | b'w' => {
                        takes_value = j + 1 == cluster.len();
                        break;
                    }
                    _ => return false,
                }
            }
            takes_value
        };
        if takes_value {
            match args.get(i) {
                Some(value) if !value.globbed() => i += 1,
                _ => return false,
            }
        }
    }
    operands <= 1
}

/// `find` words starting with `-` that neither write nor run anything.
#[rustfmt::skip]
const FIND_OK: &[&str] = &[
    // global options
    "-H", "-L", "-P",
    // tests
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
    "-regextype", "-lname", "-ilname", "-type", "-xtype", "-size", "-empty", "-newer",
    "-anewer", "-cnewer", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-used",
    "-perm", "-user", "-group", "-uid", "-gid", "-nouser", "-nogroup", "-links", "-inum",
    "-samefile", "-readable", "-writable", "-executable", "-true", "-false", "-fstype",
    // options
    "-maxdepth", "-mindepth", "-depth", "-mount", "-xdev", "-follow", "-noleaf",
    "-ignore_readdir_race", "-noignore_readdir_race", "-daystart", "-warn", "-nowarn",
    // read-only actions
    "-print", "-print0", "-printf", "-ls", "-prune", "-quit",
    // operators
    "-not", "-a", "-and", "-o", "-or",
];

fn find_is_safe<A: Arg>(args: &[A]) -> bool {
    args.iter().all(|arg| {
        if arg.may_be_option() {
            return false;
        }
        let text = arg.text();
        let Some(rest) = text.strip_prefix('-') else {
            return true;
        };
        if rest.is_empty() || FIND_OK.contains(&text) {
            return true;
        }
        // -newerXY (e.g. -newermt), -O0..-O3
        if let Some(xy) = rest.strip_prefix("newer") {
            return xy.len() == 2 && xy.bytes().all(|c| b"aBcmt".contains(&c));
        }
        if let Some(level) = rest.strip_prefix('O') {
            return level.len() == 1 && level.as_bytes()[0].is_ascii_digit();
        }
        // A numeric value: -7, -10k, -644.
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0
            && rest.len() - digits <= 1
            && rest.as_bytes()[rest.len() - 1].is_ascii_alphanumeric()
    })
}

fn sed_is_safe<A: Arg>(args: &[A]) -> bool {
    let mut quiet = false;
    let mut expression = false;
    let mut first_operand: Option<&A> = None;
    let mut options_done = false;
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let text = arg.text();
        let is_option = !options_done && text.starts_with('-') && text != "-";
        if !is_option {
            if arg.may_be_option() && !options_done {
                return false;
            }
            if first_operand.is_none() {
                first_operand = Some(arg);
            }
            continue;
        }
        if text == "--" {
            options_done = true;
        } else if let Some((name, value)) = split_long(text) {
            match (name, value) {
                ("quiet" | "silent", None) => quiet = true,
                (
                    "regexp-extended" | "separate" | "unbuffered" | "null-data" | "posix"
                    | "sandbox" | "debug",
                    None,
                ) => {}
                ("expression", Some(script)) => {
                    if arg.globbed() || !sed_script_ok(script) {
                        return false;
                    }
                    expression = true;
                }
                ("expression", None) => match args.get(i) {
                    Some(script) if !script.globbed() && sed_script_ok(script.text()) => {
                        i += 1;
                        expression = true;
                    }
                    _ => return false,
                },
                _ => return false,
            }
        } else {
            let cluster = &text[1..];
            for (j, c) in cluster.bytes().enumerate() {
                match c {
                    b'n' => quiet = true,
                    b'E' | b'r' | b's' | b'u' | b'z' => {}
                    b'e' => {
                        let attached = &cluster[j + 1..];
                        let ok = if !attached.is_empty() {
                            !arg.globbed() && sed_script_ok(attached)
                        } else {
                            match args.get(i) {
                                Some(script)
                                    if !script.globbed() && sed_script_ok(script.text()) =>
                                {
                                    i += 1;
                                    true
                                }
                                _ => false,
                            }
                        };
                        if !ok {
                            return false;
                        }
                        expression = true;
                        break;
                    }
                    _ => return false,
                }
            }
        }
    }
    if !quiet {
        return false;
    }
    if expression {
        return true;
    }
    // Without -e the first operand is the script.
    matches!(first_operand, Some(script) if !script.globbed() && sed_script_ok(script.text()))
}

/// `[ADDR[,ADDR]]p` commands joined by `;`; `ADDR` is a line number, `$`
/// or `/REGEX/`.
fn sed_script_ok(script: &str) -> bool {
    let b = script.as_bytes();
    let mut i = 0;
    loop {
        if let Some(next) = sed_address(b, i) {
            i = next;
            if b.get(i) == Some(&b',') {
                match sed_address(b, i + 1) {
                    Some(next) => i = next,
                    None => return false,
                }
            }
        }
        if b.get(i) != Some(&b'p') {
            return false;
        }
        i += 1;
        match b.get(i) {
            None => return true,
            Some(b';') => i += 1,
            Some(_) => return false,
        }
    }
}

fn sed_address(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'$' => Some(i + 1),
        c if c.is_ascii_digit() => {
            Some(i + b[i..].iter().take_while(|c| c.is_ascii_digit()).count())
        }
        b'/' => {
            let mut j = i + 1;
            while j < b.len() {
                match b[j] {
                    b'\\' => j += 2,
                    b'/' => return Some(j + 1),
                    c if is_control(c) => return None,
                    _ => j += 1,
                }
            }
            None
        }
        _ => None,
    }
}

fn git_is_safe<A: Arg>(args: &[A]) -> bool {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg.globbed() {
            return false;
        }
        match arg.text() {
            "--no-pager" | "-P" | "--no-optional-locks" => i += 1,
            "--version" => return args.len() == 1,
            _ => break,
        }
    }
    let Some(sub) = args.get(i) else {
        return false;
    };
    if sub.globbed() {
        return false;
    }
    let rest = &args[i + 1..];
    match sub.text() {
        "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "blame" => {
            denylist_ok(rest, &GIT_COMMON)
        }
        "grep" => denylist_ok(rest, &GIT_GREP),
        "branch" => git_branch_is_safe(rest),
        _ => false,
    }
}

fn git_branch_is_safe<A: Arg>(args: &[A]) -> bool {
    let mut list_mode = false;
    let mut operand = false;
    for arg in args {
        if arg.may_be_option() {
            return false;
        }
        let text = arg.text();
        if let Some((name, value)) = split_long(text) {
            match name {
                "all" | "remotes" | "verbose" | "ignore-case" | "no-color" | "no-column"
                | "show-current" | "omit-empty" | "no-abbrev"
                    if value.is_none() => {}
                "color" | "column" | "abbrev" => {}
                "sort" | "format" if value.is_some() => {}
                "list" if value.is_none() => list_mode = true,
                "contains" | "no-contains" | "merged" | "no-merged" | "points-at" => {
                    list_mode = true
                }
                _ => return false,
            }
        } else if let Some(cluster) = short_cluster(text) {
            if !cluster
                .bytes()
                .all(|c| matches!(c, b'a' | b'r' | b'v' | b'i'))
            {
                return false;
            }
        } else {
            // `--` and `-` land here too: treated as operands.
            operand = true;
        }
    }
    !operand || list_mode
}
