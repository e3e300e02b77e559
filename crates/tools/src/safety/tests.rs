use super::*;

enum C {
    /// A shell script.
    S(&'static str),
    /// An argv.
    A(&'static [&'static str]),
}
use C::{A, S};

fn classify(c: &C) -> bool {
    match c {
        S(script) => is_known_safe(&Command::Shell(script)),
        A(argv) => {
            let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
            is_known_safe(&Command::Argv(&argv))
        }
    }
}

const TABLE: &[(C, bool)] = &[
    // --- plain safe commands
    (S("ls"), true),
    (S("ls -la src"), true),
    (S("  ls\t-l  "), true),
    (S("cat Cargo.toml"), true),
    (S("head -n 20 src/lib.rs"), true),
    (S("tail -n 5 README.md"), true),
    (S("wc -l src/*.rs"), true),
    (S("pwd"), true),
    (S("echo hello world"), true),
    (S("true"), true),
    (S("false"), true),
    (S("which cargo"), true),
    (S("whoami"), true),
    (S("id -u"), true),
    (S("uname -a"), true),
    (S("printenv HOME"), true),
    (S("stat Cargo.toml"), true),
    (S("du -sh ."), true),
    (S("df -h"), true),
    (S("nl src/lib.rs"), true),
    (S("cut -d: -f1 /etc/passwd"), true),
    (S("tr a-z A-Z"), true),
    (S("diff -u a.txt b.txt"), true),
    (S("cmp a b"), true),
    (S("basename /a/b.rs .rs"), true),
    (S("dirname /a/b.rs"), true),
    (S("realpath ."), true),
    (S("readlink -f x"), true),
    (S("grep -rn 'fn main' src"), true),
    (S("egrep -i 'a|b' f"), true),
    (S("fgrep -F x f"), true),
    (S("ls *"), true),
    // --- tricky quoting
    (S("echo ';'"), true),
    (S("echo \"a;b|c&&d\""), true),
    (S("echo \\;"), true),
    (S("echo '$(rm -rf /)'"), true),
    (S("echo \"\\$HOME\""), true),
    (S("grep -n 'a\"b' f"), true),
    (S("'ls' -l"), true),
    (S("echo 'héllo wörld' ünïcode"), true),
    (S("echo $(rm -rf /)"), false),
    (S("echo \"$(rm -rf /)\""), false),
    (S("echo `rm -rf /`"), false),
    (S("echo \"`id`\""), false),
    (S("echo 'unterminated"), false),
    (S("echo \"unterminated"), false),
    (S("echo trailing\\"), false),
    // --- operators and other constructs
    (S("ls | wc -l"), false),
    (S("ls; rm -rf /"), false),
    (S("ls && rm x"), false),
    (S("ls || rm x"), false),
    (S("ls\nrm x"), false),
    (S("echo 'a\nb'"), false),
    (S("ls\r"), false),
    (S("ls &"), false),
    (S("ls > out.txt"), false),
    (S("ls >> out.txt"), false),
    (S("cat < in.txt"), false),
    (S("ls 2> err.txt"), false),
    (S("ls &> all.txt"), false),
    (S("cat <<EOF"), false),
    (S("diff <(ls a) <(ls b)"), false),
    (S("(ls)"), false),
    (S("{ ls; }"), false),
    (S("echo {a,b}"), false),
    (S("echo $HOME"), false),
    (S("echo ${HOME}"), false),
    (S("echo $((1+2))"), false),
    (S("echo $'a'"), false),
    (S("FOO=1 ls"), false),
    (S("ls # comment"), false),
    (S("ls ^x"), false),
    (S("ls *(e:'rm x':)"), false),
    // --- empty and unknown
    (S(""), false),
    (S("   "), false),
    (S("''"), false),
    (S("rm -rf /"), false),
    (S("cargo test"), false),
    (S("cargo --version"), false),
    (S("cargo metadata"), false),
    (S("python3 -c 'print(1)'"), false),
    (S("xargs ls"), false),
    (S("sudo ls"), false),
    (S("l? -l"), false),
    // --- program paths
    (S("/bin/ls -l"), true),
    (S("/usr/bin/cat f"), true),
    (S("./ls"), false),
    (S("/tmp/ls"), false),
    (S("bin/ls"), false),
    (S("/usr/local/bin/ls"), false),
    (S("/usr/bin/../../tmp/ls"), false),
    // --- env, date, uniq
    (S("env"), true),
    (S("env rm x"), false),
    (S("date"), true),
    (S("date -u +%Y-%m-%d"), true),
    (S("date -d yesterday +%s"), true),
    (S("date 010100002000"), false),
    (S("date -s tomorrow"), false),
    (S("date --set=tomorrow"), false),
    (S("uniq -c f"), true),
    (S("uniq -f 2 f"), true),
    (S("uniq in out"), false),
    (S("uniq -c in out"), false),
    (S("uniq *.txt"), false),
    // --- sort, file, tree
    (S("sort -n f"), true),
    (S("sort -k2,2 -t, f"), true),
    (S("sort -o out f"), false),
    (S("sort -no out f"), false),
    (S("sort --output=out f"), false),
    (S("sort --out=x f"), false),
    (S("sort --compress-program=sh f"), false),
    (S("file src/lib.rs"), true),
    (S("file -C -m magic"), false),
    (S("file -z x.gz"), false),
    (S("tree -L 2"), true),
    (S("tree -o out.txt"), false),
    (S("tree -aR -H ."), false),
    // --- rg
    (S("rg -n 'fn main' src"), true),
    (S("rg --pretty foo"), true),
    (S("rg --pre ./x foo"), false),
    (S("rg --pre=./x foo"), false),
    (S("rg --pre-glob '*.pdf' foo"), false),
    (S("rg -z foo"), false),
    (S("rg -iz foo"), false),
    (S("rg --search-zip foo"), false),
    (S("rg --hostname-bin=./x foo"), false),
    (S("rg foo *"), false),
    (S("rg foo -- *"), true),
    (S("rg foo -*"), false),
    (S("rg foo src/*.rs"), true),
    (S("rg -g '*.rs' foo"), true),
    // --- find
    (S("find . -name '*.rs'"), true),
    (S("find . -type f -mtime -7 -print0"), true),
    (
        S("find src -maxdepth 2 \\( -name a -o -name b \\) -print"),
        true,
    ),
    (S("find . -newermt 2024-01-01"), true),
    (S("find . -name '*.rs' -exec rm {} \\;"), false),
    (S("find . -name '*.rs' -exec rm '{}' +"), false),
    (S("find . -execdir rm x ';'"), false),
    (S("find . -ok rm x ';'"), false),
    (S("find . -okdir rm x ';'"), false),
    (S("find . -delete"), false),
    (S("find . -fprint out"), false),
    (S("find . -fprintf out %p"), false),
    (S("find . -fls out"), false),
    (S("find *"), false),
    (S("find . -name *.rs"), false),
    (S("find . -frobnicate"), false),
    // --- sed
    (S("sed -n 1,5p f"), true),
    (S("sed -n '$p' f"), true),
    (S("sed -n '/fn main/p' src/main.rs"), true),
    (S("sed -n '1p;10,20p' f"), true),
    (S("sed -n -e 1p -e 3p f"), true),
    (S("sed -ne 5p f"), true),
    (S("sed -n --expression=2p f"), true),
    (S("sed -i s/a/b/ f"), false),
    (S("sed -n -i 1p f"), false),
    (S("sed --in-place -n 1p f"), false),
    (S("sed s/a/b/ f"), false),
    (S("sed 1,5p f"), false),
    (S("sed -n 's/a/b/w out' f"), false),
    (S("sed -n '1e id' f"), false),
    (S("sed -n '1w out' f"), false),
    (S("sed -n 1p *"), false),
    (S("sed -n 1p src/*.rs"), true),
    (S("sed -n '/a\\/b/p' f"), true),
    (S("sed -n '/unterminated/p"), false),
    (S("sed -n -f script.sed f"), false),
    // --- git
    (S("git status"), true),
    (S("git status --porcelain"), true),
    (S("git log --oneline -n 5"), true),
    (S("git --no-pager log -p"), true),
    (S("git diff HEAD~1 -- src"), true),
    (S("git show HEAD:src/lib.rs"), true),
    (S("git rev-parse --show-toplevel"), true),
    (S("git ls-files '*.rs'"), true),
    (S("git blame -L 1,10 src/lib.rs"), true),
    (S("git grep -n foo"), true),
    (S("git --version"), true),
    (S("git"), false),
    (S("git -c core.pager=evil log"), false),
    (S("git --config-env=core.pager=X log"), false),
    (S("git -C /tmp/other status"), false),
    (S("git --git-dir=/tmp/x log"), false),
    (S("git --exec-path=/tmp log"), false),
    (S("git log --output=/tmp/x"), false),
    (S("git diff --out=x"), false),
    (S("git diff --ext-diff"), false),
    (S("git blame --output=x f"), false),
    (S("git grep -O foo"), false),
    (S("git grep -nOless foo"), false),
    (S("git grep --open-files-in-pager=vi foo"), false),
    (S("git diff *"), false),
    (S("git diff -- *"), true),
    (S("git commit -m x"), false),
    (S("git push"), false),
    (S("git checkout ."), false),
    (S("git stash"), false),
    (S("git branch"), true),
    (S("git branch -a -vv"), true),
    (S("git branch --list 'feat/*'"), true),
    (S("git branch --contains HEAD"), true),
    (S("git branch new-branch"), false),
    (S("git branch -d old"), false),
    (S("git branch -D old"), false),
    (S("git branch -m a b"), false),
    (S("git branch -l foo"), false),
    (S("git branch --set-upstream-to=origin/main"), false),
    // --- shells
    (S("bash -lc \"ls\""), true),
    (S("bash -c 'git status'"), true),
    (S("bash -c 'ls; rm x'"), false),
    (S("bash -c 'bash -c \"ls\"'"), true),
    (S("bash ./script.sh"), false),
    (S("bash -c ls extra"), false),
    (S("fish -c ls"), false),
    // --- argv forms
    (A(&["ls", "-la"]), true),
    (A(&["echo", "$(rm -rf /)"]), true),
    (A(&["echo", "a; rm -rf /"]), true),
    (A(&["ls", "*"]), true),
    (A(&["rg", "foo", "*"]), true),
    (A(&["bash", "-lc", "ls"]), true),
    (A(&["/bin/bash", "-c", "git log -n 3"]), true),
    (A(&["sh", "-c", "cat f"]), true),
    (A(&["zsh", "-c", "pwd"]), true),
    (A(&["bash", "-c", "ls | wc -l"]), false),
    (A(&["bash", "-c", "echo $(id)"]), false),
    (A(&["bash", "-c", "ls *"]), true),
    (A(&["bash", "-x", "ls"]), false),
    (A(&["/usr/local/bin/fish", "-c", "ls"]), false),
    (A(&["find", ".", "-delete"]), false),
    (A(&["git", "-c", "core.pager=evil", "log"]), false),
    (A(&["sed", "-i", "s/a/b/", "f"]), false),
    (A(&["sed", "-n", "1,5p", "f"]), true),
    (A(&["rg", "--pre", "./x", "foo"]), false),
    (A(&["env"]), true),
    (A(&["env", "-i", "sh"]), false),
    (A(&[]), false),
    (A(&[""]), false),
    (A(&["rm", "-rf", "/"]), false),
    (A(&["cargo", "test"]), false),
    // --- per-program checks reached only through argv or odd spellings
    (
        A(&["find", ".", "-name", "*.rs", "-exec", "rm", "{}", ";"]),
        false,
    ),
    (A(&["find", ".", "-name", "*.rs", "-print"]), true),
    (S("sed -n 1p -i f"), false),
    (S("sed -n -- 1p -i"), true),
    (S("sed -n 1p -- *"), true),
    (S("ls -- -*"), true),
    (S("echo ~"), true),
    (S("cat ~/.bashrc"), true),
    (S("tree -- *"), false),
    (S("rg foo -g *.rs"), false),
    (S("rg foo --glob=*.rs"), false),
    (S("sort -T /tmp f"), false),
    (S("file --comp magic"), false),
    (S("uniq -f * in"), false),
    (S("date -f dates.txt"), true),
    (S("date +%s +%Y"), false),
    (S("git log -c"), true),
    (S("git log --show-signature"), false),
    (S("git --no-pager --version"), false),
    (S("git -- log"), false),
    (S("git branch -r -d origin/x"), false),
    (S("git branch -a feature"), false),
    (S("git branch --li foo"), false),
    (S("git rev-parse --show-toplevel --git-dir"), true),
    (S("bash -c \"bash -c 'bash -c \\\"bash -c ls\\\"'\""), false),
];

#[test]
fn known_safe_table() {
    let mut failures = Vec::new();
    for (command, expected) in TABLE {
        if classify(command) != *expected {
            let shown = match command {
                S(s) => format!("shell {s:?}"),
                A(a) => format!("argv {a:?}"),
            };
            failures.push(format!("{shown}: expected {expected}"));
        }
    }
    assert!(TABLE.len() >= 80, "{} rows", TABLE.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn tokenizer_unquotes_and_borrows() {
    let words = split_script("ls 'a b' \"c\\\"d\" e\\ f plain").unwrap();
    let texts: Vec<&str> = words.iter().map(|w| w.text()).collect();
    assert_eq!(texts, ["ls", "a b", "c\"d", "e f", "plain"]);
    assert!(matches!(words[4].text, Cow::Borrowed(_)));
    assert!(matches!(words[1].text, Cow::Owned(_)));
}

#[test]
fn glob_flags() {
    let words = split_script("*.rs src/*.rs '*' ''*x -x* \\*").unwrap();
    let flags: Vec<(bool, bool)> = words
        .iter()
        .map(|w| (w.globbed(), w.may_be_option()))
        .collect();
    assert_eq!(
        flags,
        [
            (true, true),
            (true, false),
            (false, false),
            (true, true),
            (true, true),
            (false, false)
        ]
    );
}

#[test]
fn only_a_posix_shells_line_can_be_known_safe() {
    // Windows' shells are not parsed: every line they run is asked first.
    let safe = |shell: &str, line: &str| {
        is_known_safe(&Command::Argv(&cogni_protocol::shell_argv(shell, line)))
    };
    assert!(safe("/bin/bash", "ls"));
    assert!(!safe("cmd.exe", "dir"));
    assert!(!safe("powershell.exe", "Get-ChildItem"));
    assert!(!safe(r"C:\Windows\System32\cmd.exe", "ls"));
}
