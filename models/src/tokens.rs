//! Token estimates for servers that report no usage and for budgets checked before a
//! call. English text averages about four characters per token with the BPE vocabularies
//! of current chat models; the estimate rounds up so budgets err on the safe side.

use crate::ChatMessage;

/// Chat templates wrap every message in a few special tokens.
const PER_MESSAGE_OVERHEAD: u64 = 4;

/// Estimated tokens of a piece of text (never 0 for non-empty text).
pub fn estimate_tokens(text: &str) -> u64 {
    let chars = text.chars().count() as u64;
    chars.div_ceil(4)
}

/// Estimated prompt tokens of a whole conversation.
pub fn estimate_chat_tokens(messages: &[ChatMessage]) -> u64 {
    messages
        .iter()
        .map(|m| estimate_tokens(&m.content) + PER_MESSAGE_OVERHEAD)
        .sum::<u64>()
        + 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_round_up_and_count_characters_not_bytes() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abc"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        // Four two-byte characters are one token, not two.
        assert_eq!(estimate_tokens("éééé"), 1);
    }

    #[test]
    fn chat_estimate_adds_per_message_overhead() {
        let messages = vec![ChatMessage::system("abcd"), ChatMessage::user("abcd")];
        assert_eq!(estimate_chat_tokens(&messages), 1 + 4 + 1 + 4 + 2);
    }
}
