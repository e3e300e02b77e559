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

mod programs;
mod words;

use programs::*;
pub use words::script_words;
use words::*;

#[cfg(test)]
mod tests;
