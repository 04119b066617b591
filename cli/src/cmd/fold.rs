//! `--fold I/N` and `--fold-complement I/N`, shared by `eval` and `cache warm --import`
//! so that both commands split a question file the same way.

use kgmesh_eval::qa::Fold;

/// Which part of a question file to keep.
#[derive(Debug, Clone, clap::Args)]
pub struct FoldArgs {
    /// Keep only part I of N (0 ≤ I < N, N ≥ 2): the questions whose 0-based position
    /// among the file's questions is I modulo N. Applied to each file before --limit
    /// and its sampling.
    #[arg(long, value_name = "I/N", conflicts_with = "fold_complement")]
    fold: Option<Fold>,

    /// Keep every part but I of N: the questions --fold I/N leaves out. Warming with
    /// `cache warm --fold-complement 0/5` and evaluating with `eval --fold 0/5` never
    /// share a question.
    #[arg(long, value_name = "I/N")]
    fold_complement: Option<Fold>,
}

impl FoldArgs {
    /// The fold asked for, if any.
    pub fn fold(&self) -> Option<Fold> {
        self.fold
            .or_else(|| self.fold_complement.map(Fold::complement))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Command {
        #[command(flatten)]
        fold: FoldArgs,
    }

    fn parse(args: &[&str]) -> Result<Option<Fold>, String> {
        Command::try_parse_from(std::iter::once("kgmesh").chain(args.iter().copied()))
            .map(|command| command.fold.fold())
            .map_err(|error| error.to_string())
    }

    #[test]
    fn a_fold_or_its_complement_or_neither() {
        assert_eq!(parse(&[]), Ok(None));
        let half = Fold::new(1, 2).unwrap();
        assert_eq!(parse(&["--fold", "1/2"]), Ok(Some(half)));
        assert_eq!(
            parse(&["--fold-complement", "1/2"]),
            Ok(Some(half.complement()))
        );
        let both = parse(&["--fold", "0/2", "--fold-complement", "1/2"]).unwrap_err();
        assert!(both.contains("cannot be used with"), "{both}");
    }

    #[test]
    fn bad_folds_are_rejected_with_the_reason() {
        let error = parse(&["--fold", "2/2"]).unwrap_err();
        assert!(error.contains("I must be less than N"), "{error}");
        let error = parse(&["--fold-complement", "0/1"]).unwrap_err();
        assert!(error.contains("N must be at least 2"), "{error}");
        let error = parse(&["--fold", "half"]).unwrap_err();
        assert!(error.contains("expected I/N"), "{error}");
    }
}
