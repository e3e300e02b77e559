//! Splitting a run across machines: `--shard K/N` and `--shard auto`.
//!
//! Every attempt (task id, agent, repeat index) gets a stable 64-bit hash;
//! the attempts, in hash order, are cut into N contiguous ranges of equal
//! size (sizes differ by at most one). So a shard depends only on the set
//! of attempts, never on the order of the task file, every attempt is in
//! exactly one shard, and adding or removing an attempt moves only the few
//! attempts next to the cuts between ranges.

use std::fmt;

/// One part of a sharded run: `index` of `total`, counted from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// K of `K/N`, from 1.
    pub index: u32,
    /// N of `K/N`, at most [`MAX_SHARDS`].
    pub total: u32,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.total)
    }
}

/// Most shards a run may have.
pub const MAX_SHARDS: u32 = 10_000;

impl Shard {
    fn new(index: u32, total: u32) -> Result<Shard, String> {
        if total == 0 {
            return Err("the number of shards must be at least 1".into());
        }
        if total > MAX_SHARDS {
            return Err(format!("at most {MAX_SHARDS} shards, not {total}"));
        }
        if index == 0 || index > total {
            return Err(format!(
                "shard {index} of {total} does not exist: shards count from 1 to {total}"
            ));
        }
        Ok(Shard { index, total })
    }
}

/// The value of `--shard`: `K/N`, `auto` (index and total from the CI
/// system's variables) or `auto/N` (the index from the environment, the
/// total given: a Kubernetes indexed Job).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardArg {
    /// `K/N`, as given.
    Fixed(Shard),
    /// `auto` or `auto/N`: resolved from the CI system's variables when
    /// the run starts.
    Auto {
        /// N of `auto/N`; `None` for `auto` (the environment gives it too).
        total: Option<u32>,
    },
}

impl std::str::FromStr for ShardArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let usage = "write it as K/N (e.g. 2/4: the second of four shards), auto, or auto/N";
        let (left, right) = match text.split_once('/') {
            Some((l, r)) => (l.trim(), Some(r.trim())),
            None => (text.trim(), None),
        };
        let total = match right {
            None => None,
            Some(r) => Some(number(r).map_err(|e| format!("`{text}`: the total {e}; {usage}"))?),
        };
        if left == "auto" {
            if let Some(total) = total {
                Shard::new(1, total).map_err(|e| format!("`{text}`: {e}"))?;
            }
            return Ok(ShardArg::Auto { total });
        }
        let Some(total) = total else {
            return Err(format!("`{text}` is not a shard; {usage}"));
        };
        let index = number(left).map_err(|e| format!("`{text}`: the index {e}; {usage}"))?;
        Shard::new(index, total)
            .map(ShardArg::Fixed)
            .map_err(|e| format!("`{text}`: {e}"))
    }
}

fn number(text: &str) -> Result<u32, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{text}` is not a whole number"));
    }
    text.parse::<u32>()
        .map_err(|_| format!("`{text}` is too large"))
}

/// A CI system's shard variables: the index variable (and whether it
/// counts from 0) and the total variable, if the system has one.
struct System {
    name: &'static str,
    index: &'static str,
    zero_based: bool,
    total: Option<&'static str>,
}

const SYSTEMS: [System; 3] = [
    System {
        name: "GitLab",
        index: "CI_NODE_INDEX",
        zero_based: false,
        total: Some("CI_NODE_TOTAL"),
    },
    System {
        name: "Buildkite",
        index: "BUILDKITE_PARALLEL_JOB",
        zero_based: true,
        total: Some("BUILDKITE_PARALLEL_JOB_COUNT"),
    },
    System {
        name: "Kubernetes",
        index: "JOB_COMPLETION_INDEX",
        zero_based: true,
        total: None,
    },
];

/// The variables `--shard auto` reads, for messages.
pub const AUTO_VARIABLES: &str = "CI_NODE_INDEX and CI_NODE_TOTAL (GitLab `parallel:`), \
    BUILDKITE_PARALLEL_JOB and BUILDKITE_PARALLEL_JOB_COUNT (Buildkite `parallelism`), \
    JOB_COMPLETION_INDEX (a Kubernetes indexed Job, with --shard auto/N)";

impl ShardArg {
    /// The shard this process runs, and where it came from (`--shard 2/4`,
    /// `GitLab CI_NODE_INDEX=2 CI_NODE_TOTAL=4`). `var` reads the
    /// environment. A variable that is set but unusable is an error, and so
    /// is `auto` without any: never a silent run of everything.
    pub fn resolve(self, var: &dyn Fn(&str) -> Option<String>) -> Result<(Shard, String), String> {
        let given = match self {
            ShardArg::Fixed(shard) => return Ok((shard, format!("--shard {shard}"))),
            ShardArg::Auto { total } => total,
        };
        let mut found: Vec<(Shard, String)> = Vec::new();
        for system in &SYSTEMS {
            if let Some(shard) = system.read(given, var)? {
                found.push(shard);
            }
        }
        match found.as_slice() {
            [] => Err(format!(
                "--shard auto: no CI shard variables are set; cogni reads {AUTO_VARIABLES}. \
                 Outside such a job, pass the shard as --shard K/N"
            )),
            [one] => Ok(one.clone()),
            [first, rest @ ..] => {
                if let Some(other) = rest.iter().find(|(s, _)| *s != first.0) {
                    Err(format!(
                        "--shard auto: the CI variables disagree: {} says shard {}, {} says shard {}; \
                         unset the ones that do not belong to this job or pass --shard K/N",
                        first.1, first.0, other.1, other.0
                    ))
                } else {
                    Ok(first.clone())
                }
            }
        }
    }
}

impl System {
    fn read(
        &self,
        given: Option<u32>,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<(Shard, String)>, String> {
        let index_text = var(self.index);
        let total_text = self.total.and_then(|name| var(name).map(|v| (name, v)));
        if index_text.is_none() && total_text.is_none() {
            return Ok(None);
        }
        let bad = |name: &str, value: &str, why: String| {
            format!(
                "--shard auto: {} sets {name}={value:?}, which {why}; fix the job's \
                 configuration or pass --shard K/N",
                self.name
            )
        };
        let total = match (&total_text, given) {
            (Some((name, value)), given) => {
                let total = number(value.trim())
                    .map_err(|e| bad(name, value, format!("is not usable: {e}")))?;
                if total == 0 {
                    return Err(bad(name, value, "is not a number of shards".into()));
                }
                if let Some(given) = given.filter(|g| *g != total) {
                    return Err(bad(
                        name,
                        value,
                        format!("disagrees with --shard auto/{given}"),
                    ));
                }
                total
            }
            (None, Some(given)) => given,
            (None, None) => {
                return Err(format!(
                    "--shard auto: {} sets {}, but not the number of shards: pass it as \
                     --shard auto/N (N = the Job's completions)",
                    self.name, self.index
                ))
            }
        };
        let Some(index_text) = index_text else {
            let (name, value) = total_text
                .as_ref()
                .map_or(("", ""), |(n, v)| (*n, v.as_str()));
            if total == 1 {
                // GitLab sets CI_NODE_TOTAL=1 (and no index) in a job
                // without `parallel:`: the one shard is the whole run.
                return Ok(Some((
                    Shard { index: 1, total },
                    format!("{} {name}={value} (not a parallel job)", self.name),
                )));
            }
            return Err(bad(
                name,
                value,
                format!("asks for {total} shards, but {} is not set", self.index),
            ));
        };
        let raw = number(index_text.trim())
            .map_err(|e| bad(self.index, &index_text, format!("is not usable: {e}")))?;
        let index = if self.zero_based {
            raw.checked_add(1)
        } else {
            Some(raw)
        };
        let shard = index
            .ok_or_else(|| "too large".to_string())
            .and_then(|index| Shard::new(index, total))
            .map_err(|e| bad(self.index, &index_text, format!("is out of range: {e}")))?;
        let mut source = format!("{} {}={index_text}", self.name, self.index);
        if let Some((name, value)) = &total_text {
            source.push_str(&format!(" {name}={value}"));
        } else {
            source.push_str(&format!(" (of {total})"));
        }
        Ok(Some((shard, source)))
    }
}

/// The stable hash of one attempt: FNV-1a over the task id, the agent and
/// the repeat index, finished with a 64-bit mixer. Never changes between
/// versions or machines: shards of one run may be built apart.
pub fn attempt_hash(task: &str, agent: &str, attempt: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    feed(task.as_bytes());
    feed(&[0xff]);
    feed(agent.as_bytes());
    feed(&[0xff]);
    feed(&attempt.to_le_bytes());
    // splitmix64's finaliser: FNV's low bits are weak on short keys.
    let mut z = h;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The shard (1-based) of each attempt `(task, agent, attempt)` among
/// `total` shards, in the order given. The order of `attempts` does not
/// matter; duplicates are not expected.
pub fn partition(attempts: &[(&str, &str, u32)], total: u32) -> Vec<u32> {
    let mut order: Vec<(u64, usize)> = attempts
        .iter()
        .enumerate()
        .map(|(i, (task, agent, n))| (attempt_hash(task, agent, *n), i))
        .collect();
    // Ties (never seen in practice) break by the key, not the position.
    order.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| attempts[a.1].cmp(&attempts[b.1]))
    });
    let count = order.len() as u64;
    let mut shards = vec![0; attempts.len()];
    for (rank, (_, i)) in order.into_iter().enumerate() {
        shards[i] = (rank as u64 * u64::from(total) / count.max(1)) as u32 + 1;
    }
    shards
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn attempts(tasks: usize, agents: &[&str], repeat: u32) -> Vec<(String, String, u32)> {
        let mut out = Vec::new();
        for t in 0..tasks {
            for agent in agents {
                for n in 1..=repeat {
                    out.push((format!("task-{t}"), agent.to_string(), n));
                }
            }
        }
        out
    }

    fn keys(list: &[(String, String, u32)]) -> Vec<(&str, &str, u32)> {
        list.iter()
            .map(|(t, a, n)| (t.as_str(), a.as_str(), *n))
            .collect()
    }

    #[test]
    fn every_attempt_is_in_exactly_one_shard_of_balanced_size() {
        for count in [0, 1, 2, 5, 17, 100, 333] {
            let all = attempts(count, &["a", "b"], 3);
            let keys = keys(&all);
            for total in 1..=16 {
                let shards = partition(&keys, total);
                assert_eq!(shards.len(), keys.len());
                let mut sizes = vec![0usize; total as usize];
                for s in &shards {
                    assert!((1..=total).contains(s));
                    sizes[*s as usize - 1] += 1;
                }
                let (min, max) = (sizes.iter().min(), sizes.iter().max());
                assert!(
                    max.unwrap() - min.unwrap() <= 1,
                    "{count} tasks, {total} shards: {sizes:?}"
                );
            }
        }
    }

    #[test]
    fn the_order_of_the_file_does_not_matter() {
        let all = attempts(50, &["x"], 2);
        let mut reversed = all.clone();
        reversed.reverse();
        let assign = |list: &[(String, String, u32)]| -> HashMap<(String, String, u32), u32> {
            list.iter()
                .cloned()
                .zip(partition(&keys(list), 7))
                .collect()
        };
        assert_eq!(assign(&all), assign(&reversed));
    }

    #[test]
    fn adding_tasks_moves_only_attempts_at_the_cuts() {
        for total in 1..=16u32 {
            let before = attempts(200, &["a"], 1);
            let after = attempts(203, &["a"], 1);
            let old = partition(&keys(&before), total);
            let new = partition(&keys(&after), total);
            let moved = (0..before.len()).filter(|&i| old[i] != new[i]).count();
            // Each added attempt shifts every cut by less than one place:
            // at most one attempt per cut moves.
            assert!(
                moved <= 3 * (total as usize - 1),
                "{total} shards: {moved} of 200 attempts moved"
            );
        }
    }

    #[test]
    fn the_hash_is_fixed() {
        // Shards built by different cogni versions must agree.
        assert_eq!(attempt_hash("fix-add", "default", 1), 0x25c9_03a2_033a_abb5);
    }

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn auto(total: Option<u32>, vars: &[(&str, &str)]) -> Result<Shard, String> {
        ShardArg::Auto { total }.resolve(&env(vars)).map(|(s, _)| s)
    }

    #[test]
    fn shard_arguments_parse_or_say_how_to_write_them() {
        let parse = |s: &str| s.parse::<ShardArg>();
        assert_eq!(
            parse("2/4"),
            Ok(ShardArg::Fixed(Shard { index: 2, total: 4 }))
        );
        assert_eq!(parse("auto"), Ok(ShardArg::Auto { total: None }));
        assert_eq!(parse("auto/8"), Ok(ShardArg::Auto { total: Some(8) }));
        for bad in [
            "0/4", "5/4", "1/0", "x/4", "2", "-1/4", "1/4/2", "auto/0", "",
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains(&format!("`{bad}`")), "{bad}: {err}");
        }
        assert!(parse("0/4").unwrap_err().contains("count from 1"));
    }

    #[test]
    fn auto_reads_each_ci_system() {
        let gitlab = [("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "4")];
        assert_eq!(auto(None, &gitlab), Ok(Shard { index: 2, total: 4 }));
        let buildkite = [
            ("BUILDKITE_PARALLEL_JOB", "0"),
            ("BUILDKITE_PARALLEL_JOB_COUNT", "3"),
        ];
        assert_eq!(auto(None, &buildkite), Ok(Shard { index: 1, total: 3 }));
        let k8s = [("JOB_COMPLETION_INDEX", "7")];
        assert_eq!(auto(Some(8), &k8s), Ok(Shard { index: 8, total: 8 }));
        // A GitLab job without `parallel:` is the one shard of one.
        assert_eq!(
            auto(None, &[("CI_NODE_TOTAL", "1")]),
            Ok(Shard { index: 1, total: 1 })
        );
    }

    #[test]
    fn auto_refuses_what_it_cannot_use() {
        type Case<'a> = (Option<u32>, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case] = &[
            (None, &[], "no CI shard variables"),
            (None, &[("CI_NODE_INDEX", "2")], "not the number of shards"),
            (None, &[("CI_NODE_TOTAL", "4")], "CI_NODE_INDEX is not set"),
            (
                None,
                &[("CI_NODE_INDEX", "two"), ("CI_NODE_TOTAL", "4")],
                "CI_NODE_INDEX=\"two\"",
            ),
            (
                None,
                &[("CI_NODE_INDEX", "5"), ("CI_NODE_TOTAL", "4")],
                "out of range",
            ),
            (
                None,
                &[("CI_NODE_INDEX", "0"), ("CI_NODE_TOTAL", "4")],
                "count from 1",
            ),
            (
                None,
                &[("CI_NODE_INDEX", "1"), ("CI_NODE_TOTAL", "0")],
                "CI_NODE_TOTAL=\"0\"",
            ),
            (
                None,
                &[
                    ("BUILDKITE_PARALLEL_JOB", "3"),
                    ("BUILDKITE_PARALLEL_JOB_COUNT", "3"),
                ],
                "out of range",
            ),
            (None, &[("JOB_COMPLETION_INDEX", "1")], "--shard auto/N"),
            (Some(2), &[("JOB_COMPLETION_INDEX", "2")], "out of range"),
            (
                Some(3),
                &[("CI_NODE_INDEX", "1"), ("CI_NODE_TOTAL", "4")],
                "disagrees with --shard auto/3",
            ),
            (
                None,
                &[
                    ("CI_NODE_INDEX", "1"),
                    ("CI_NODE_TOTAL", "4"),
                    ("BUILDKITE_PARALLEL_JOB", "1"),
                    ("BUILDKITE_PARALLEL_JOB_COUNT", "4"),
                ],
                "disagree",
            ),
        ];
        for (total, vars, expected) in cases {
            let err = auto(*total, vars).unwrap_err();
            assert!(err.contains(expected), "{vars:?}: {err}");
        }
    }
}
