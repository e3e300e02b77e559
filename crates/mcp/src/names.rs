//! The names MCP tools are offered under: `mcp__SERVER__TOOL`, in the
//! characters every provider accepts, at most 64 of them. A name that had
//! to be cut, or that would clash with another, ends in a short hash of
//! the full name, so it stays the same from one session to the next.

use std::collections::HashSet;

/// What every offered name starts with.
pub const PREFIX: &str = "mcp__";
/// The longest name providers accept.
pub const MAX_LEN: usize = 64;
/// `_` and six hex digits.
const HASH_LEN: usize = 7;

/// `mcp__SERVER__TOOL` made of `[a-zA-Z0-9_-]`; other characters become
/// `_`.
fn raw(server: &str, tool: &str) -> String {
    format!("{PREFIX}{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a: stable across builds and platforms (unlike std's hasher).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The name cut to leave room for the hash of `full`, then the hash.
fn hashed(name: &str, full: &str) -> String {
    let keep = name.len().min(MAX_LEN - HASH_LEN);
    format!("{}_{:06x}", &name[..keep], fnv1a(full) & 0xff_ffff)
}

/// Gives each tool of each server its offered name, unique among `taken`
/// (which it extends).
#[derive(Debug, Default)]
pub struct Namer {
    taken: HashSet<String>,
}

impl Namer {
    /// The name for `server`'s `tool`.
    pub fn name(&mut self, server: &str, tool: &str) -> String {
        let full = format!("{PREFIX}{server}__{tool}");
        let plain = raw(server, tool);
        let name = if plain.len() <= MAX_LEN && !self.taken.contains(&plain) {
            plain
        } else {
            let mut name = hashed(&plain, &full);
            // A clash of hashes too: salt until free (practically never).
            let mut salt = 0;
            while self.taken.contains(&name) {
                salt += 1;
                name = hashed(&plain, &format!("{full}#{salt}"));
            }
            name
        };
        self.taken.insert(name.clone());
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        name.len() <= MAX_LEN
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn plain_names_stay_as_they_are() {
        let mut namer = Namer::default();
        assert_eq!(
            namer.name("filesystem", "read_file"),
            "mcp__filesystem__read_file"
        );
        assert_eq!(
            namer.name("everything", "get-tiny-image"),
            "mcp__everything__get-tiny-image"
        );
    }

    #[test]
    fn odd_characters_become_underscores_and_a_clash_gets_a_hash() {
        let mut namer = Namer::default();
        let first = namer.name("s", "read.file");
        assert_eq!(first, "mcp__s__read_file");
        let second = namer.name("s", "read file");
        assert_ne!(second, first);
        assert!(second.starts_with("mcp__s__read_file_"), "{second}");
        assert!(valid(&second));
        // Stable: the same inputs give the same names.
        let mut again = Namer::default();
        assert_eq!(again.name("s", "read.file"), first);
        assert_eq!(again.name("s", "read file"), second);
        let unicode = namer.name("s", "lire_fichier_é");
        assert!(valid(&unicode), "{unicode}");
    }

    #[test]
    fn long_names_are_cut_to_64_with_a_hash() {
        let mut namer = Namer::default();
        let long = "a".repeat(80);
        let one = namer.name("server", &long);
        let two = namer.name("server", &format!("{long}b"));
        assert_eq!(one.len(), MAX_LEN);
        assert_eq!(two.len(), MAX_LEN);
        assert_ne!(one, two);
        assert!(valid(&one) && valid(&two));
        assert!(one.starts_with("mcp__server__aaa"));
    }
}
