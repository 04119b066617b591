//! The number a model wrote for [`crate::prompts::cypher_choice`]: the first whole number
//! in the reply that is one of the offered ones ("2", "Query 2.", "**2**", `{"query": 2}`).

use super::ParseError;

/// The 0-based index of the chosen query among `offered`, or why there is none.
pub fn parse(reply: &str, offered: usize) -> Result<usize, ChoiceError> {
    if reply.trim().is_empty() {
        return Err(ChoiceError::Parse(ParseError::Empty));
    }
    let mut written = Vec::new();
    for number in reply
        .split(|c: char| !c.is_ascii_digit())
        .filter(|n| !n.is_empty())
    {
        match number.parse::<usize>() {
            Ok(n) if (1..=offered).contains(&n) => return Ok(n - 1),
            _ => written.push(number.to_owned()),
        }
    }
    Err(ChoiceError::NoOffered {
        written: written.into_iter().take(3).collect(),
        offered,
    })
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error("the model named no offered query (1 to {offered}; it wrote {written:?})")]
    NoOffered {
        written: Vec<String>,
        offered: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_offered_number_is_the_choice() {
        assert_eq!(parse("2", 3), Ok(1));
        assert_eq!(parse("Query 3.", 3), Ok(2));
        assert_eq!(parse("**1**", 3), Ok(0));
        assert_eq!(parse("{\"query\": 2}", 3), Ok(1));
        assert_eq!(parse("7, no: 2", 3), Ok(1));
        assert_eq!(parse("  ", 3), Err(ChoiceError::Parse(ParseError::Empty)));
        assert_eq!(
            parse("none of them", 3),
            Err(ChoiceError::NoOffered {
                written: vec![],
                offered: 3
            })
        );
        assert!(matches!(
            parse("0 or 4", 3),
            Err(ChoiceError::NoOffered { .. })
        ));
    }
}
