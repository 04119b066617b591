//! Cutting text into chunks, sub-chunks (passages) and sentences by tokens.
//!
//! Tokens here are runs of letters and digits and single other visible characters: for
//! English prose that is within a few percent of the BPE tokens chat models count, and
//! it needs no vocabulary. Every cut keeps byte offsets into the file, so a passage can
//! be cited as `file:offset`. Cuts prefer sentence ends: a window's end moves back to the
//! last sentence end in its final fifth, a halving point to the sentence end nearest the
//! middle.

use std::ops::Range;

/// One token: its byte range and whether a sentence ends after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub start: u32,
    pub end: u32,
    pub sentence_end: bool,
}

/// Sentences longer than this are cut (a file of one 100 MB line has no sentence ends).
pub const MAX_SENTENCE_TOKENS: usize = 64;

/// The tokens of `text`, which must be shorter than 4 GiB.
pub fn tokenize(text: &str) -> Vec<Token> {
    debug_assert!(text.len() < u32::MAX as usize);
    let mut tokens: Vec<Token> = Vec::with_capacity(text.len() / 5);
    let mut word_start = None;
    let mut newlines = 0;
    let bytes = text.as_bytes();
    for (at, c) in text.char_indices() {
        if c.is_alphanumeric() {
            if word_start.is_none() {
                word_start = Some(at);
                if newlines >= 2 {
                    mark_sentence_end(&mut tokens);
                }
                newlines = 0;
            }
            continue;
        }
        if let Some(start) = word_start.take() {
            tokens.push(Token {
                start: start as u32,
                end: at as u32,
                sentence_end: false,
            });
        }
        if c.is_whitespace() {
            if c == '\n' {
                newlines += 1;
            }
            continue;
        }
        if newlines >= 2 {
            mark_sentence_end(&mut tokens);
        }
        newlines = 0;
        let end = at + c.len_utf8();
        let ends_sentence = matches!(c, '.' | '!' | '?')
            && bytes.get(end).is_none_or(|next| next.is_ascii_whitespace());
        tokens.push(Token {
            start: at as u32,
            end: end as u32,
            sentence_end: ends_sentence,
        });
    }
    if let Some(start) = word_start {
        tokens.push(Token {
            start: start as u32,
            end: text.len() as u32,
            sentence_end: false,
        });
    }
    mark_sentence_end(&mut tokens);
    tokens
}

fn mark_sentence_end(tokens: &mut [Token]) {
    if let Some(last) = tokens.last_mut() {
        last.sentence_end = true;
    }
}

/// Windows of `size` tokens overlapping by `overlap`, as token ranges covering all of
/// `tokens`.
pub fn windows(tokens: &[Token], size: usize, overlap: usize) -> Vec<Range<usize>> {
    let size = size.max(1);
    let overlap = overlap.min(size / 2);
    let mut out = Vec::new();
    let mut start = 0;
    while start < tokens.len() {
        let mut end = (start + size).min(tokens.len());
        if end < tokens.len() {
            let earliest = start + size - size / 5;
            if let Some(cut) = (earliest..end).rev().find(|&i| tokens[i - 1].sentence_end) {
                end = cut;
            }
        }
        out.push(start..end);
        if end == tokens.len() {
            break;
        }
        start = end.saturating_sub(overlap).max(start + 1);
    }
    out
}

/// Parts shorter than twice this are not halved further.
pub const MIN_PASSAGE_TOKENS: usize = 24;

/// `range` halved `splits` times (up to 2^splits parts, none empty, none halved below
/// [`MIN_PASSAGE_TOKENS`]).
pub fn halve(tokens: &[Token], range: Range<usize>, splits: u32) -> Vec<Range<usize>> {
    let mut parts = vec![range];
    for _ in 0..splits {
        let mut next = Vec::with_capacity(parts.len() * 2);
        for part in parts {
            let len = part.len();
            if len < 2 * MIN_PASSAGE_TOKENS {
                next.push(part);
                continue;
            }
            let middle = part.start + len / 2;
            let reach = (len / 4).max(1);
            let cut = (0..=reach)
                .flat_map(|d| [middle.saturating_sub(d), middle + d])
                .find(|&i| i > part.start && i < part.end && tokens[i - 1].sentence_end)
                .unwrap_or(middle);
            next.push(part.start..cut);
            next.push(cut..part.end);
        }
        parts = next;
    }
    parts
}

/// The sentences within `range`, cut at [`MAX_SENTENCE_TOKENS`].
pub fn sentences(tokens: &[Token], range: Range<usize>) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = range.start;
    for i in range.clone() {
        if tokens[i].sentence_end || i + 1 - start >= MAX_SENTENCE_TOKENS || i + 1 == range.end {
            out.push(start..i + 1);
            start = i + 1;
        }
    }
    out
}

/// The byte range of a token range.
pub fn bytes_of(tokens: &[Token], range: &Range<usize>) -> Range<usize> {
    tokens[range.start].start as usize..tokens[range.end - 1].end as usize
}

/// Why a file's bytes cannot be indexed as text, if they cannot.
pub fn unreadable(bytes: &[u8]) -> Option<String> {
    if bytes.is_empty() {
        return Some("empty file".to_owned());
    }
    let head = &bytes[..bytes.len().min(64 * 1024)];
    if head.contains(&0) {
        return Some("binary file (holds NUL bytes)".to_owned());
    }
    if let Err(error) = std::str::from_utf8(bytes) {
        return Some(format!(
            "not UTF-8 text (invalid byte at offset {})",
            error.valid_up_to()
        ));
    }
    let controls = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0c))
        .count();
    if controls * 10 > head.len() {
        return Some("binary file (mostly control characters)".to_owned());
    }
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Some("holds only whitespace".to_owned());
    }
    None
}
