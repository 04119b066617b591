//! Folds: a question file split N ways by position, to warm a cache on some parts and
//! evaluate on the others without the two ever sharing a question.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

/// Part `part` of a file split `parts` ways, or with `complement` every other part.
///
/// Question `index` (0-based, among the questions read from one file) belongs to part
/// `index % parts`. A fold and its [`complement`](Fold::complement) select disjoint sets
/// whose union is every question, so `cache warm --fold 0/2` and `eval --fold 1/2` (or
/// `--fold-complement 0/2`) see the two halves of one file. Written `I/N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fold {
    pub part: u32,
    pub parts: u32,
    /// Every part but `part`.
    #[serde(default)]
    pub complement: bool,
}

/// Why `I/N` does not name a fold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FoldError {
    #[error("`{0}` is not a fold: expected I/N, e.g. 0/2 (part I of N, counted from 0)")]
    Syntax(String),
    #[error("fold {part}/{parts}: N must be at least 2")]
    TooFewParts { part: u32, parts: u32 },
    #[error("fold {part}/{parts}: I must be less than N (the parts are 0 to {last})", last = parts - 1)]
    PartOutOfRange { part: u32, parts: u32 },
}

impl Fold {
    /// Part `part` (0-based) of `parts`, `parts` ≥ 2.
    pub fn new(part: u32, parts: u32) -> Result<Self, FoldError> {
        if parts < 2 {
            return Err(FoldError::TooFewParts { part, parts });
        }
        if part >= parts {
            return Err(FoldError::PartOutOfRange { part, parts });
        }
        Ok(Self {
            part,
            parts,
            complement: false,
        })
    }

    /// The questions this fold leaves out.
    pub fn complement(self) -> Self {
        Self {
            complement: !self.complement,
            ..self
        }
    }

    /// Whether the question at 0-based position `index` is selected.
    pub fn contains(&self, index: usize) -> bool {
        // `parts` ≥ 2 by construction; `max` keeps a deserialized 0 from dividing by it.
        let in_part = index % self.parts.max(1) as usize == self.part as usize;
        in_part != self.complement
    }

    /// The items at the positions this fold selects, in their order.
    pub fn select<T>(&self, items: Vec<T>) -> Vec<T> {
        items
            .into_iter()
            .enumerate()
            .filter_map(|(index, item)| self.contains(index).then_some(item))
            .collect()
    }
}

impl fmt::Display for Fold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.complement {
            write!(f, "all but {}/{}", self.part, self.parts)
        } else {
            write!(f, "{}/{}", self.part, self.parts)
        }
    }
}

impl FromStr for Fold {
    type Err = FoldError;

    /// `I/N`: part I (from 0) of N.
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let syntax = || FoldError::Syntax(spec.to_owned());
        let (part, parts) = spec.trim().split_once('/').ok_or_else(syntax)?;
        let part: u32 = part.trim().parse().map_err(|_| syntax())?;
        let parts: u32 = parts.trim().parse().map_err(|_| syntax())?;
        Self::new(part, parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fold_and_its_complement_split_every_file_without_overlap() {
        for parts in 2..=5u32 {
            for part in 0..parts {
                let fold = Fold::new(part, parts).unwrap();
                for total in [0usize, 1, 7, 10, 31] {
                    let items: Vec<usize> = (0..total).collect();
                    let inside = fold.select(items.clone());
                    let outside = fold.complement().select(items.clone());
                    assert!(
                        inside.iter().all(|index| !outside.contains(index)),
                        "{fold} overlaps its complement on {total} items"
                    );
                    let mut union = [inside.clone(), outside].concat();
                    union.sort_unstable();
                    assert_eq!(
                        union, items,
                        "{fold} and its complement cover {total} items"
                    );
                    assert!(inside
                        .iter()
                        .all(|index| index % parts as usize == part as usize));
                }
            }
        }
        // The halves of `cache warm --fold 0/2` and `eval --fold 1/2`.
        let warm: Fold = "0/2".parse().unwrap();
        let eval: Fold = "1/2".parse().unwrap();
        assert_eq!(warm.select((0..6).collect()), [0, 2, 4]);
        assert_eq!(eval.select((0..6).collect()), [1, 3, 5]);
        assert_eq!(warm.complement().select((0..6).collect()), [1, 3, 5]);
        let rest: Fold = "1/3".parse::<Fold>().unwrap().complement();
        assert_eq!(rest.select((0..7).collect()), [0, 2, 3, 5, 6]);
        assert_eq!(rest.complement(), "1/3".parse().unwrap());
    }

    #[test]
    fn bad_specs_are_rejected_with_the_reason() {
        for spec in ["", "1", "1/", "/2", "a/2", "1/b", "-1/2", "1/2/3", "0.5/2"] {
            assert_eq!(
                spec.parse::<Fold>(),
                Err(FoldError::Syntax(spec.to_owned())),
                "{spec:?}"
            );
        }
        assert_eq!(
            "0/1".parse::<Fold>(),
            Err(FoldError::TooFewParts { part: 0, parts: 1 })
        );
        assert_eq!(
            "0/0".parse::<Fold>(),
            Err(FoldError::TooFewParts { part: 0, parts: 0 })
        );
        let out_of_range = "2/2".parse::<Fold>().unwrap_err();
        assert_eq!(
            out_of_range,
            FoldError::PartOutOfRange { part: 2, parts: 2 }
        );
        assert_eq!(
            out_of_range.to_string(),
            "fold 2/2: I must be less than N (the parts are 0 to 1)"
        );
        assert_eq!(" 1 / 4 ".parse(), Fold::new(1, 4));
    }

    #[test]
    fn folds_read_back_from_json_and_print_as_written() {
        let fold = Fold::new(1, 2).unwrap();
        assert_eq!(fold.to_string(), "1/2");
        assert_eq!(fold.complement().to_string(), "all but 1/2");
        let json = serde_json::to_string(&fold.complement()).unwrap();
        assert_eq!(json, r#"{"part":1,"parts":2,"complement":true}"#);
        assert_eq!(
            serde_json::from_str::<Fold>(&json).unwrap(),
            fold.complement()
        );
    }
}
