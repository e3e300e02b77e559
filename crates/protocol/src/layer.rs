//! Layers of settings merged key by key, with one rule: a table merges
//! key by key (each key by the same rule), a map of named tables merges
//! name by name, and any other value (a string, a number, a list, an
//! entry that is one unit) is replaced by the later layer's when the later
//! layer sets it. Lists whose layers add up (effects, guardrails) say so
//! in their type, [`AddUp`].
//!
//! cogni.toml's layers (user, project, `--config`, environment, flags)
//! and the `[agent]` strategies of task files (task over agent over
//! config) are merged this way. A settings struct is declared inside
//! [`layered!`](crate::layered), which writes its [`Merge`] from its
//! fields, so a new key cannot be left out of the merge. The trait lives
//! here, in the crate every layer depends on, so each crate can say how
//! its own value types merge ([`replaced_whole!`](crate::replaced_whole)).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A layer that a later layer of the same shape goes over.
pub trait Merge {
    /// Put `over` on top of `self`: what `over` sets wins.
    fn merge(&mut self, over: Self);
}

/// An unset key keeps what the earlier layer had; set in both, the two
/// merge by the value's own rule.
impl<T: Merge> Merge for Option<T> {
    fn merge(&mut self, over: Self) {
        match (self.as_mut(), over) {
            (_, None) => {}
            (Some(base), Some(over)) => base.merge(over),
            (None, over) => *self = over,
        }
    }
}

/// Named tables merge name by name; a new name is added.
impl<V: Merge> Merge for BTreeMap<String, V> {
    fn merge(&mut self, over: Self) {
        for (name, value) in over {
            match self.get_mut(&name) {
                Some(base) => base.merge(value),
                None => {
                    self.insert(name, value);
                }
            }
        }
    }
}

/// Values a later layer replaces whole.
#[macro_export]
macro_rules! replaced_whole {
    ($($t:ty),* $(,)?) => {
        $(impl $crate::layer::Merge for $t {
            fn merge(&mut self, over: Self) {
                *self = over;
            }
        })*
    };
}

replaced_whole!(String, bool, u8, u16, u32, u64, usize, i32, i64, f32, f64, PathBuf);
replaced_whole!(
    crate::ApprovalPolicy,
    crate::SandboxMode,
    crate::ContextStrategyKind,
    crate::EditTool,
);

/// A list is a value: a later layer's list replaces it.
impl<T> Merge for Vec<T> {
    fn merge(&mut self, over: Self) {
        *self = over;
    }
}

/// A list whose layers add up: a later layer's items come after the
/// earlier layers' and never remove them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct AddUp<T>(pub Vec<T>);

impl<T> Default for AddUp<T> {
    fn default() -> Self {
        AddUp(Vec::new())
    }
}

impl<T> Merge for AddUp<T> {
    fn merge(&mut self, over: Self) {
        self.0.extend(over.0);
    }
}

/// Declare a settings struct (attributes, doc comments and all) and write
/// its [`Merge`]: every field merges by its type's rule, in order.
#[macro_export]
macro_rules! layered {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $field:ident : $ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $(
                $(#[$fmeta])*
                $fvis $field: $ty,
            )*
        }

        impl $crate::layer::Merge for $name {
            fn merge(&mut self, over: Self) {
                $( $crate::layer::Merge::merge(&mut self.$field, over.$field); )*
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::layered! {
        /// A table with a nested table, a map of named tables, a list and
        /// a list that adds up.
        #[derive(Debug, Clone, Default, PartialEq, Deserialize)]
        struct Layer {
            name: Option<String>,
            inner: Option<Inner>,
            #[serde(default)]
            named: BTreeMap<String, Inner>,
            list: Option<Vec<u32>>,
            #[serde(default)]
            added: AddUp<u32>,
        }
    }

    crate::layered! {
        #[derive(Debug, Clone, Default, PartialEq, Deserialize)]
        struct Inner {
            a: Option<u32>,
            b: Option<u32>,
        }
    }

    fn layer(text: &str) -> Layer {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn tables_merge_key_by_key_and_values_are_replaced() {
        let mut base = layer(
            "name = \"x\"\nlist = [1, 2]\nadded = [1]\n[inner]\na = 1\nb = 2\n[named.one]\na = 1\n",
        );
        base.merge(layer(
            "list = [3]\nadded = [2]\n[inner]\nb = 20\n[named.one]\nb = 2\n[named.two]\na = 3\n",
        ));
        assert_eq!(base.name.as_deref(), Some("x"), "unset keeps the earlier");
        assert_eq!(base.list, Some(vec![3]), "a list is replaced");
        assert_eq!(base.added, AddUp(vec![1, 2]), "AddUp adds up");
        assert_eq!(
            base.inner,
            Some(Inner {
                a: Some(1),
                b: Some(20)
            })
        );
        assert_eq!(
            base.named["one"],
            Inner {
                a: Some(1),
                b: Some(2)
            }
        );
        assert_eq!(base.named["two"].a, Some(3));
    }
}
