use super::*;

/// Write `dir/NAME/SKILL.md` with `description`.
fn skill(dir: &Path, name: &str, description: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    std::fs::write(
        dir.join(name).join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\nThe {name} procedure.\n"),
    )
    .unwrap();
}

/// A repository with a nested working directory, COGNI_HOME and `~`.
struct Tree {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    cwd: PathBuf,
    home: PathBuf,
    user_home: PathBuf,
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let base = cogni_sandbox::sys::canonicalize(tmp.path()).unwrap();
    let repo = base.join("repo");
    let cwd = repo.join("crates/app");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let home = base.join("cogni-home");
    let user_home = base.join("me");
    Tree {
        _tmp: tmp,
        repo,
        cwd,
        home,
        user_home,
    }
}

impl Tree {
    fn load(&self, trusted: bool, budget: usize) -> Skills {
        let roots = roots(&self.cwd, &self.home, Some(&self.user_home));
        Skills::load(roots, |_| trusted, budget)
    }
}

fn names(skills: &Skills) -> Vec<(&str, Scope)> {
    skills
        .all()
        .iter()
        .map(|s| (s.name.as_str(), s.scope))
        .collect()
}

#[test]
fn roots_go_from_the_working_directory_up_to_the_repository_then_the_users() {
    let t = tree();
    for dir in [
        t.cwd.join(".cogni/skills"),
        t.cwd.join(".agents/skills"),
        t.repo.join(".cogni/skills"),
        t.repo.join("crates/.agents/skills"),
        t.repo.parent().unwrap().join(".cogni/skills"),
        t.home.join("skills"),
        t.user_home.join(".agents/skills"),
    ] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let found: Vec<(PathBuf, Scope)> = roots(&t.cwd, &t.home, Some(&t.user_home))
        .into_iter()
        .map(|r| (r.dir, r.scope))
        .collect();
    assert_eq!(
        found,
        [
            (t.cwd.join(".cogni/skills"), Scope::Project),
            (t.cwd.join(".agents/skills"), Scope::Project),
            (t.repo.join("crates/.agents/skills"), Scope::Project),
            (t.repo.join(".cogni/skills"), Scope::Project),
            // Above the repository: not searched.
            (t.home.join("skills"), Scope::User),
            (t.user_home.join(".agents/skills"), Scope::User),
        ]
    );
}

#[test]
fn working_in_the_home_directory_its_skills_are_the_users() {
    let t = tree();
    std::fs::create_dir_all(t.user_home.join(".agents/skills")).unwrap();
    let found = roots(&t.user_home, &t.home, Some(&t.user_home));
    assert_eq!(
        found,
        [Root {
            dir: t.user_home.join(".agents/skills"),
            scope: Scope::User
        }]
    );
}

#[test]
fn nearer_skills_win_over_farther_and_project_over_user() {
    let t = tree();
    skill(&t.cwd.join(".cogni/skills"), "lint", "near lint");
    skill(&t.repo.join(".agents/skills"), "lint", "far lint");
    skill(&t.repo.join(".agents/skills"), "deploy", "project deploy");
    skill(&t.home.join("skills"), "deploy", "user deploy");
    skill(&t.user_home.join(".agents/skills"), "notes", "user notes");
    let s = t.load(true, DEFAULT_MAX_LISTING_BYTES);
    assert_eq!(
        names(&s),
        [
            ("lint", Scope::Project),
            ("deploy", Scope::Project),
            ("notes", Scope::User)
        ]
    );
    assert_eq!(s.get("lint").unwrap().description, "near lint");
    assert_eq!(s.get("deploy").unwrap().description, "project deploy");
    let shadowed: Vec<(&Path, &Reason)> = s
        .skipped()
        .iter()
        .map(|k| (k.dir.as_path(), &k.reason))
        .collect();
    assert_eq!(
        shadowed,
        [
            (
                t.repo.join(".agents/skills/lint").as_path(),
                &Reason::Shadowed(t.cwd.join(".cogni/skills/lint"))
            ),
            (
                t.home.join("skills/deploy").as_path(),
                &Reason::Shadowed(t.repo.join(".agents/skills/deploy"))
            ),
        ]
    );
    assert!(s.warnings().is_empty(), "shadowing is no news");
}

#[test]
fn untrusted_project_skills_are_ignored_and_said_so() {
    let t = tree();
    skill(&t.repo.join(".cogni/skills"), "evil", "project");
    skill(&t.home.join("skills"), "mine", "user");
    let s = t.load(false, DEFAULT_MAX_LISTING_BYTES);
    assert_eq!(names(&s), [("mine", Scope::User)]);
    assert_eq!(s.skipped()[0].reason, Reason::Untrusted);
    let warnings = s.warnings();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("not trusted"), "{warnings:?}");
    assert!(
        crate::paths::tests::slashed(&warnings[0]).contains(".cogni/skills/evil"),
        "{warnings:?}"
    );
}

#[test]
fn git_and_node_modules_are_skipped_and_groups_are_searched() {
    let t = tree();
    let root = t.repo.join(".cogni/skills");
    skill(&root.join("node_modules"), "dep", "d");
    skill(&root.join(".git"), "obj", "d");
    skill(&root.join("team"), "grouped", "d");
    skill(&root.join("a/b/c"), "too-deep", "d");
    // A skill's own folders hold no more skills.
    skill(&root, "outer", "d");
    skill(&root.join("outer/references"), "inner", "d");
    let s = t.load(true, DEFAULT_MAX_LISTING_BYTES);
    let mut found: Vec<&str> = s.all().iter().map(|s| s.name.as_str()).collect();
    found.sort();
    assert_eq!(found, ["grouped", "outer"]);
}

#[test]
fn the_listing_keeps_to_its_budget_and_says_what_is_left_out() {
    let t = tree();
    let root = t.repo.join(".cogni/skills");
    skill(&root, "a", "short");
    skill(&root, "b", &"long ".repeat(40));
    skill(&root, "c", "also short");
    let full = t.load(true, DEFAULT_MAX_LISTING_BYTES);
    assert!(full.left_out().is_empty());
    let budget = "- a: short\n- c: also short\n".len();
    let s = t.load(true, budget);
    assert_eq!(s.listing(), "- a: short\n- c: also short\n");
    assert_eq!(s.left_out(), ["b"]);
    assert_eq!(s.all().len(), 3, "a left-out skill is still loaded");
    let warnings = s.warnings();
    assert!(
        warnings[0].starts_with("skills left out of the system prompt's listing"),
        "{warnings:?}"
    );
    assert!(warnings[0].contains(&format!("max_listing_bytes = {budget}): b;")));
    let none = t.load(true, 0);
    assert_eq!(none.listing(), "");
    assert_eq!(none.left_out(), ["a", "b", "c"]);
}

#[test]
fn problems_are_warnings_and_the_skill_still_loads() {
    let t = tree();
    let root = t.home.join("skills");
    std::fs::create_dir_all(root.join("pdf")).unwrap();
    std::fs::write(
        root.join("pdf/SKILL.md"),
        "---\nname: forms\ndescription: Fill forms\n---\nSteps.\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("binary")).unwrap();
    std::fs::write(root.join("binary/SKILL.md"), [0xff, 0, 0xfe]).unwrap();
    let s = t.load(true, DEFAULT_MAX_LISTING_BYTES);
    assert_eq!(names(&s), [("forms", Scope::User)]);
    let warnings = s.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].starts_with("skill not loaded: "),
        "{warnings:?}"
    );
    assert!(warnings[0].contains("not UTF-8"), "{warnings:?}");
    assert!(
        warnings[1].starts_with("skill `forms` (") && warnings[1].contains("folder's (`pdf`)"),
        "{warnings:?}"
    );
}

#[test]
fn mentions_are_dollar_names_of_skills() {
    let t = tree();
    let root = t.home.join("skills");
    for name in ["pdf", "lint", "release-notes"] {
        skill(&root, name, "d");
    }
    let s = t.load(true, DEFAULT_MAX_LISTING_BYTES);
    let mentioned =
        |text: &str| -> Vec<String> { s.mentioned(text).iter().map(|s| s.name.clone()).collect() };
    assert_eq!(
        mentioned("use $lint, then $pdf. Again $lint and ($release-notes)"),
        ["lint", "pdf", "release-notes"]
    );
    assert_eq!(mentioned("$pdf-: go"), ["pdf"]);
    // Not mentions: no such skill, inside a word, escaped, a longer name,
    // shell variables.
    for text in [
        "costs $5",
        "a$pdf",
        "\\$pdf",
        "$pdfs",
        "$pdf_x",
        "$PDF",
        "$$pdf",
        "echo $HOME",
    ] {
        assert!(mentioned(text).is_empty(), "{text}");
    }
}
