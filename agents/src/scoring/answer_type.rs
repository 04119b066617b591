//! Answer types: what a question asks for (a person, an organization, a place, a date,
//! a year, an amount of money, a number, or a thing named some other way) and what a
//! span of prose is, so that a reader does not answer "who …" with a year or "what is
//! the price" with a month.
//!
//! The question's type comes from its wh-phrase: "who", "when", "where", "how much",
//! "how many", and for "what" / "which" the class word the phrase names ("which
//! *company*", "what is the *price* of …", "X's *budget*"). A class word is typed by the
//! [`CLASS_WORDS`] lexicon of common English nouns; one it does not hold asks for a
//! thing of that class, which the reader matches against the words written beside a
//! candidate.
//!
//! A span's type comes from its form: currency signs and words make an amount, month
//! names or an ISO form a date, a lone four-digit number in the range of years a year,
//! other numerals a number. A capitalized name is an organization when one of its words
//! designates one ("Labs", "Council", "Foundation"), a person when a title or a role
//! noun stands before it or it is two or three plain words, a place when a locative
//! preposition ("in", "near", "from") stands before it. Every name of one text is typed
//! by all the places it is written ([`NameTypes`]): "in Tarsk" once makes Tarsk a place
//! wherever it stands. Nothing here knows a corpus; the lexicons are plain English.

use std::collections::{HashMap, HashSet};

use kgmesh_models::lexical::text::{is_article, is_determiner, is_stop_word, stem, words};

/// What an answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AnswerType {
    Person,
    Organization,
    Place,
    Date,
    Year,
    Amount,
    Number,
    /// Named otherwise: a product, a title, a version, a noun phrase.
    Thing,
}

impl AnswerType {
    pub const ALL: [AnswerType; 8] = [
        AnswerType::Person,
        AnswerType::Organization,
        AnswerType::Place,
        AnswerType::Date,
        AnswerType::Year,
        AnswerType::Amount,
        AnswerType::Number,
        AnswerType::Thing,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AnswerType::Person => "person",
            AnswerType::Organization => "organization",
            AnswerType::Place => "place",
            AnswerType::Date => "date",
            AnswerType::Year => "year",
            AnswerType::Amount => "amount",
            AnswerType::Number => "number",
            AnswerType::Thing => "thing",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == text)
    }

    /// Dates, years, amounts and numbers: types a span's form tells reliably.
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            AnswerType::Date | AnswerType::Year | AnswerType::Amount | AnswerType::Number
        )
    }

    /// The name with its indefinite article ("a person", "an organization").
    pub fn with_article(self) -> String {
        let name = self.name();
        let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        format!("{article} {name}")
    }
}

impl std::fmt::Display for AnswerType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether `name`, by its form alone, cannot answer a question asking for `asked`: a
/// number, year, date or amount where a name is asked (a person, a place), or anything
/// but a date or a year where one is asked (a name, a count, a capacity: "when was the
/// stadium renovated" is not answered "52000"). Names are not told apart by form.
pub fn form_misfits(asked: AnswerType, name: &str) -> bool {
    let form = form_type(name, "");
    match asked {
        AnswerType::Date | AnswerType::Year => !matches!(form, AnswerType::Date | AnswerType::Year),
        _ => form.is_numeric() != asked.is_numeric(),
    }
}

/// What a question asks for, when the form of an answer can rule one out
/// ([`form_misfits`]): a person, an organization, a place, a date or a year. `asking`:
/// the question's words outside its entities' names.
pub fn asked_by_form(asking: &str) -> Option<AnswerType> {
    use AnswerType::{Date, Organization, Person, Place, Year};
    asked(asking)
        .kind
        .filter(|kind| matches!(kind, Person | Organization | Place | Date | Year))
}

/// Whether a question asks for a person or a place by its wh-phrase's own words: the
/// wh-word alone ("who", "where"), or a class word right after it ("which *city*",
/// "what *company*" typed by [`CLASS_WORDS`]). A class word read further along may be a
/// possessive chain's first link ("what is X's *children*'s place of birth"), and a noun
/// after "is the" says what is asked whatever the wh-word ("who is the place of birth
/// of …"): neither counts. After another auxiliary the noun phrase is the clause's
/// subject ("where did *the head* of X study"), and the wh-word still asks. `asking`:
/// the question's words outside its entities' names.
pub fn asked_by_wh_phrase(asking: &str) -> Option<AnswerType> {
    let asked = asked(asking);
    // "who is *the* place of birth of …": a noun phrase after the copula names what is
    // asked, whatever the wh-word.
    let all = words(asking);
    let at = *asked.phrase.first()?;
    let named = all
        .get(at + 1)
        .is_some_and(|w| COPULAS.contains(&w.as_str()))
        && all.get(at + 2).is_some_and(|w| is_article(w));
    // "which *city* …", "what *company* …": the class word right after the wh-word.
    let class_next = asked.phrase.get(1) == Some(&(at + 1));
    asked.kind.filter(|kind| {
        (asked.class.is_none() || class_next)
            && !named
            && matches!(kind, AnswerType::Person | AnswerType::Place)
    })
}

/// How well a span of type `span` answers a question asking for `asked`, in `[0, 1]`:
/// 1 for the type asked, less for a near one (an organization for "who", a year for
/// "when"), 0 for a numeric span where a name is asked or the reverse.
pub fn fit(asked: AnswerType, span: AnswerType) -> f32 {
    use AnswerType::*;
    if asked == span {
        return 1.0;
    }
    match (asked, span) {
        (Date, Year) | (Year, Date) => 0.8,
        (Number, Amount) | (Amount, Number) => 0.5,
        (Person, Organization) | (Organization, Person) => 0.5,
        (Place, Organization) | (Organization, Place) => 0.4,
        // An unknown single name may be of any kind of name.
        (Person | Organization | Place, Thing) => 0.4,
        (Thing, Person | Organization | Place) => 0.5,
        (Thing, Date | Year | Amount | Number) => 0.1,
        _ => 0.0,
    }
}

/// What a question asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    /// `None` when the question's form says nothing (no wh-phrase, "what did X do").
    pub kind: Option<AnswerType>,
    /// The class word the wh-phrase names ("company" in "which company …"), lower case.
    pub class: Option<String>,
    /// Positions in [`words`] of the question of the wh-phrase's words (the wh-word,
    /// "much"/"many", the class word): they say what is asked, not what it is about.
    pub phrase: Vec<usize>,
}

/// Auxiliaries that may stand between "what" and the class word ("what *was* the
/// budget").
pub(crate) const AUXILIARIES: &[&str] = &[
    "is", "was", "are", "were", "did", "does", "do", "has", "have", "had", "will", "would", "can",
    "could", "should", "must",
];

/// The forms of "be" among [`AUXILIARIES`]: after a wh-word, the noun phrase that follows
/// one is what the question asks for.
const COPULAS: &[&str] = &["is", "was", "are", "were"];

/// Nouns that stand for the class of the noun after "of" ("the *name* of the company",
/// "what *kind* of engine").
const TRANSPARENT: &[&str] = &["name", "names", "title", "kind", "type", "sort", "form"];

/// Common English class nouns and the answer type they ask for. Stems are compared, so
/// one form of each word is enough.
pub const CLASS_WORDS: &[(AnswerType, &[&str])] = &[
    (
        AnswerType::Person,
        &[
            "person",
            "people",
            "man",
            "woman",
            "someone",
            "who",
            "engineer",
            "manager",
            "director",
            "author",
            "founder",
            "scientist",
            "player",
            "coach",
            "officer",
            "chair",
            "chairman",
            "chairwoman",
            "chairperson",
            "head",
            "leader",
            "lead",
            "owner",
            "member",
            "employee",
            "staff",
            "architect",
            "designer",
            "developer",
            "contributor",
            "maintainer",
            "researcher",
            "professor",
            "teacher",
            "student",
            "doctor",
            "nurse",
            "artist",
            "writer",
            "editor",
            "reporter",
            "journalist",
            "spokesperson",
            "president",
            "ceo",
            "cto",
            "cfo",
            "executive",
            "agent",
            "customer",
            "user",
            "volunteer",
            "mentor",
            "partner",
            "winner",
            "minister",
            "mayor",
            "councillor",
            "councilor",
            "secretary",
            "treasurer",
            "analyst",
            "consultant",
            "technician",
            "captain",
            "pilot",
            "chef",
            "judge",
            "lawyer",
            "approver",
            "contact",
            "representative",
            "speaker",
            "host",
            "wife",
            "husband",
            "spouse",
            "father",
            "mother",
            "son",
            "daughter",
            "brother",
            "sister",
            "child",
            "parent",
            "friend",
            "colleague",
            "successor",
            "predecessor",
            "assignee",
            "reviewer",
            "sponsor",
        ],
    ),
    (
        AnswerType::Organization,
        &[
            "company",
            "firm",
            "organization",
            "organisation",
            "business",
            "startup",
            "corporation",
            "agency",
            "institution",
            "team",
            "group",
            "supplier",
            "vendor",
            "manufacturer",
            "publisher",
            "bank",
            "university",
            "charity",
            "ngo",
            "club",
            "department",
            "committee",
            "council",
            "foundation",
            "lab",
            "laboratory",
            "studio",
            "investor",
            "funder",
            "donor",
            "buyer",
            "acquirer",
            "brand",
            "maker",
            "retailer",
            "distributor",
            "contractor",
            "operator",
            "carrier",
            "airline",
            "label",
            "school",
            "college",
            "hospital",
            "ministry",
            "government",
            "union",
            "association",
            "society",
            "fund",
            "unit",
            "division",
            "subsidiary",
            "rival",
            "competitor",
            "competition",
            "insurer",
            "provider",
            "broker",
            "party",
        ],
    ),
    (
        AnswerType::Place,
        &[
            "place",
            "city",
            "town",
            "country",
            "region",
            "state",
            "province",
            "village",
            "location",
            "office",
            "site",
            "venue",
            "port",
            "airport",
            "district",
            "area",
            "capital",
            "island",
            "continent",
            "headquarters",
            "hq",
            "plant",
            "factory",
            "warehouse",
            "campus",
            "branch",
            "neighbourhood",
            "neighborhood",
            "county",
            "street",
            "destination",
            "where",
            "hub",
            "base",
            "market",
        ],
    ),
    (
        AnswerType::Date,
        &[
            "date", "day", "month", "deadline", "when", "time", "weekday",
        ],
    ),
    (AnswerType::Year, &["year", "decade"]),
    (
        AnswerType::Amount,
        &[
            "price",
            "cost",
            "fee",
            "amount",
            "budget",
            "salary",
            "revenue",
            "sum",
            "fine",
            "refund",
            "funding",
            "grant",
            "spending",
            "profit",
            "loss",
            "value",
            "worth",
            "payment",
            "charge",
            "allowance",
            "stipend",
            "reimbursement",
            "money",
            "income",
            "turnover",
            "sales",
            "donation",
            "investment",
            "valuation",
            "wage",
            "pay",
            "bonus",
            "deposit",
            "rent",
            "tariff",
            "penalty",
            "expense",
            "expenditure",
            "premium",
        ],
    ),
    (
        AnswerType::Number,
        &[
            "number",
            "count",
            "quantity",
            "total",
            "percentage",
            "percent",
            "share",
            "size",
            "capacity",
            "population",
            "age",
            "score",
            "rate",
            "rating",
            "limit",
            "maximum",
            "minimum",
            "duration",
            "length",
            "weight",
            "height",
            "distance",
            "speed",
            "headcount",
            "many",
        ],
    ),
];

/// The answer type a class word asks for, by [`CLASS_WORDS`]: the noun as written (or
/// its plural) first, then by stem, so that a noun sharing its stem with another kind's
/// ("office" and "officer") is read as itself.
pub fn class_type(class: &str) -> Option<AnswerType> {
    let stemmed = stem(class);
    let singulars = as_written(class);
    CLASS_WORDS
        .iter()
        .find(|(_, nouns)| {
            singulars
                .iter()
                .flatten()
                .any(|w| nouns.contains(&w.as_str()))
        })
        .map(|(kind, _)| *kind)
        .or_else(|| stem_type(&stemmed))
}

/// The answer type a class word's stem names ([`crate::scoring::text::stem`] of one of
/// [`CLASS_WORDS`]' nouns): what a relation reaching nodes of that class reaches.
pub fn stem_type(stemmed: &str) -> Option<AnswerType> {
    CLASS_WORDS
        .iter()
        .find(|(_, nouns)| nouns.iter().any(|n| stem(n) == stemmed))
        .map(|(kind, _)| *kind)
}

/// A lower-case word as written and the singulars its plural ending may stand for
/// ("countries": "countrie", "countri", "country"), to look a noun up without stemming.
fn as_written(word: &str) -> [Option<String>; 4] {
    [
        Some(word.to_owned()),
        word.strip_suffix("ies").map(|w| format!("{w}y")),
        word.strip_suffix("es").map(str::to_owned),
        word.strip_suffix('s').map(str::to_owned),
    ]
}

/// Whether `word` (lowercase) is one of [`CLASS_WORDS`]' nouns for `kind`, or such a
/// noun's plural ("countries", "hubs"), as written: no stemming, so that a verb built on
/// the noun ("placed", "based") is not taken for it.
pub fn names_kind(word: &str, kind: AnswerType) -> bool {
    let singulars = as_written(word);
    CLASS_WORDS
        .iter()
        .filter(|(k, _)| *k == kind)
        .flat_map(|(_, nouns)| nouns.iter())
        .any(|noun| singulars.iter().flatten().any(|w| w == noun))
}

/// What `question` asks for (see the module documentation).
pub fn asked(question: &str) -> Asked {
    let all = words(question);
    let none = Asked {
        kind: None,
        class: None,
        phrase: Vec::new(),
    };
    let Some(at) = all.iter().position(|w| {
        matches!(
            w.as_str(),
            "who" | "whom" | "whose" | "when" | "where" | "what" | "which" | "how"
        )
    }) else {
        return none;
    };
    let word = |i: usize| all.get(i).map_or("", String::as_str);
    let typed = |kind: AnswerType, phrase: Vec<usize>| Asked {
        kind: Some(kind),
        class: None,
        phrase,
    };
    match word(at) {
        "who" | "whom" | "whose" => typed(AnswerType::Person, vec![at]),
        "when" => typed(AnswerType::Date, vec![at]),
        "where" => typed(AnswerType::Place, vec![at]),
        "how" => match word(at + 1) {
            "much" => typed(AnswerType::Amount, vec![at, at + 1]),
            "many" => {
                // "how many *engineers*": the counted class is part of what is asked.
                let mut phrase = vec![at, at + 1];
                if !word(at + 2).is_empty() && !is_stop_word(word(at + 2)) {
                    phrase.push(at + 2);
                }
                typed(AnswerType::Number, phrase)
            }
            "long" | "old" | "far" | "big" | "large" | "tall" | "often" | "heavy" => {
                typed(AnswerType::Number, vec![at, at + 1])
            }
            _ => none,
        },
        _ => {
            // "what"/"which": the class word the phrase names.
            let Some(class_at) = class_word(&all, at) else {
                return Asked {
                    kind: None,
                    class: None,
                    phrase: vec![at],
                };
            };
            let class = all[class_at].clone();
            let kind = class_type(&class).unwrap_or(AnswerType::Thing);
            Asked {
                kind: Some(kind),
                class: Some(class),
                phrase: vec![at, class_at],
            }
        }
    }
}

/// Where the class word of the "what"/"which" at `at` stands: the word right after it
/// ("which *company*"), or after an auxiliary and an article ("what is the *price*"), or
/// after a possessive ("what was X's *budget*"), read through "the name of" and the like.
fn class_word(all: &[String], at: usize) -> Option<usize> {
    let word = |i: usize| all.get(i).map_or("", String::as_str);
    let content = |i: usize| !word(i).is_empty() && !is_stop_word(word(i));
    let mut i = at + 1;
    let found = if content(i) && !AUXILIARIES.contains(&word(i)) {
        // "which football *club*": a word the lexicon does not type, then one it does.
        if class_type(word(i)).is_none() && content(i + 1) && class_type(word(i + 1)).is_some() {
            Some(i + 1)
        } else {
            Some(i)
        }
    } else if AUXILIARIES.contains(&word(i)) {
        i += 1;
        let noun = |j: usize| content(j) || TRANSPARENT.contains(&word(j));
        if is_article(word(i)) && noun(i + 1) {
            // A compound's head is its last noun, before the next function word ("the
            // generating *capacity* of the turbine").
            let mut head = i + 1;
            while content(head + 1) && !TRANSPARENT.contains(&word(head)) {
                head += 1;
            }
            Some(head)
        } else {
            // "what is X's budget": the word after the possessive's "s", or the
            // compound's head there ("what is X's unit *price*").
            (i..all.len().min(i + 6))
                .find(|&j| word(j) == "s" && content(j + 1))
                .map(|j| {
                    let mut head = j + 1;
                    while content(head + 1) && !TRANSPARENT.contains(&word(head)) {
                        head += 1;
                    }
                    head
                })
        }
    } else {
        None
    }?;
    // "the name of the company" → "company".
    if TRANSPARENT.contains(&word(found)) && word(found + 1) == "of" {
        let mut next = found + 2;
        if is_article(word(next)) || matches!(word(next), "this" | "that") {
            next += 1;
        }
        if content(next) {
            return Some(next);
        }
    }
    Some(found)
}

/// Months, full and short, lower case.
pub(crate) const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
];

/// Weekdays, full and short, lower case.
pub(crate) const WEEKDAYS: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "mon",
    "tue",
    "tues",
    "wed",
    "thu",
    "thur",
    "thurs",
    "fri",
    "sat",
    "sun",
];

/// Currency words, lower case (signs are read as characters).
pub(crate) const CURRENCY_WORDS: &[&str] = &[
    "dollar", "dollars", "euro", "euros", "pound", "pounds", "yen", "franc", "francs", "krona",
    "kronor", "krone", "kroner", "usd", "eur", "gbp", "chf", "cad", "aud", "rupee", "rupees",
    "peso", "pesos", "cent", "cents",
];

/// Number words.
pub(crate) const NUMBER_WORDS: &[&str] = &[
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
    "hundred",
    "thousand",
    "million",
    "billion",
    "dozen",
];

/// Words that make a name an organization's.
const ORGANIZATION_WORDS: &[&str] = &[
    "inc",
    "ltd",
    "llc",
    "plc",
    "gmbh",
    "ag",
    "sa",
    "bv",
    "corp",
    "corporation",
    "company",
    "co",
    "group",
    "labs",
    "lab",
    "systems",
    "technologies",
    "technology",
    "foundation",
    "institute",
    "university",
    "college",
    "school",
    "council",
    "bank",
    "association",
    "society",
    "agency",
    "authority",
    "ministry",
    "partners",
    "holdings",
    "industries",
    "media",
    "studio",
    "studios",
    "committee",
    "board",
    "department",
    "trust",
    "fund",
    "museum",
    "library",
    "hospital",
    "clinic",
    "club",
    "union",
    "network",
    "collective",
    "cooperative",
    "co-op",
    "team",
    "works",
    "energy",
    "motors",
    "airlines",
    "airways",
    "logistics",
    "robotics",
    "software",
    "solutions",
    "services",
    "capital",
    "ventures",
    "press",
    "publishing",
    "records",
    "telecom",
    "pharma",
    "bio",
    "health",
    "commission",
    "alliance",
    "federation",
    "centre",
    "center",
    "trading",
    "analytics",
    "dynamics",
    "aerospace",
    "shipping",
    "foods",
    "brewery",
    "bakery",
    "collection",
    "gallery",
    "underwriters",
    "insurance",
    "insurers",
];

/// Titles and role nouns written right before a person's name.
const PERSON_CUES: &[&str] = &[
    "mr",
    "mrs",
    "ms",
    "miss",
    "dr",
    "prof",
    "professor",
    "sir",
    "dame",
    "lady",
    "lord",
    "ceo",
    "cto",
    "cfo",
    "coo",
    "president",
    "chair",
    "chairman",
    "chairwoman",
    "director",
    "manager",
    "engineer",
    "founder",
    "cofounder",
    "co-founder",
    "head",
    "lead",
    "editor",
    "author",
    "writer",
    "designer",
    "architect",
    "developer",
    "maintainer",
    "contributor",
    "scientist",
    "researcher",
    "analyst",
    "officer",
    "councillor",
    "councilor",
    "mayor",
    "minister",
    "secretary",
    "treasurer",
    "agent",
    "technician",
    "coach",
    "captain",
    "spokesperson",
    "spokesman",
    "spokeswoman",
    "colleague",
    "by",
    "said",
    "says",
    "according",
    "mentor",
    "wife",
    "husband",
    "son",
    "daughter",
    "brother",
    "sister",
    "mother",
    "father",
    "dear",
    "hi",
    "hello",
    "thanks",
    "regards",
    "cheers",
];

/// Prepositions written before a place's name.
const PLACE_CUES: &[&str] = &[
    "in", "near", "from", "outside", "across", "into", "around", "at",
];

/// The type of a span by its form alone (`previous`: the lower-cased word before it,
/// "" at a sentence's start).
pub fn form_type(span: &str, previous: &str) -> AnswerType {
    let span_words = words(span);
    let has_digit = span.chars().any(|c| c.is_ascii_digit());
    let currency = span.contains(['$', '€', '£', '¥', '₹'])
        || span_words
            .iter()
            .any(|w| CURRENCY_WORDS.contains(&w.as_str()))
        || CURRENCY_WORDS.contains(&previous) && has_digit;
    if currency
        && (has_digit
            || span_words
                .iter()
                .any(|w| NUMBER_WORDS.contains(&w.as_str())))
    {
        return AnswerType::Amount;
    }
    if span_words.iter().any(|w| MONTHS.contains(&w.as_str()))
        && (has_digit || span_words.len() == 1)
        && span_words.iter().all(|w| {
            MONTHS.contains(&w.as_str())
                || WEEKDAYS.contains(&w.as_str())
                || w.chars().all(|c| c.is_ascii_digit())
                || is_ordinal(w)
        })
    {
        // "May" alone is more often a verb or a name; with a day or a year, a date.
        if has_digit || !matches!(span_words[0].as_str(), "may" | "march") {
            return AnswerType::Date;
        }
    }
    if is_iso_date(span) {
        return AnswerType::Date;
    }
    if let [only] = span_words.as_slice() {
        // A day of the week alone is a date too ("said on Monday").
        if WEEKDAYS.contains(&only.as_str()) {
            return AnswerType::Date;
        }
        if only.len() == 4 && only.chars().all(|c| c.is_ascii_digit()) {
            let year: u32 = only.parse().unwrap_or(0);
            if (1000..2200).contains(&year) {
                return AnswerType::Year;
            }
        }
    }
    let numeral = |w: &String| {
        w.chars().all(|c| c.is_ascii_digit()) || NUMBER_WORDS.contains(&w.as_str()) || is_ordinal(w)
    };
    if !span_words.is_empty() && span_words.iter().all(numeral) {
        return AnswerType::Number;
    }
    // "Pennick & Lowe", "Harbridge Mutual Bank": an ampersand or a designator.
    let tokens: Vec<&str> = span.split_whitespace().collect();
    if tokens.len() > 1
        && (tokens.contains(&"&")
            || span_words
                .iter()
                .any(|w| ORGANIZATION_WORDS.contains(&w.as_str())))
    {
        return AnswerType::Organization;
    }
    if has_digit {
        return AnswerType::Thing;
    }
    if PERSON_CUES.contains(&previous) && previous != "by" {
        return AnswerType::Person;
    }
    if PLACE_CUES.contains(&previous) {
        return AnswerType::Place;
    }
    // Two capitalized words ("Omar Haddad") are most often a person; three, as often a
    // place or a title ("Dunmarrow Corn Exchange"), are one only with evidence
    // ([`NameTypes`]); "Saint-Évrard" is one word.
    let capitalized = tokens
        .iter()
        .all(|w| w.chars().next().is_some_and(char::is_uppercase));
    // A middle initial ("Samuel L. Jackson") is a person's.
    let middle_initial = tokens.len() == 3 && {
        let middle: Vec<char> = tokens[1].chars().collect();
        middle.len() == 2 && middle[0].is_uppercase() && middle[1] == '.'
    };
    if capitalized && (tokens.len() == 2 || middle_initial) {
        return AnswerType::Person;
    }
    AnswerType::Thing
}

/// "1st", "21st", "3rd".
fn is_ordinal(word: &str) -> bool {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
        && matches!(&word[digits.len()..], "st" | "nd" | "rd" | "th")
}

/// "2024-03-12", "12/03/2024".
fn is_iso_date(span: &str) -> bool {
    let parts: Vec<&str> = span.split(['-', '/']).collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 4 && p.chars().all(|c| c.is_ascii_digit()))
        && parts.iter().any(|p| p.len() == 4)
}

/// The type of every name of a text, from all the places it is written: a place cue or a
/// person cue anywhere types the name everywhere ("in Tarsk" once makes Tarsk a place).
#[derive(Debug, Default)]
pub struct NameTypes {
    /// Per name (its lower-case words joined), votes per type, by the cues before it.
    votes: HashMap<String, [u16; 8]>,
    /// Names written as one word, lower case: a person's surname alone ("Haddad said")
    /// makes the full name a person's.
    alone: HashSet<String>,
}

impl NameTypes {
    /// Counts one place where `name` is written, after the lower-cased word `previous`
    /// and before the lower-cased word `next` ("" where none is read). A name
    /// between a determiner and a noun for a person or an organization ("*the*
    /// Accounts Payable *manager*", "*our* Customer Care *agents*", "*the* Talent
    /// Acquisition *team*") premodifies the noun: it names a unit or a company, not a
    /// person (no determiner stands before a person's name, nor does the name before
    /// "manager"). Without the determiner the noun may be a verb ("X *chairs* the
    /// board").
    pub fn add(&mut self, name: &str, previous: &str, next: &str) {
        let key = words(name).join(" ");
        if name.split_whitespace().count() == 1 {
            self.alone.insert(key.clone());
        }
        // Only what a cue says counts as a vote, not the shape alone.
        let kind = if PERSON_CUES.contains(&previous) && previous != "by" {
            AnswerType::Person
        } else if PLACE_CUES.contains(&previous) {
            AnswerType::Place
        } else if is_determiner(previous)
            && !next.is_empty()
            && (names_kind(next, AnswerType::Person) || names_kind(next, AnswerType::Organization))
        {
            AnswerType::Organization
        } else {
            return;
        };
        let slot = AnswerType::ALL.iter().position(|t| *t == kind).unwrap_or(7);
        self.votes.entry(key).or_default()[slot] += 1;
    }

    /// The type of `name`: its form's type when that is not a plain name's, else the
    /// kind of name most of its places say (an organization's designator, a person's
    /// title, a place's preposition), else its form's type.
    pub fn type_of(&self, name: &str, previous: &str) -> AnswerType {
        let form = form_type(name, previous);
        if form.is_numeric() || form == AnswerType::Organization {
            return form;
        }
        // A name of several words whose last one is written alone elsewhere.
        let all = words(name);
        let surname = all.len() > 1
            && name.split_whitespace().count() > 1
            && all.last().is_some_and(|w| self.alone.contains(w));
        let Some(votes) = self.votes.get(&all.join(" ")) else {
            return if surname && form == AnswerType::Thing {
                AnswerType::Person
            } else {
                form
            };
        };
        // Cues outvote the plain form: a person's title once, a place's preposition more
        // often than not.
        let count = |t: AnswerType| votes[AnswerType::ALL.iter().position(|x| *x == t).unwrap()];
        let (person, place, organization) = (
            count(AnswerType::Person),
            count(AnswerType::Place),
            count(AnswerType::Organization),
        );
        if organization > 0 {
            AnswerType::Organization
        } else if place > 0 && place * 2 >= person {
            AnswerType::Place
        } else if person > 0 || (surname && form == AnswerType::Thing) {
            AnswerType::Person
        } else {
            form
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(question: &str) -> Option<AnswerType> {
        asked(question).kind
    }

    #[test]
    fn the_wh_phrase_alone_asks_for_a_person_or_a_place() {
        use AnswerType::*;
        assert_eq!(asked_by_wh_phrase("where does 's spouse work"), Some(Place));
        assert_eq!(asked_by_wh_phrase("who directed"), Some(Person));
        // A class word right after the wh-word says it too.
        assert_eq!(asked_by_wh_phrase("which city was born in"), Some(Place));
        assert_eq!(
            asked_by_wh_phrase("which developers does have"),
            Some(Person)
        );
        // Not one further along, nor a noun after "is the", nor an untyped class word.
        assert_eq!(asked_by_wh_phrase("what is the city of birth"), None);
        assert_eq!(asked_by_wh_phrase("which genre is"), None);
        assert_eq!(
            asked_by_wh_phrase("who is the place of birth of 's son"),
            None
        );
        // After another auxiliary, the noun phrase is the subject: the wh-word asks.
        assert_eq!(
            asked_by_wh_phrase("where did the head of the study"),
            Some(Place)
        );
        // Dates and years are told by their form.
        assert_eq!(asked_by_wh_phrase("when was founded"), None);
        assert_eq!(stem_type(&stem("spouse")), Some(Person));
        assert_eq!(stem_type(&stem("place")), Some(Place));
        assert_eq!(stem_type(&stem("genre")), None);
    }

    #[test]
    fn the_wh_phrase_says_what_is_asked() {
        use AnswerType::*;
        assert_eq!(kind("Who designed the Sparrow engine?"), Some(Person));
        assert_eq!(kind("When did Brightfen close its round?"), Some(Date));
        assert_eq!(kind("Where is Veltra based?"), Some(Place));
        assert_eq!(kind("How much does the Nimbus kit cost?"), Some(Amount));
        assert_eq!(kind("How many engineers work on it?"), Some(Number));
        assert_eq!(kind("Which company acquired Veltra?"), Some(Organization));
        assert_eq!(kind("In which city is the plant?"), Some(Place));
        assert_eq!(kind("What year was it founded?"), Some(Year));
        assert_eq!(kind("What is the price of the Nimbus kit?"), Some(Amount));
        assert_eq!(kind("What was Veltra's budget for 2024?"), Some(Amount));
        // A compound after the possessive is read by its head: a unit price is a price.
        assert_eq!(kind("What is Blue Heron Tea's unit price?"), Some(Amount));
        // A possessive chain's next link is no part of the compound.
        assert_eq!(kind("What is Ann's children's school?"), Some(Person));
        assert_eq!(
            kind("What is the name of the company that bought it?"),
            Some(Organization)
        );
        assert_eq!(kind("Which engine did Omar Haddad design?"), Some(Thing));
        assert_eq!(
            kind("What is the generating capacity of the turbine?"),
            Some(Number)
        );
        assert_eq!(
            kind("Which football club did she join?"),
            Some(Organization)
        );
        assert_eq!(kind("What did Omar Haddad design?"), None);
        assert_eq!(kind("Tell me about Veltra"), None);
        // A noun is read as itself before a noun of another kind with its stem.
        assert_eq!(kind("In which office does the team work?"), Some(Place));
        assert_eq!(kind("Which offices did it open?"), Some(Place));
        assert_eq!(kind("Which officer signed it?"), Some(Person));
        assert_eq!(
            asked("Which engine did he design?").class.as_deref(),
            Some("engine")
        );
    }

    #[test]
    fn a_form_rules_out_what_it_cannot_answer() {
        use AnswerType::*;
        // Numbers against names, either way.
        assert!(form_misfits(Person, "1994"));
        assert!(form_misfits(Organization, "1991"));
        assert!(!form_misfits(Place, "Port Kell"));
        assert!(form_misfits(Year, "Port Kell"));
        // Only a date or a year answers "when": a count or a capacity does not.
        assert!(form_misfits(Date, "52000"));
        assert!(form_misfits(Date, "4,500"));
        assert!(!form_misfits(Date, "1994"));
        assert!(!form_misfits(Date, "2024-01-19"));
        assert!(!form_misfits(Year, "12 March 2024"));
    }

    #[test]
    fn a_spans_form_says_what_it_is() {
        use AnswerType::*;
        assert_eq!(form_type("$349", ""), Amount);
        assert_eq!(form_type("4,500 euros", ""), Amount);
        assert_eq!(form_type("€1.2 million", ""), Amount);
        assert_eq!(form_type("12 March 2024", ""), Date);
        assert_eq!(form_type("March 2024", ""), Date);
        assert_eq!(form_type("Monday", "on"), Date);
        assert_eq!(form_type("2024-03-12", ""), Date);
        assert_eq!(form_type("1994", ""), Year);
        assert_eq!(form_type("4,500", ""), Number);
        assert_eq!(form_type("twelve", ""), Number);
        assert_eq!(form_type("Norcom Group", ""), Organization);
        assert_eq!(form_type("Omar Haddad", ""), Person);
        assert_eq!(form_type("Pennick & Lowe", ""), Organization);
        assert_eq!(form_type("Saint-Évrard", ""), Thing);
        assert_eq!(form_type("Dunmarrow Corn Exchange", ""), Thing);
        assert_eq!(form_type("Samuel L. Jackson", ""), Person);
        assert_eq!(form_type("Tarsk", "in"), Place);
        assert_eq!(form_type("Haddad", "dr"), Person);
        assert_eq!(form_type("Sparrow 2", ""), Thing);
        assert_eq!(form_type("May", ""), Thing);
    }

    #[test]
    fn a_name_is_typed_by_every_place_it_is_written() {
        let mut names = NameTypes::default();
        names.add("Tarsk", "", "");
        names.add("Tarsk", "in", "");
        names.add("Lena Ortiz", "", "");
        names.add("Veltra Labs", "at", "");
        names.add("Aurelie Marie Castaing", "", "");
        names.add("Castaing", "", "");
        assert_eq!(names.type_of("Tarsk", ""), AnswerType::Place);
        assert_eq!(names.type_of("Lena Ortiz", ""), AnswerType::Person);
        assert_eq!(names.type_of("Veltra Labs", ""), AnswerType::Organization);
        assert_eq!(
            names.type_of("Aurelie Marie Castaing", ""),
            AnswerType::Person
        );
        assert_eq!(names.type_of("1994", ""), AnswerType::Year);
    }

    #[test]
    fn a_name_between_a_determiner_and_a_noun_for_people_is_no_person() {
        let mut names = NameTypes::default();
        names.add("Customer Care", "our", "agents");
        names.add("Talent Acquisition", "the", "team");
        // A verb after a person's name is no cue, nor is a noun without a determiner.
        names.add("Gideon Whitlock", "", "chairs");
        names.add("Lena Ortiz", ",", "manager");
        assert_eq!(names.type_of("Customer Care", ""), AnswerType::Organization);
        assert_eq!(
            names.type_of("Talent Acquisition", ""),
            AnswerType::Organization
        );
        assert_eq!(names.type_of("Gideon Whitlock", ""), AnswerType::Person);
        assert_eq!(names.type_of("Lena Ortiz", ""), AnswerType::Person);
    }

    #[test]
    fn fit_prefers_the_type_asked_and_refuses_numbers_for_names() {
        use AnswerType::*;
        assert_eq!(fit(Person, Person), 1.0);
        assert!(fit(Person, Organization) > fit(Person, Place));
        assert_eq!(fit(Person, Year), 0.0);
        assert_eq!(fit(Amount, Date), 0.0);
        assert!(fit(Date, Year) > 0.5);
    }
}
