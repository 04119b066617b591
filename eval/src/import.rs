//! QA-pair import: a question file in any format [`crate::qa`] reads, turned into the
//! [`QaPair`]s the cache manager warms from (`kgmesh cache warm --import`). The topic
//! entity is the one the line names: `[name]` in MetaQA questions, the first node of an
//! IRN gold path (of its first part, for a conjunction), JSONL's `topic`.

use kgmesh_agents::cache_manager::warm::QaPair;

use crate::qa::{self, QaFormat};

/// Reads QA pairs (every format of [`crate::qa`]); unreadable lines come back with
/// their line number and why.
pub fn parse_pairs(text: &str, format: QaFormat) -> (Vec<QaPair>, Vec<(usize, String)>) {
    let mut pairs = Vec::new();
    let mut bad = Vec::new();
    for (line, record) in qa::read_lines(text, format) {
        match record {
            // Nothing to learn from a question with no answer.
            Ok(record) if record.answers.is_empty() => {}
            Ok(record) => pairs.push(QaPair {
                question: record.question.replace(['[', ']'], ""),
                answers: record.answers,
                // A conjunction names several; the mention linker finds the others.
                topic: record.topics.into_iter().next(),
                line,
            }),
            Err(why) => bad.push((line, why)),
        }
    }
    (pairs, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metaqa_and_jsonl_lines_parse_with_their_topic() {
        let (pairs, bad) = parse_pairs(
            "who directed [Heat]\tMichael Mann\n\nbroken line\nwho acted in [Heat]\tAl Pacino|Robert De Niro\n",
            QaFormat::Auto,
        );
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].0, 3);
        assert_eq!(pairs.len(), 2);
        assert_eq!(pairs[0].question, "who directed Heat");
        assert_eq!(pairs[0].topic.as_deref(), Some("Heat"));
        assert_eq!(pairs[1].answers, vec!["Al Pacino", "Robert De Niro"]);
        assert_eq!(pairs[1].line, 4);

        let (pairs, bad) = parse_pairs(
            "{\"question\": \"who directed Heat\", \"answers\": [\"Michael Mann\"]}\n{\"question\": \"x\", \"answers\": []}\n{not json\n",
            QaFormat::Auto,
        );
        assert_eq!(pairs.len(), 1);
        assert_eq!(pairs[0].topic, None);
        assert_eq!(
            bad.iter().map(|b| b.0).collect::<Vec<_>>(),
            vec![2, 3],
            "{bad:?}"
        );
    }

    #[test]
    fn irn_lines_import_with_the_gold_path_head_as_topic() {
        let pathquestion = "is sviatoslav_ii_of_kiev 's dad a man or a woman ?\tmale(male/female/)\tsviatoslav_ii_of_kiev#parents#olof_of_sweden#gender#male#<end>#male";
        let wc2014_2h = "name a soccer club that has a player from Greece ?\tPAOK_FC\tGreece#plays_for_country_inverse#Dimitrios_SALPINGIDIS#plays_in_club#PAOK_FC\tPanathinaikos_FC/PAOK_FC/\tDimitrios_SALPINGIDIS#plays_in_club#PAOK_FC";
        let wc2014_conj = "who plays at position Goalkeeper for club Ulsan_Hyundai_FC ?\tKIM_Seunggyu\tGoalkeeper#plays_position_inverse#KIM_Seunggyu#<end>#KIM_Seunggyu*Ulsan_Hyundai_FC#plays_in_club_inverse#KIM_Seunggyu#<end>#KIM_Seunggyu\tKIM_Seunggyu/\tKIM_Seunggyu#plays_in_club#Ulsan_Hyundai_FC\tGoalkeeper/Ulsan_Hyundai_FC";
        let text = format!("{pathquestion}\n{wc2014_2h}\n\n{wc2014_conj}\nno gold path\tx\n");
        for format in [QaFormat::Auto, QaFormat::Irn] {
            let (pairs, bad) = parse_pairs(&text, format);
            assert_eq!(pairs.len(), 3, "{format}");
            assert_eq!(pairs[0].topic.as_deref(), Some("sviatoslav_ii_of_kiev"));
            assert_eq!(pairs[0].answers, ["male", "female"]);
            assert_eq!(
                pairs[0].question,
                "is sviatoslav_ii_of_kiev 's dad a man or a woman ?"
            );
            assert_eq!(pairs[1].topic.as_deref(), Some("Greece"));
            assert_eq!(pairs[1].answers, ["PAOK_FC", "Panathinaikos_FC"]);
            // A conjunction's second topic is left to the mention linker.
            assert_eq!(pairs[2].topic.as_deref(), Some("Goalkeeper"));
            assert_eq!(pairs[2].answers, ["KIM_Seunggyu"]);
            assert_eq!(pairs[2].line, 4);
            assert_eq!(bad.len(), 1);
            assert_eq!(bad[0].0, 5);
        }
        // Read as MetaQA, the same lines keep their answer field whole and name no topic.
        let (as_metaqa, _) = parse_pairs(pathquestion, QaFormat::Metaqa);
        assert_eq!(as_metaqa[0].topic, None);
    }

    #[test]
    fn an_irn_pair_keeps_its_topic_and_answers_not_its_gold_path() {
        // The gold path names a relation the graph does not have: only its head (the
        // topic) and the answers are imported, and the warmer finds the plan from the
        // paths between them (`cache_manager::warm`'s
        // `a_pair_is_verified_from_its_topic_and_answers_whatever_its_wording`).
        let (pairs, bad) = parse_pairs(
            "which films share a director with Heat ?\tCollateral(Collateral/)\tHeat#made_by#Michael Mann#made_by_inverse#Collateral#<end>#Collateral\n",
            QaFormat::Auto,
        );
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(
            pairs,
            [QaPair {
                question: "which films share a director with Heat ?".into(),
                answers: vec!["Collateral".into()],
                topic: Some("Heat".into()),
                line: 1,
            }]
        );
    }
}
