//! An answer's confidence: the chance that it is right, from what the question's run
//! already knows. The KG-Linker's reader estimates the chance that the plan it ranked
//! first reaches exactly the right answers; the answer calibration turns that into the
//! chance that the *answer* is right, with what came after the plan (whether a word of
//! the question names the path answered from, how many answers, whether the answer is a
//! number, whether a second round was needed, whether the answer lies at the end of
//! that plan at all: the summarizer may answer from another path, and the plan's chance
//! then says little about it; whether a second reading of the question, the plan the
//! learned reader ranks first among the same candidates, reaches the answer too). It is
//! a logistic model fitted on whole
//! runs' answers (`kgmesh reader calibrate`), given to the coordinator as a function so
//! the coordinator needs no model code.

use std::{fmt, sync::Arc};

/// What the answer calibration reads, in order.
pub const SIGNALS: [&str; 9] = [
    "plan_log_odds",
    "low_confidence",
    "log_answers",
    "numeric_answer",
    "more_rounds",
    "log_topic_entities",
    "off_plan",
    "plan_log_odds_on_plan",
    "readings_disagree",
];

/// The calibration's inputs for one reply: the plan's chance, whether the first answer
/// lies at that plan's end, whether the answers rest on a path no word of the question
/// names, the answers (best first), the rounds run and the graph nodes the question's
/// names were linked to (several for one name when nodes share it), and whether the
/// plan the learned reader ranks first reaches the answer too (`None`, not read, reads
/// as agreeing: the calibration only ever learned from disagreements it saw). The
/// plan's chance
/// is read twice, once for every answer and once for those on the plan, so that the
/// fit can weigh it less where the summarizer answered from another path. An answer
/// neither on nor off the plan (`None`: it rests on no graph path) is read as on it,
/// as answers were before the calibration knew.
pub fn signals(
    plan_chance: f32,
    plan_followed: Option<bool>,
    readings_agree: Option<bool>,
    low_confidence: bool,
    answers: &[&str],
    rounds: u8,
    topic_entities: usize,
) -> Vec<f32> {
    let flag = |b: bool| if b { 1.0 } else { 0.0 };
    let numeric = answers
        .first()
        .is_some_and(|a| a.trim().replace(',', "").parse::<f64>().is_ok());
    let plan = log_odds(plan_chance);
    let plan_followed = plan_followed.unwrap_or(true);
    vec![
        plan,
        flag(low_confidence),
        (1.0 + answers.len() as f32).ln(),
        flag(numeric),
        flag(rounds > 1),
        (1.0 + topic_entities as f32).ln(),
        flag(!plan_followed),
        if plan_followed { plan } else { 0.0 },
        flag(readings_agree == Some(false)),
    ]
}

/// The log-odds of a chance, kept finite.
pub fn log_odds(chance: f32) -> f32 {
    let p = chance.clamp(1e-4, 1.0 - 1e-4);
    (p / (1.0 - p)).ln()
}

/// [`signals`] in, the chance that the answer is right out.
type ChanceOf = dyn Fn(&[f32]) -> f32 + Send + Sync;

/// A fitted answer calibration.
#[derive(Clone)]
pub struct AnswerCalibration(Arc<ChanceOf>);

impl AnswerCalibration {
    pub fn new(chance: impl Fn(&[f32]) -> f32 + Send + Sync + 'static) -> Self {
        Self(Arc::new(chance))
    }

    pub fn chance(&self, signals: &[f32]) -> f32 {
        (self.0)(signals).clamp(0.0, 1.0)
    }
}

impl fmt::Debug for AnswerCalibration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AnswerCalibration")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_read_the_reply() {
        let s = signals(0.5, Some(true), Some(false), true, &["12"], 2, 1);
        assert_eq!(s.len(), SIGNALS.len());
        assert!(s[0].abs() < 1e-6);
        assert_eq!(
            &s[1..],
            &[1.0, 2f32.ln(), 1.0, 1.0, 2f32.ln(), 0.0, 0.0, 1.0]
        );
        let s = signals(
            0.9,
            Some(true),
            Some(true),
            false,
            &["Michael Mann", "Ann Roth"],
            1,
            2,
        );
        assert!(s[0] > 2.0);
        assert_eq!(&s[1..6], &[0.0, 3f32.ln(), 0.0, 0.0, 3f32.ln()]);
        assert_eq!(
            (s[6], s[7]),
            (0.0, s[0]),
            "on the plan: its chance read again"
        );
        assert_eq!(s[8], 0.0, "the readings agree");
        let s = signals(0.9, Some(false), None, false, &["Ann Roth"], 1, 1);
        assert_eq!(
            (s[6], s[7]),
            (1.0, 0.0),
            "off the plan: its chance not read again"
        );
        assert_eq!(s[8], 0.0, "not asked: read as agreeing");
        assert_eq!(
            signals(0.9, None, None, false, &["Ann Roth"], 1, 1),
            signals(0.9, Some(true), None, false, &["Ann Roth"], 1, 1),
            "on no path: read as on the plan"
        );
        assert!(log_odds(1.0).is_finite() && log_odds(0.0).is_finite());
    }
}
