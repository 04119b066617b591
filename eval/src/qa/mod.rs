//! Question files in the formats of the public KGQA benchmarks, read line by line into
//! one shape, and split into folds by position.
//!
//! `kgmesh eval` (which asks the questions) and `kgmesh cache warm --import` (which turns
//! them into verified plans) read files through this one parser, so a file either can
//! read is read the same way by both, and a `--fold` selects the same questions in both.
//!
//! ```
//! use kgmesh_eval::qa::{read_lines, Fold, QaFormat};
//!
//! let text = "what movies did [Tom Hanks] act in\tBig|Splash\n";
//! let records: Vec<_> = read_lines(text, QaFormat::Auto)
//!     .map(|(_line, record)| record.unwrap())
//!     .collect();
//! assert_eq!(records[0].topics, ["Tom Hanks"]);
//! let first_half: Fold = "0/2".parse().unwrap();
//! assert_eq!(first_half.select(vec![0, 1, 2, 3]), [0, 2]);
//! ```

mod fold;
mod parse;

pub use fold::{Fold, FoldError};
pub use parse::{
    detect, gold_path_shape, parse_irn_answer_field, parse_line, read_lines, QaFormat, QaRecord,
    UNANSWERABLE,
};
