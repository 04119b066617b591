//! Who may use the HTTP API: bearer tokens with scopes, per-token rate and concurrency
//! limits, and the anonymous access a server without tokens allows.
//!
//! Tokens are kept only as SHA-256 hashes; a presented token is hashed and compared with
//! every known hash in constant time, so neither the comparison nor the order of the
//! tokens tells an attacker how close a guess was. A token's *name* (never the token) is
//! what logs, trace spans, metrics and the plan cache's principal see.
//!
//! The rules ([`Access::authorize`]):
//! - `GET /healthz`, `GET /readyz` and the console's page, script and style sheet need
//!   nothing (the page asks for a token before it reads anything).
//! - Every other route needs a scope: `ask` (`POST /v1/ask`, `GET /v1/agents`,
//!   `GET /v1/schema`), `cypher` (`POST /v1/cypher`: the whole graph), `feedback`
//!   (`POST /v1/feedback`: changes the shared plan cache); `admin` holds every scope and
//!   makes its feedback an administrator's.
//! - Without tokens configured, `ask` is anonymous and `cypher` and `feedback` are
//!   refused: 401 (a token is needed, and none can be given) or, when the API is
//!   declared open, 403 (open means anonymous questions only).
//! - With tokens configured, every scoped route needs a token, except `ask` when the API
//!   is also declared open.

use std::{
    collections::BTreeSet,
    fmt,
    sync::Arc,
    time::{Duration, Instant},
};

use kgmesh_schemas::messages::cache::Principal;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// What a route needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Questions, and the console's reads (roles, schema).
    Ask,
    /// Read-only openCypher over the whole graph.
    Cypher,
    /// Feedback on answers, which changes the shared plan cache.
    Feedback,
    /// Every scope; feedback counts as an administrator's.
    Admin,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Ask => "ask",
            Scope::Cypher => "cypher",
            Scope::Feedback => "feedback",
            Scope::Admin => "admin",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Shortest plain token accepted: shorter ones could be guessed.
pub const MIN_TOKEN_CHARS: usize = 16;

/// One token as a configuration, a tokens file or an environment variable writes it:
/// its name, its SHA-256 (`sha256`, hex) or the token itself (`token`, hashed on load),
/// its scopes and, optionally, its own limits.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, into = "HashedEntry")]
pub struct TokenEntry {
    pub name: String,
    #[serde(default)]
    pub sha256: Option<String>,
    #[serde(default)]
    pub token: Option<String>,
    #[serde(default)]
    pub scopes: Vec<Scope>,
    /// Requests per second on average (token bucket); unset: the server's default.
    #[serde(default)]
    pub rate_per_second: Option<f64>,
    /// Requests at once above the average (the bucket's size); unset: the default.
    #[serde(default)]
    pub burst: Option<u32>,
    /// Requests in progress at once; unset: the default.
    #[serde(default)]
    pub max_concurrent: Option<u32>,
}

/// A [`TokenEntry`] as it is written back (`kgmesh config show`): the hash, never the
/// token.
#[derive(Serialize)]
struct HashedEntry {
    name: String,
    sha256: String,
    scopes: Vec<Scope>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate_per_second: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    burst: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_concurrent: Option<u32>,
}

impl From<TokenEntry> for HashedEntry {
    fn from(entry: TokenEntry) -> Self {
        let sha256 = match (&entry.token, &entry.sha256) {
            (Some(token), _) => hex(&sha256(token)),
            (None, Some(hash)) => hash.clone(),
            (None, None) => String::new(),
        };
        Self {
            name: entry.name,
            sha256,
            scopes: entry.scopes,
            rate_per_second: entry.rate_per_second,
            burst: entry.burst,
            max_concurrent: entry.max_concurrent,
        }
    }
}

impl fmt::Debug for TokenEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenEntry")
            .field("name", &self.name)
            .field("sha256", &self.sha256)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("scopes", &self.scopes)
            .field("rate_per_second", &self.rate_per_second)
            .field("burst", &self.burst)
            .field("max_concurrent", &self.max_concurrent)
            .finish()
    }
}

/// A tokens file (or the value of the tokens environment variable): TOML,
/// `[[tokens]]` tables of [`TokenEntry`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokensDocument {
    #[serde(default)]
    pub tokens: Vec<TokenEntry>,
}

/// Limits of one token (or the defaults of every token).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenLimits {
    /// Requests per second on average; 0: no rate limit.
    pub rate_per_second: f64,
    /// The bucket's size (at least 1 when there is a rate).
    pub burst: u32,
    /// Requests in progress at once; 0: no limit beyond the server's.
    pub max_concurrent: u32,
}

impl Default for TokenLimits {
    fn default() -> Self {
        Self {
            rate_per_second: 10.0,
            burst: 20,
            max_concurrent: 8,
        }
    }
}

/// SHA-256 of `text`.
pub fn sha256(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// A token name goes into logs and metrics labels as it is: a few safe characters.
fn name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
}

/// One known token, ready to check.
struct Token {
    name: String,
    hash: [u8; 32],
    scopes: BTreeSet<Scope>,
    bucket: Option<Mutex<Bucket>>,
    concurrent: Option<Arc<Semaphore>>,
    max_concurrent: u32,
}

impl Token {
    fn allows(&self, scope: Scope) -> bool {
        self.scopes.contains(&Scope::Admin) || self.scopes.contains(&scope)
    }
}

/// A token bucket: `rate` tokens a second, at most `size`.
struct Bucket {
    rate: f64,
    size: f64,
    level: f64,
    at: Instant,
}

impl Bucket {
    fn new(rate: f64, size: u32) -> Self {
        let size = f64::from(size.max(1));
        Self {
            rate,
            size,
            level: size,
            at: Instant::now(),
        }
    }

    /// Takes one; when empty, how long until one is there.
    fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.level = (self.level + elapsed * self.rate).min(self.size);
        self.at = now;
        if self.level >= 1.0 {
            self.level -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.level) / self.rate))
        }
    }
}

/// A refusal: its status (401, 403 or 429), its kind and message for the JSON error
/// body, and, for 429, the seconds to wait.
#[derive(Debug, Clone, PartialEq)]
pub struct Denial {
    pub status: u16,
    pub kind: &'static str,
    pub message: String,
    pub retry_after_secs: Option<u64>,
    /// The token's name when a known token was refused (403, 429).
    pub principal: Option<String>,
}

/// Who a request is, and the concurrency slot it holds until dropped.
#[derive(Debug)]
pub struct Grant {
    pub principal: Principal,
    _slot: Option<OwnedSemaphorePermit>,
}

impl Grant {
    fn anonymous() -> Self {
        Self {
            principal: Principal::anonymous(),
            _slot: None,
        }
    }
}

/// The tokens a server knows and what it allows without one.
pub struct Access {
    tokens: Vec<Token>,
    open: bool,
    metrics_public: bool,
}

impl fmt::Debug for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Access")
            .field(
                "tokens",
                &self.tokens.iter().map(|t| &t.name).collect::<Vec<_>>(),
            )
            .field("open", &self.open)
            .finish()
    }
}

/// The setting that declares the API open, as messages name it.
pub const OPEN_SETTING: &str = "http.open";
/// The settings that configure tokens, as messages name them.
pub const TOKEN_SETTINGS: &str = "http.tokens_file, http.tokens_env or http.tokens";

impl Access {
    /// No tokens: anonymous questions, no `cypher` or `feedback`.
    pub fn local() -> Self {
        Self {
            tokens: Vec::new(),
            open: false,
            metrics_public: true,
        }
    }

    /// Checks `entries` (every problem at once) and keeps their hashes; `defaults` are the
    /// limits of a token that sets none; `open` lets anonymous questions in beside them.
    pub fn new(
        entries: &[TokenEntry],
        defaults: TokenLimits,
        open: bool,
    ) -> Result<Self, Vec<String>> {
        let mut problems = Vec::new();
        let mut tokens: Vec<Token> = Vec::new();
        for (index, entry) in entries.iter().enumerate() {
            let what = if entry.name.is_empty() {
                format!("token #{}", index + 1)
            } else {
                format!("token `{}`", entry.name)
            };
            if !name_ok(&entry.name) {
                problems.push(format!(
                    "{what}: `name` must be 1 to 64 letters, digits, `-`, `_`, `.` or `@` (it \
                     goes into logs and metrics)"
                ));
            }
            let hash = match (&entry.sha256, &entry.token) {
                (Some(_), Some(_)) => {
                    problems.push(format!("{what}: give `sha256` or `token`, not both"));
                    None
                }
                (None, None) => {
                    problems.push(format!(
                        "{what}: give `sha256` (hex SHA-256 of the token, e.g. `printf %s TOKEN \
                         | sha256sum`) or `token`"
                    ));
                    None
                }
                (Some(hash), None) => {
                    let parsed = unhex(hash);
                    if parsed.is_none() {
                        problems.push(format!(
                            "{what}: `sha256` must be 64 hexadecimal digits (a SHA-256 hash)"
                        ));
                    }
                    parsed
                }
                (None, Some(token)) => {
                    if token.chars().count() < MIN_TOKEN_CHARS
                        || token.chars().any(|c| c.is_whitespace() || c.is_control())
                    {
                        problems.push(format!(
                            "{what}: a `token` needs at least {MIN_TOKEN_CHARS} characters and no \
                             spaces (e.g. `openssl rand -hex 32`)"
                        ));
                        None
                    } else {
                        Some(sha256(token))
                    }
                }
            };
            if entry.scopes.is_empty() {
                problems.push(format!(
                    "{what}: `scopes` is empty; give some of ask, cypher, feedback, admin"
                ));
            }
            let rate = entry.rate_per_second.unwrap_or(defaults.rate_per_second);
            if !(rate.is_finite() && rate >= 0.0) {
                problems.push(format!(
                    "{what}: `rate_per_second` must be 0 (no limit) or more"
                ));
            }
            let burst = entry.burst.unwrap_or(defaults.burst);
            if rate > 0.0 && burst == 0 {
                problems.push(format!("{what}: `burst` must be at least 1"));
            }
            let max_concurrent = entry.max_concurrent.unwrap_or(defaults.max_concurrent);
            if tokens.iter().any(|t| t.name == entry.name) {
                problems.push(format!("{what}: the name is given twice"));
            }
            let Some(hash) = hash else { continue };
            if tokens.iter().any(|t| t.hash == hash) {
                problems.push(format!("{what}: the same token as another one"));
            }
            tokens.push(Token {
                name: entry.name.clone(),
                hash,
                scopes: entry.scopes.iter().copied().collect(),
                bucket: (rate > 0.0 && rate.is_finite())
                    .then(|| Mutex::new(Bucket::new(rate, burst))),
                concurrent: (max_concurrent > 0)
                    .then(|| Arc::new(Semaphore::new(max_concurrent as usize))),
                max_concurrent,
            });
        }
        if problems.is_empty() {
            Ok(Self {
                tokens,
                open,
                metrics_public: true,
            })
        } else {
            Err(problems)
        }
    }

    /// With `GET /metrics` open to anyone (`true`, the default: scrapers come without a
    /// token) or only to `admin` tokens.
    pub fn with_public_metrics(mut self, public: bool) -> Self {
        self.metrics_public = public;
        self
    }

    pub fn metrics_public(&self) -> bool {
        self.metrics_public
    }

    /// Whether any token is configured.
    pub fn has_tokens(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// Whether anonymous questions are let in although the server is reachable beyond
    /// this machine.
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// The token names, for the startup log.
    pub fn names(&self) -> Vec<&str> {
        self.tokens.iter().map(|t| t.name.as_str()).collect()
    }

    /// Who sent `authorization` (the `Authorization` header's value, if any), and whether
    /// it may use `scope` now.
    pub fn authorize(&self, authorization: Option<&str>, scope: Scope) -> Result<Grant, Denial> {
        let Some(header) = authorization else {
            return self.anonymous(scope);
        };
        let Some(presented) = bearer(header) else {
            return Err(unauthorized(
                "the Authorization header must be `Bearer <token>`".to_owned(),
            ));
        };
        let hash = sha256(presented);
        // Every hash is compared, in constant time, whichever matches.
        let mut found: Option<&Token> = None;
        for token in &self.tokens {
            if bool::from(token.hash.ct_eq(&hash)) {
                found = Some(token);
            }
        }
        let Some(token) = found else {
            return Err(unauthorized(
                "the token is not known to this server".to_owned(),
            ));
        };
        if !token.allows(scope) {
            return Err(Denial {
                status: 403,
                kind: "forbidden",
                message: format!(
                    "the token `{}` lacks the `{scope}` scope (it has: {})",
                    token.name,
                    token
                        .scopes
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                retry_after_secs: None,
                principal: Some(token.name.clone()),
            });
        }
        let slot = match &token.concurrent {
            None => None,
            Some(semaphore) => match semaphore.clone().try_acquire_owned() {
                Ok(permit) => Some(permit),
                Err(_) => {
                    return Err(too_many(
                        token,
                        format!(
                            "the token `{}` has {} requests in progress already, its limit",
                            token.name, token.max_concurrent
                        ),
                        1,
                    ))
                }
            },
        };
        if let Some(bucket) = &token.bucket {
            if let Err(wait) = bucket.lock().take(Instant::now()) {
                let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
                return Err(too_many(
                    token,
                    format!(
                        "the token `{}` is over its rate limit; retry in {seconds} s",
                        token.name
                    ),
                    seconds,
                ));
            }
        }
        Ok(Grant {
            principal: Principal {
                name: token.name.clone(),
                admin: token.scopes.contains(&Scope::Admin),
            },
            _slot: slot,
        })
    }

    fn anonymous(&self, scope: Scope) -> Result<Grant, Denial> {
        match scope {
            Scope::Ask if self.tokens.is_empty() || self.open => Ok(Grant::anonymous()),
            Scope::Ask => Err(unauthorized(
                "this server needs a token with the `ask` scope: send `Authorization: Bearer \
                 <token>`"
                    .to_owned(),
            )),
            _ if !self.tokens.is_empty() => Err(unauthorized(format!(
                "`{scope}` needs a token with the `{scope}` scope: send `Authorization: Bearer \
                 <token>`"
            ))),
            _ if self.open => Err(Denial {
                status: 403,
                kind: "forbidden",
                message: format!(
                    "`{scope}` is off: the API is open ({OPEN_SETTING} = true) and open means \
                     anonymous questions only; configure tokens ({TOKEN_SETTINGS}) to use it"
                ),
                retry_after_secs: None,
                principal: None,
            }),
            _ => Err(unauthorized(format!(
                "`{scope}` needs a token with the `{scope}` scope, and this server has no \
                 tokens: configure some ({TOKEN_SETTINGS})"
            ))),
        }
    }
}

fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn unauthorized(message: String) -> Denial {
    Denial {
        status: 401,
        kind: "unauthorized",
        message,
        retry_after_secs: None,
        principal: None,
    }
}

fn too_many(token: &Token, message: String, seconds: u64) -> Denial {
    Denial {
        status: 429,
        kind: "rate_limited",
        message,
        retry_after_secs: Some(seconds),
        principal: Some(token.name.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALICE: &str = "alice-token-0123456789";
    const BOB: &str = "bob-token-0123456789ab";

    fn entry(name: &str, token: &str, scopes: &[Scope]) -> TokenEntry {
        TokenEntry {
            name: name.to_owned(),
            token: Some(token.to_owned()),
            scopes: scopes.to_vec(),
            ..TokenEntry::default()
        }
    }

    fn bearer_of(token: &str) -> String {
        format!("Bearer {token}")
    }

    #[test]
    fn a_token_is_known_by_its_hash_and_has_only_its_scopes() {
        let hashed = TokenEntry {
            name: "bob".to_owned(),
            sha256: Some(hex(&sha256(BOB))),
            scopes: vec![Scope::Admin],
            ..TokenEntry::default()
        };
        let access = Access::new(
            &[entry("alice", ALICE, &[Scope::Ask]), hashed],
            TokenLimits::default(),
            false,
        )
        .unwrap();
        let grant = access
            .authorize(Some(&bearer_of(ALICE)), Scope::Ask)
            .unwrap();
        assert_eq!(grant.principal.name, "alice");
        assert!(!grant.principal.admin);
        let denied = access
            .authorize(Some(&bearer_of(ALICE)), Scope::Feedback)
            .unwrap_err();
        assert_eq!(denied.status, 403);
        assert!(denied.message.contains("`feedback`"), "{}", denied.message);
        // admin holds every scope.
        let grant = access
            .authorize(Some(&format!("bearer  {BOB} ")), Scope::Cypher)
            .unwrap();
        assert_eq!(
            grant.principal,
            Principal {
                name: "bob".to_owned(),
                admin: true
            }
        );
        for header in [
            bearer_of("alice-token-0123456788"),
            ALICE.to_owned(),
            "Basic abc".to_owned(),
        ] {
            let denied = access.authorize(Some(&header), Scope::Ask).unwrap_err();
            assert_eq!(denied.status, 401, "{header}");
        }
        // With tokens, no anonymous questions either.
        assert_eq!(access.authorize(None, Scope::Ask).unwrap_err().status, 401);
    }

    #[test]
    fn without_tokens_questions_are_anonymous_and_the_rest_is_refused() {
        let local = Access::local();
        assert_eq!(
            local.authorize(None, Scope::Ask).unwrap().principal,
            Principal::anonymous()
        );
        for scope in [Scope::Cypher, Scope::Feedback, Scope::Admin] {
            let denied = local.authorize(None, scope).unwrap_err();
            assert_eq!(denied.status, 401);
            assert!(
                denied.message.contains(TOKEN_SETTINGS),
                "{}",
                denied.message
            );
        }
        let open = Access::new(&[], TokenLimits::default(), true).unwrap();
        assert!(open.authorize(None, Scope::Ask).is_ok());
        let denied = open.authorize(None, Scope::Feedback).unwrap_err();
        assert_eq!(denied.status, 403);
        assert!(denied.message.contains(OPEN_SETTING), "{}", denied.message);
        // Open beside tokens: anonymous questions, the rest needs a token.
        let both = Access::new(
            &[entry("alice", ALICE, &[Scope::Feedback])],
            TokenLimits::default(),
            true,
        )
        .unwrap();
        assert!(both.authorize(None, Scope::Ask).is_ok());
        assert_eq!(
            both.authorize(None, Scope::Feedback).unwrap_err().status,
            401
        );
        assert!(both
            .authorize(Some(&bearer_of(ALICE)), Scope::Feedback)
            .is_ok());
    }

    #[test]
    fn a_token_over_its_rate_waits_and_another_is_served() {
        let limits = TokenLimits {
            rate_per_second: 1.0,
            burst: 2,
            max_concurrent: 0,
        };
        let access = Access::new(
            &[
                entry("alice", ALICE, &[Scope::Ask]),
                entry("bob", BOB, &[Scope::Ask]),
            ],
            limits,
            false,
        )
        .unwrap();
        for _ in 0..2 {
            access
                .authorize(Some(&bearer_of(ALICE)), Scope::Ask)
                .unwrap();
        }
        let denied = access
            .authorize(Some(&bearer_of(ALICE)), Scope::Ask)
            .unwrap_err();
        assert_eq!(
            (denied.status, denied.retry_after_secs),
            (429, Some(1)),
            "{denied:?}"
        );
        assert_eq!(denied.principal.as_deref(), Some("alice"));
        assert!(access.authorize(Some(&bearer_of(BOB)), Scope::Ask).is_ok());
    }

    #[test]
    fn a_token_holds_at_most_its_concurrent_requests() {
        let mut alice = entry("alice", ALICE, &[Scope::Ask]);
        alice.max_concurrent = Some(1);
        alice.rate_per_second = Some(0.0);
        let access = Access::new(&[alice], TokenLimits::default(), false).unwrap();
        let held = access
            .authorize(Some(&bearer_of(ALICE)), Scope::Ask)
            .unwrap();
        let denied = access
            .authorize(Some(&bearer_of(ALICE)), Scope::Ask)
            .unwrap_err();
        assert_eq!(denied.status, 429);
        drop(held);
        assert!(access
            .authorize(Some(&bearer_of(ALICE)), Scope::Ask)
            .is_ok());
    }

    #[test]
    fn bad_entries_are_all_reported() {
        let entries = [
            entry("alice", "short", &[Scope::Ask]),
            entry("has space", ALICE, &[]),
            TokenEntry {
                name: "carol".to_owned(),
                sha256: Some("abc".to_owned()),
                scopes: vec![Scope::Ask],
                ..TokenEntry::default()
            },
            entry("dave", BOB, &[Scope::Ask]),
            entry("dave", BOB, &[Scope::Ask]),
        ];
        let problems = Access::new(&entries, TokenLimits::default(), false)
            .unwrap_err()
            .join("\n");
        for needle in [
            "token `alice`: a `token` needs at least 16",
            "token `has space`: `name`",
            "token `has space`: `scopes` is empty",
            "token `carol`: `sha256` must be 64",
            "token `dave`: the name is given twice",
            "token `dave`: the same token as another one",
        ] {
            assert!(problems.contains(needle), "{needle} not in:\n{problems}");
        }
    }

    #[test]
    fn written_back_an_entry_shows_the_hash_not_the_token() {
        let written = serde_json::to_string(&entry("alice", ALICE, &[Scope::Ask])).unwrap();
        assert!(!written.contains(ALICE), "{written}");
        assert!(written.contains(&hex(&sha256(ALICE))), "{written}");
        let debug = format!("{:?}", entry("alice", ALICE, &[Scope::Ask]));
        assert!(!debug.contains(ALICE), "{debug}");
    }
}
