//! Known-safe commands: the classifier behind the `untrusted` approval
//! policy, which asks the user before every command except the ones
//! [`is_known_safe`] accepts.
//!
//! The question it answers is narrow: "can this command, as written, change
//! anything or run a program we did not name?" A `true` means "read-only
//! and recognised"; `false` means "ask". The answer is decided by
//! *parsing*, never by prefix, and anything the parser cannot prove harmless
//! is `false`. A false `false` costs the user one prompt; a false `true`
//! runs something unapproved, so every doubt goes to `false`.
//!
//! # Input
//!
//! [`Command::Argv`] is run directly (no shell): its words reach the program
//! verbatim, so `$(...)` or `;` inside a word is data, but every word is
//! still checked against the program's rules. [`Command::Shell`] is a script
//! run by a POSIX-family shell (`bash -c`, `sh -c`, `zsh -c`). The argv
//! `[bash|sh|zsh, -c|-lc, SCRIPT]` (also `/bin/…` and `/usr/bin/…` forms) is
//! classified by classifying `SCRIPT`, so the argv that the shell tool builds
//! (`[sandbox.shell, "-c", line]`) can be passed as it is; that also checks
//! that the configured shell is one whose syntax this parser knows (fish,
//! for example, quotes differently and is never accepted).
//!
//! # Shell scripts: one simple command only
//!
//! The script is split into words by a small tokenizer written for this
//! purpose rather than the `shlex` crate: `shlex` splits POSIX words but
//! treats `;`, `|`, `>`, `$(` as ordinary characters, so it cannot tell us
//! whether an operator is present; that needs a quote-aware scan anyway, and
//! the scan is the tokenizer.
//!
//! The tokenizer understands single quotes, double quotes and backslash
//! escapes, and rejects the whole script (→ unsafe) when it meets, outside
//! quotes:
//!
//! - any control operator: `|`, `&` (so `&&`, `||`, background `&`, `&>`),
//!   `;`, newline: a script must be a single simple command. Joining safe
//!   commands with `&&`, `||`, `;` or `|` would be harmless in itself, but
//!   the issue lists these as disqualifiers and a pipe widens what one
//!   approval-free call can do; relaxing this later is a local change (split
//!   at top-level operators, check each part);
//! - redirections and here-docs: `<`, `>` (so also `2>`, `>>`, `<<`, `<(…)`);
//! - `$` in any form: `$(…)`, `$((…))`, `$VAR`, `${…}`, `$'…'`. Reading a
//!   variable is harmless, but its value is unknown here: unquoted, it is
//!   split and globbed into words we never saw (`find . $X` with
//!   `X=-delete`), `${X:=v}` assigns, and bash arithmetic evaluates array
//!   subscripts that may contain `$(…)`. So `$` is allowed only inside single
//!   quotes, where it is a literal;
//! - backticks, also inside double quotes (where `$` is rejected too);
//! - `(`, `)` (subshells, process substitution, extglob and zsh glob
//!   qualifiers such as `*(e:…:)`), `{`, `}` (brace groups and brace
//!   expansion);
//! - `#` (comments; zsh extended-glob operator) and `^` (a pipe in the
//!   Bourne shell, a glob operator in zsh);
//! - any ASCII control character except tab, even inside quotes: the issue
//!   disqualifies newlines in the string, quoted or not.
//!
//! An environment assignment prefix (`FOO=1 ls`) is not a program name, so
//! it is unsafe like any unknown program. `!`, `~`, `=`, `%`, `,`, `:`, `@`,
//! `+` are ordinary characters here (no history expansion in `-c` shells;
//! `~` expands to a directory).
//!
//! # Globs
//!
//! Glob characters (`*`, `?`, `[`) are allowed, with two limits, because the
//! shell expands them against file names that the repository controls:
//!
//! - a word whose expansion may *start with `-`* (it starts with an unquoted
//!   glob character or with `-`) may become any option: with a file named
//!   `--pre=sh` in the directory, `rg foo *` runs every searched file as a
//!   shell script (checked with ripgrep 13), and `sed -n 1p *` with a file named
//!   `-i` rewrites the other files in place. Such a word
//!   is accepted only by programs none of whose options is harmful (`ls`,
//!   `cat`, `grep`, …), or after a `--` that ends option parsing. This is
//!   conservative for `--glob=*.rs` (quote it and it is fine);
//! - a glob may expand to several words, so programs that count their
//!   positional arguments (`uniq IN OUT` writes `OUT`; `date` sets the clock
//!   from a positional) reject globbed words altogether; so does the command
//!   name and any word whose meaning we check (a `sed` script, `bash -c`'s
//!   script).
//!
//! # Programs
//!
//! The program word must be a bare allowlisted name, or `/bin/NAME` or
//! `/usr/bin/NAME` for an allowlisted `NAME`: those directories hold the
//! system's copy. Any other path (`./ls`, `/tmp/ls`, `bin/ls`) may be
//! anything and is unsafe.
//!
//! Free (no option writes a file or runs a program): `ls`, `cat`, `head`,
//! `tail`, `wc`, `pwd`, `echo`, `true`, `false`, `which`, `whoami`, `id`,
//! `uname`, `printenv`, `stat`, `du`, `df`, `nl`, `cut`, `tr`, `diff`,
//! `cmp`, `basename`, `dirname`, `realpath`, `readlink`, `grep`, `egrep`,
//! `fgrep`.
//!
//! Checked:
//!
//! - `env`: no arguments only (with arguments it runs a program).
//! - `date`: only display options (`-u`, `-R`, `-I…`, `--rfc-3339=…`, `-d`,
//!   `-r`, `-f` and their long forms) and one `+FORMAT`; any other
//!   positional would set the clock, `-s`/`--set` are rejected.
//! - `uniq`: known options only and at most one positional argument, since
//!   the second one is the output file; no globbed words.
//! - `sort`: not `-o`/`--output` (writes), `--compress-program` (runs a
//!   program), `-T`/`--temporary-directory`.
//! - `file`: not `-C`/`--compile` (writes `magic.mgc`), not
//!   `-z`/`-Z`/`--uncompress*` (libmagic may run external decompressors).
//! - `tree`: not `-o` (writes) nor `-R` (writes `00Tree.html` files); `--`
//!   is not trusted to end options.
//! - `rg`: not `--pre` (runs a program per file), `--pre-glob`,
//!   `-z`/`--search-zip` (runs decompressors), `--hostname-bin` (runs a
//!   program).
//! - `find`: every `-word` must be a known test, option, operator or
//!   read-only action (`-print*`, `-printf`, `-ls`, `-prune`, `-quit`), or a
//!   number such as `-7` / `-10k`. So `-exec`, `-execdir`, `-ok`, `-okdir`,
//!   `-delete`, `-fprint*`, `-fls` and anything unknown are unsafe. A value
//!   starting with `-` (`-name -x`) is also rejected: conservative.
//! - `sed`: only with `-n`/`--quiet`/`--silent`, and only scripts of the form
//!   `[ADDR[,ADDR]]p` joined by `;`, where `ADDR` is a line number, `$` or
//!   `/REGEX/`. So no `w`, `W`, `e`, `s///w`, `s///e`, and no
//!   `-i`/`--in-place`, `-f` (script from a file), `-l`. Other options:
//!   `-E`, `-r`, `-s`, `-u`, `-z` and their long forms, `--posix`,
//!   `--sandbox`, `--debug`, `-e`/`--expression`.
//! - `git`: global options only `--no-pager`, `-P`, `--no-optional-locks`,
//!   and `--version` alone; so never `-c`, `--config-env`, `-C` (another
//!   repository brings its own config and hooks), `--git-dir`, `--work-tree`,
//!   `--exec-path`, `-p`. Subcommands: `status`, `log`, `diff`, `show`,
//!   `rev-parse`, `ls-files`, `blame` (none of `--output`, which writes a
//!   file, `--ext-diff`, which runs the configured diff program, or
//!   `--show-signature`, which runs gpg; `blame` passes unknown options to
//!   the revision parser, so it gets the same check); `grep` (also not `-O`/`--open-files-in-pager`, which runs a
//!   pager); `branch` in list forms only: options from a fixed list, and a
//!   positional argument only with `--list`, `--contains`, `--no-contains`,
//!   `--merged`, `--no-merged` or `--points-at`. `-l` is not accepted: before
//!   git 2.23 it meant `--create-reflog`, and `git branch -l NAME` created a
//!   branch. `--textconv` is not rejected: it is already the default for
//!   `diff`, `log` and `show`. Aliases are never accepted (they may run
//!   `!shell`), since only the listed built-in names are.
//! - `bash`, `sh`, `zsh`: exactly `-c SCRIPT` or `-lc SCRIPT`, and `SCRIPT`
//!   is safe (nesting is limited to a few levels).
//!
//! Denied long options are matched by *prefix* (`--out=x` and `--o=x` count
//! as `--output`), because GNU `getopt_long` and git's option parser accept
//! unique abbreviations. Denied short options are matched anywhere in a
//! cluster (`-no` is `-n -o`), also where the letter would be an attached
//! value: conservative.
//!
//! Not allowlisted, whatever the arguments: `cargo` in every form. `cargo
//! build`/`test` write `target/`; `cargo metadata` runs `rustc -vV`, which a
//! repository's `.cargo/config.toml` can point at any program; and the
//! rustup proxy behind `cargo --version` reads `rust-toolchain.toml`, which
//! can name a toolchain path (any program) or trigger a download. Also not
//! allowlisted: wrappers that run their arguments (`xargs`, `sudo`, `time`,
//! `timeout`, `nice`, `command`, `exec`, `env CMD`).
//!
//! # Trust boundary
//!
//! "Safe" assumes the environment is the user's: `PATH` (a `PATH` with `.`
//! makes `ls` anything), shell startup files (`BASH_ENV`, `~/.zshenv`, the
//! profile files `-lc` reads), exported shell functions, git's config files
//! (`core.fsmonitor`, diff drivers and textconv filters run during `git
//! status` / `git diff`) and `RIPGREP_CONFIG_PATH`. "Read-only" is not
//! "confidential": `cat ~/.ssh/id_rsa` and `printenv` are accepted; what may
//! be read is the sandbox's business (so are device files whose reads have
//! side effects). Long-running reads (`tail -f`) are
//! accepted; the shell tool's timeout ends them.
//!
//! # Cost
//!
//! No regexes, no allocation for argv input; a shell script costs one
//! `Vec` of words, and a word is copied only when quotes or escapes changed
//! its text.

use std::borrow::Cow;

/// A command to classify, borrowed from whatever holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command<'a> {
    /// Program and arguments, run directly without a shell.
    Argv(&'a [String]),
    /// A script run by a POSIX-family shell with `-c`.
    Shell(&'a str),
}

/// True when `command` is a recognised read-only command that the
/// `untrusted` approval policy may run without asking. See the module
/// documentation for the rules.
pub fn is_known_safe(command: &Command<'_>) -> bool {
    match *command {
        Command::Argv(argv) => words_are_safe(argv, 0),
        Command::Shell(script) => script_is_safe(script, 0),
    }
}

/// How many `bash -c` levels deep a script may nest.
const MAX_DEPTH: u8 = 3;

fn script_is_safe(script: &str, depth: u8) -> bool {
    match split_script(script) {
        Some(words) => words_are_safe(&words, depth),
        None => false,
    }
}

// ---------------------------------------------------------------------------
// Words

/// One word of a command, as the program will receive it (before glob
/// expansion, for words from a shell script).
trait Arg {
    fn text(&self) -> &str;
    /// Contains an unquoted glob character, so the shell may replace it by
    /// zero or more other words.
    fn globbed(&self) -> bool;
    /// Glob expansion may produce a word starting with `-`.
    fn may_be_option(&self) -> bool;
}

impl Arg for String {
    fn text(&self) -> &str {
        self
    }
    fn globbed(&self) -> bool {
        false
    }
    fn may_be_option(&self) -> bool {
        false
    }
}

#[derive(Debug)]
struct Word<'a> {
    text: Cow<'a, str>,
    globbed: bool,
    leading_glob: bool,
}

impl Arg for Word<'_> {
    fn text(&self) -> &str {
        &self.text
    }
    fn globbed(&self) -> bool {
        self.globbed
    }
    fn may_be_option(&self) -> bool {
        self.globbed && (self.leading_glob || self.text.starts_with('-'))
    }
}

/// Control characters are refused everywhere, quoted or not (tab only
/// separates words).
fn is_control(c: u8) -> bool {
    (c < 0x20 && c != b'\t') || c == 0x7f
}

/// Characters with a shell meaning we do not accept outside quotes.
fn is_unquoted_special(c: u8) -> bool {
    matches!(
        c,
        b'|' | b'&' | b';' | b'<' | b'>' | b'(' | b')' | b'$' | b'`' | b'{' | b'}' | b'#' | b'^'
    ) || is_control(c)
}

/// Split a shell script into words, or `None` if it is anything but one
/// simple command without expansions (see the module docs).
fn split_script(script: &str) -> Option<Vec<Word<'_>>> {
    let bytes = script.as_bytes();
    let mut words = Vec::new();
    let mut i = 0;
    loop {
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
            i += 1;
        }
        if i == bytes.len() {
            return Some(words);
        }
        let (word, next) = read_word(script, i)?;
        words.push(word);
        i = next;
    }
}

/// The words of `script` as [`split_script`] reads them, each with whether
/// it holds an unquoted glob character; `None` when the script is refused.
/// Only for the fuzz targets (see `crate::fuzzing`).
pub(crate) fn script_words(script: &str) -> Option<Vec<(String, bool)>> {
    let words = split_script(script)?;
    Some(
        words
            .into_iter()
            .map(|w| (w.text.into_owned(), w.globbed))
            .collect(),
    )
}

/// Read the word starting at `start` (not a blank); returns it and the index
/// after it.
fn read_word(s: &str, start: usize) -> Option<(Word<'_>, usize)> {
    let b = s.as_bytes();
    let mut i = start;
    // Set once quotes or escapes make the text differ from the source; it
    // then holds everything before `seg`.
    let mut owned: Option<String> = None;
    // Start of the literal run not yet copied into `owned`.
    let mut seg = start;
    let mut globbed = false;
    let mut leading_glob = false;

    // Move the pending literal run into the owned buffer.
    fn flush<'b>(
        owned: &'b mut Option<String>,
        s: &str,
        start: usize,
        seg: usize,
        i: usize,
    ) -> &'b mut String {
        match owned {
            Some(buf) => {
                buf.push_str(&s[seg..i]);
                buf
            }
            None => owned.insert(s[start..i].to_owned()),
        }
    }

    while i < b.len() {
        match b[i] {
            b' ' | b'\t' => break,
            b'\'' => {
                let buf = flush(&mut owned, s, start, seg, i);
                let len = b[i + 1..].iter().position(|&c| c == b'\'')?;
                let inner = &s[i + 1..i + 1 + len];
                if inner.bytes().any(is_control) {
                    return None;
                }
                buf.push_str(inner);
                i += len + 2;
                seg = i;
            }
            b'"' => {
                let buf = flush(&mut owned, s, start, seg, i);
                i += 1;
                let mut run = i;
                loop {
                    let c = *b.get(i)?;
                    match c {
                        b'"' => {
                            buf.push_str(&s[run..i]);
                            i += 1;
                            break;
                        }
                        b'$' | b'`' => return None,
                        b'\\' => {
                            buf.push_str(&s[run..i]);
                            let next = *b.get(i + 1)?;
                            if matches!(next, b'$' | b'`' | b'"' | b'\\') {
                                buf.push(next as char);
                                i += 2;
                            } else {
                                // A literal backslash; the next character is
                                // read normally.
                                buf.push('\\');
                                i += 1;
                            }
                            run = i;
                        }
                        c if is_control(c) => return None,
                        _ => i += 1,
                    }
                }
                seg = i;
            }
            b'\\' => {
                let next = *b.get(i + 1)?;
                if is_control(next) {
                    return None;
                }
                let buf = flush(&mut owned, s, start, seg, i);
                let ch = s[i + 1..].chars().next()?;
                buf.push(ch);
                i += 1 + ch.len_utf8();
                seg = i;
            }
            b'*' | b'?' | b'[' => {
                let produced = match &owned {
                    None => i > start,
                    Some(buf) => !buf.is_empty() || i > seg,
                };
                if !produced {
                    leading_glob = true;
                }
                globbed = true;
                i += 1;
            }
            c if is_unquoted_special(c) => return None,
            _ => i += 1,
        }
    }
    let text = match owned {
        Some(mut buf) => {
            buf.push_str(&s[seg..i]);
            Cow::Owned(buf)
        }
        None => Cow::Borrowed(&s[start..i]),
    };
    Some((
        Word {
            text,
            globbed,
            leading_glob,
        },
        i,
    ))
}

// ---------------------------------------------------------------------------
// Programs

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

fn words_are_safe<A: Arg>(words: &[A], depth: u8) -> bool {
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
struct Denied {
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

#[cfg(test)]
mod tests;
