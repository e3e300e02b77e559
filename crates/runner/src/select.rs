//! Which tasks a run runs: `ID`, `ID@AGENT`, `tag:NAME`, or all of them;
//! `--agent` sets the agent of every task not given one with `@`.

use cogni_spec::tasks::TaskFile;

/// One task to run, with the agent that runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    /// Index into [`TaskFile::tasks`].
    pub task: usize,
    /// The id of the agent that runs it.
    pub agent: String,
}

/// Resolve `selectors` against `file`, in the order given, without
/// duplicates. An unknown task, tag or agent is an error naming it.
pub fn select(
    file: &TaskFile,
    selectors: &[String],
    agent_override: Option<&str>,
) -> Result<Vec<Selected>, String> {
    let known_agent = |id: &str, source: &str| {
        if file.agent(id).is_some() {
            Ok(())
        } else {
            Err(format!(
                "{source}: unknown agent `{id}`; the task file declares: {}",
                list(file.agents.iter().map(|a| a.id.as_str()))
            ))
        }
    };
    if let Some(agent) = agent_override {
        known_agent(agent, "--agent")?;
    }
    let default_agent = |task: usize| {
        agent_override
            .map(str::to_string)
            .unwrap_or_else(|| file.tasks[task].agent.clone())
    };
    let index_of = |id: &str, selector: &str| {
        file.tasks.iter().position(|t| t.id == id).ok_or_else(|| {
            format!(
                "{selector}: unknown task `{id}`; the task file declares: {}",
                list(file.tasks.iter().map(|t| t.id.as_str()))
            )
        })
    };

    let mut chosen: Vec<Selected> = Vec::new();
    if selectors.is_empty() {
        chosen.extend((0..file.tasks.len()).map(|task| Selected {
            task,
            agent: default_agent(task),
        }));
    }
    for selector in selectors {
        if let Some(tag) = selector.strip_prefix("tag:") {
            let tagged: Vec<usize> = (0..file.tasks.len())
                .filter(|&i| file.tasks[i].tags.iter().any(|t| t == tag))
                .collect();
            if tagged.is_empty() {
                let mut tags: Vec<&str> = file
                    .tasks
                    .iter()
                    .flat_map(|t| t.tags.iter().map(String::as_str))
                    .collect();
                tags.sort_unstable();
                tags.dedup();
                return Err(format!(
                    "{selector}: no task has the tag `{tag}`; tags in the task file: {}",
                    list(tags.into_iter())
                ));
            }
            chosen.extend(tagged.into_iter().map(|task| Selected {
                task,
                agent: default_agent(task),
            }));
        } else if let Some((id, agent)) = selector.split_once('@') {
            let task = index_of(id, selector)?;
            known_agent(agent, selector)?;
            chosen.push(Selected {
                task,
                agent: agent.to_string(),
            });
        } else {
            let task = index_of(selector, selector)?;
            chosen.push(Selected {
                task,
                agent: default_agent(task),
            });
        }
    }
    let mut unique: Vec<Selected> = Vec::with_capacity(chosen.len());
    for s in chosen {
        if !unique.contains(&s) {
            unique.push(s);
        }
    }
    Ok(unique)
}

fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.map(|n| format!("`{n}`")).collect();
    if names.is_empty() {
        "(none)".into()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn file() -> TaskFile {
        TaskFile::parse(
            Path::new("/x/tasks.toml"),
            r#"
[[agents]]
id = "default"
[[agents]]
id = "big"
[[tasks]]
id = "a"
prompt = "p"
tags = ["smoke"]
[[tasks]]
id = "b"
prompt = "p"
agent = "big"
[[tasks]]
id = "c"
prompt = "p"
tags = ["smoke", "slow"]
"#,
        )
        .unwrap()
    }

    fn pick(selectors: &[&str], agent: Option<&str>) -> Result<Vec<(String, String)>, String> {
        let f = file();
        let selectors: Vec<String> = selectors.iter().map(|s| s.to_string()).collect();
        select(&f, &selectors, agent).map(|v| {
            v.into_iter()
                .map(|s| (f.tasks[s.task].id.clone(), s.agent))
                .collect()
        })
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(t, a)| (t.to_string(), a.to_string()))
            .collect()
    }

    #[test]
    fn no_selector_means_every_task_with_its_agent() {
        assert_eq!(
            pick(&[], None).unwrap(),
            pairs(&[("a", "default"), ("b", "big"), ("c", "default")])
        );
        assert_eq!(
            pick(&[], Some("big")).unwrap(),
            pairs(&[("a", "big"), ("b", "big"), ("c", "big")])
        );
    }

    #[test]
    fn ids_agents_and_tags_select_in_order_without_duplicates() {
        assert_eq!(
            pick(&["c", "a@big", "tag:smoke", "c"], None).unwrap(),
            pairs(&[("c", "default"), ("a", "big"), ("a", "default")])
        );
        assert_eq!(
            pick(&["tag:slow", "b@default"], Some("big")).unwrap(),
            pairs(&[("c", "big"), ("b", "default")])
        );
    }

    #[test]
    fn unknown_names_are_errors_that_list_the_known_ones() {
        let err = pick(&["zz"], None).unwrap_err();
        assert_eq!(
            err,
            "zz: unknown task `zz`; the task file declares: `a`, `b`, `c`"
        );
        let err = pick(&["a@nobody"], None).unwrap_err();
        assert!(err.contains("unknown agent `nobody`"), "{err}");
        let err = pick(&["tag:nope"], None).unwrap_err();
        assert!(err.contains("`slow`, `smoke`"), "{err}");
        let err = pick(&[], Some("ghost")).unwrap_err();
        assert!(err.starts_with("--agent: unknown agent `ghost`"), "{err}");
    }
}
