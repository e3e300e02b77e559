//! `cogni completions SHELL` and `cogni man`, checked for every command
//! the binary's own `--help` lists: bash completes each command and each of
//! its options when the script is sourced, the other shells' scripts name
//! them, and each command has a manual page with its options.

use crate::cli::{stderr_of, stdout_of, Env};
use std::collections::BTreeSet;

fn run(env: &Env, args: &[&str]) -> String {
    let out = env.cmd().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr_of(&out));
    stdout_of(&out)
}

/// Every command path (`[]`, `["run"]`, `["sandbox", "check"]`, ...) from
/// the `Commands:` sections of `--help`, without `help`.
fn commands(env: &Env) -> Vec<Vec<String>> {
    let mut all = vec![Vec::new()];
    let mut i = 0;
    while i < all.len() {
        let path = all[i].clone();
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = run(env, &args);
        let section = help
            .split_once("Commands:\n")
            .map_or("", |(_, rest)| rest.split("\n\n").next().unwrap_or(""));
        for line in section.lines() {
            let name = line.split_whitespace().next().unwrap_or("");
            if !name.is_empty() && name != "help" {
                let mut child = path.clone();
                child.push(name.to_string());
                all.push(child);
            }
        }
        i += 1;
    }
    all
}

fn children(all: &[Vec<String>], path: &[String]) -> BTreeSet<String> {
    all.iter()
        .filter(|c| c.len() == path.len() + 1 && c.starts_with(path))
        .map(|c| c[path.len()].clone())
        .collect()
}

/// The long options `--help` of a command lists (without --help, --version).
fn long_options(env: &Env, path: &[String]) -> BTreeSet<String> {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let help = run(env, &args);
    let mut options = BTreeSet::new();
    for line in help.lines().filter(|l| l.trim_start().starts_with('-')) {
        for word in line.split([' ', ',', '=', '<']) {
            if let Some(name) = word.strip_prefix("--") {
                let name: String = name
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                if !name.is_empty() && name != "help" && name != "version" {
                    options.insert(name);
                }
            }
        }
    }
    options
}

#[test]
fn the_commands_are_found() {
    let env = Env::new();
    let all = commands(&env);
    for expected in [
        vec!["run"],
        vec!["merge"],
        vec!["sandbox", "check"],
        vec!["completions"],
        vec!["man"],
    ] {
        assert!(
            all.iter().any(|c| c == &expected),
            "{expected:?} not in {all:?}"
        );
    }
}

/// What bash completes after `words` (the last one being completed).
fn bash_complete(env: &Env, script: &std::path::Path, words: &[&str]) -> BTreeSet<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    let program = format!(
        "source '{}'\nCOMP_WORDS=({})\nCOMP_CWORD={cword}\n_cogni cogni '{}' '{prev}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script.display(),
        quoted.join(" "),
        words[cword]
    );
    let out = std::process::Command::new("bash")
        .arg("--norc")
        .arg("-c")
        .arg(&program)
        .current_dir(env.work())
        .output()
        .unwrap();
    assert!(out.status.success(), "{program}\n{}", stderr_of(&out));
    stdout_of(&out)
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn bash_completes_every_command_and_its_options() {
    let env = Env::new();
    let script = env.write("cogni.bash", &run(&env, &["completions", "bash"]));
    let all = commands(&env);
    for path in &all {
        let mut words: Vec<&str> = vec!["cogni"];
        words.extend(path.iter().map(String::as_str));
        let subcommands = children(&all, path);
        if !subcommands.is_empty() {
            words.push("");
            let offered = bash_complete(&env, &script, &words);
            words.pop();
            for name in &subcommands {
                assert!(
                    offered.contains(name),
                    "cogni {path:?}: {name} not in {offered:?}"
                );
            }
        }
        words.push("--");
        let offered = bash_complete(&env, &script, &words);
        for option in long_options(&env, path) {
            assert!(
                offered.contains(&format!("--{option}")),
                "cogni {path:?}: --{option} not offered: {offered:?}"
            );
        }
    }
    // Values the definitions know are completed too.
    let offered = bash_complete(&env, &script, &["cogni", "completions", ""]);
    for shell in ["bash", "zsh", "fish", "powershell"] {
        assert!(offered.contains(shell), "{offered:?}");
    }
}

#[test]
fn zsh_fish_and_powershell_scripts_name_every_command_and_option() {
    let env = Env::new();
    let all = commands(&env);
    for shell in ["zsh", "fish", "powershell"] {
        let script = run(&env, &["completions", shell]);
        for path in all.iter().filter(|p| !p.is_empty()) {
            let name = path.last().unwrap();
            assert!(script.contains(name.as_str()), "{shell}: no {name}");
            for option in long_options(&env, path) {
                assert!(
                    script.contains(&option),
                    "{shell}: {path:?} has no {option}"
                );
            }
        }
    }
    let out = env.cmd().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("possible values: bash"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn every_command_has_a_manual_page_with_its_options() {
    let env = Env::new();
    let all = commands(&env);
    let dir = env.dir.path().join("man");
    let printed = run(&env, &["man", "--out-dir", dir.to_str().unwrap()]);
    assert_eq!(printed.trim(), dir.display().to_string());
    for path in &all {
        let mut args = vec!["man"];
        args.extend(path.iter().map(String::as_str));
        let page = run(&env, &args);
        let title = std::iter::once("cogni")
            .chain(path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("-");
        assert!(
            page.starts_with(".ie") && page.contains(&format!(".TH {title} 1")),
            "{title}: {page}"
        );
        for option in long_options(&env, path) {
            let roff = format!("\\-\\-{}", option.replace('-', "\\-"));
            assert!(page.contains(&roff), "{title}: no {roff}");
        }
        for child in children(&all, path) {
            // roff writes a name's hyphens as `\-` (`cogni\-mcp\-server`).
            let child = child.replace('-', "\\-");
            assert!(
                page.contains(&format!("{title}\\-{child}")) || page.contains(&child),
                "{title}: {child}"
            );
        }
        let file = std::fs::read_to_string(dir.join(format!("{title}.1")))
            .unwrap_or_else(|e| panic!("{title}.1: {e}"));
        assert_eq!(file, page, "{title}");
    }
    let out = env.cmd().args(["man", "sandbox", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("`cogni sandbox` has no command `nope`; it has: check"),
        "{}",
        stderr_of(&out)
    );
}
