//! The pages' languages: one Fluent resource per translation (`src/pages/locales/<tag>.ftl`,
//! compiled into the binary), bundled once per process, and the negotiation that picks one
//! for the platform's `user_locale` (BCP 47) or, without it, the browser's
//! `Accept-Language`.
//!
//! Negotiation is fluent-langneg's `Lookup` over [`LANGUAGES`] with English as the default,
//! after two decisions of linkd's own:
//! - Chinese written in Simplified characters (`zh`, `zh-CN`, `zh-SG`, `zh-Hans`) gets
//!   English, not the Traditional translation: a Simplified reader is better served by a
//!   language they chose as a fallback than by a script they may read with difficulty.
//!   `zh-TW`, `zh-HK`, `zh-MO` and `zh-Hant` get Traditional Chinese.
//! - Any Portuguese (`pt`, `pt-PT`, `pt-AO`) gets the Brazilian translation, the only one.
//!
//! A tag that does not parse, is longer than [`MAX_TAG_LEN`], or names no translation gives
//! English; it never fails the page.
//!
//! Placeables are formatted without Unicode isolation marks (FSI/PDI): every value lands in
//! an HTML element whose direction is the page's, and the marks would show up as stray
//! characters in copied text and break substring matching in tests. Values are formatted as
//! plain text and escaped once, by askama, when the page is rendered.

use std::borrow::Cow;
use std::sync::OnceLock;

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use fluent_langneg::{NegotiationStrategy, negotiate_languages};
use unic_langid::LanguageIdentifier;

/// Every translation: its BCP 47 tag and its Fluent source. English comes first: it is the
/// fallback and the reference every other translation is checked against.
pub const LANGUAGES: &[(&str, &str)] = &[
    ("en", include_str!("locales/en.ftl")),
    ("de", include_str!("locales/de.ftl")),
    ("fr", include_str!("locales/fr.ftl")),
    ("es", include_str!("locales/es.ftl")),
    ("it", include_str!("locales/it.ftl")),
    ("nl", include_str!("locales/nl.ftl")),
    ("pt-BR", include_str!("locales/pt-BR.ftl")),
    ("ja", include_str!("locales/ja.ftl")),
    ("ko", include_str!("locales/ko.ftl")),
    ("zh-TW", include_str!("locales/zh-TW.ftl")),
];

/// Longest language tag considered; longer values are not parsed at all.
pub const MAX_TAG_LEN: usize = 35;

/// Most `Accept-Language` entries considered.
const MAX_ACCEPT_ENTRIES: usize = 16;

/// One language's messages.
pub struct Texts {
    tag: &'static str,
    bundle: FluentBundle<FluentResource>,
}

impl std::fmt::Debug for Texts {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Texts")
            .field("tag", &self.tag)
            .finish()
    }
}

impl Texts {
    /// The BCP 47 tag, for `<html lang>`.
    pub fn tag(&self) -> &'static str {
        self.tag
    }

    /// Message `id` without variables.
    pub fn text(&self, id: &str) -> String {
        self.format(id, None)
    }

    /// Message `id` with `variables` (name, value). A missing message or a formatting error
    /// is logged and shows the English text (or, failing that, the id), so a page always
    /// renders; the tests make sure neither happens.
    pub fn with(&self, id: &str, variables: &[(&str, &str)]) -> String {
        let mut args = FluentArgs::with_capacity(variables.len());
        for (name, value) in variables {
            args.set(*name, FluentValue::from(*value));
        }
        self.format(id, Some(&args))
    }

    fn format(&self, id: &str, args: Option<&FluentArgs<'_>>) -> String {
        match self.try_format(id, args) {
            Ok(text) => text,
            Err(problem) => {
                tracing::error!(language = self.tag, id, %problem, "page message failed");
                let english = english();
                if !std::ptr::eq(english, self)
                    && let Ok(text) = english.try_format(id, args)
                {
                    return text;
                }
                id.to_owned()
            }
        }
    }

    /// Message `id` formatted, or why it could not be.
    pub fn try_format(&self, id: &str, args: Option<&FluentArgs<'_>>) -> Result<String, String> {
        let message = self
            .bundle
            .get_message(id)
            .ok_or_else(|| format!("no message {id}"))?;
        let pattern = message
            .value()
            .ok_or_else(|| format!("message {id} has no value"))?;
        let mut errors = Vec::new();
        let text: Cow<'_, str> = self.bundle.format_pattern(pattern, args, &mut errors);
        if let Some(error) = errors.first() {
            return Err(format!("{id}: {error}"));
        }
        Ok(text.into_owned())
    }

    /// The ids of every message in this language.
    pub fn message_ids(&self) -> Vec<String> {
        let source = LANGUAGES
            .iter()
            .find(|(tag, _)| *tag == self.tag)
            .map_or("", |(_, source)| *source);
        match FluentResource::try_new(source.to_owned()) {
            Ok(resource) | Err((resource, _)) => resource
                .entries()
                .filter_map(|entry| match entry {
                    fluent_syntax::ast::Entry::Message(message) => Some(message.id.name.to_owned()),
                    _ => None,
                })
                .collect(),
        }
    }
}

struct Catalog {
    texts: Vec<Texts>,
    available: Vec<LanguageIdentifier>,
}

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let mut texts = Vec::with_capacity(LANGUAGES.len());
        let mut available = Vec::with_capacity(LANGUAGES.len());
        for (tag, source) in LANGUAGES {
            let language: LanguageIdentifier = tag.parse().unwrap_or_default();
            // The sources are part of the binary and a unit test parses each of them:
            // a syntax error cannot ship, so the entries that did parse are used as they are.
            let resource = match FluentResource::try_new((*source).to_owned()) {
                Ok(resource) => resource,
                Err((resource, errors)) => {
                    tracing::error!(language = tag, ?errors, "page translation does not parse");
                    resource
                }
            };
            let mut bundle = FluentBundle::new_concurrent(vec![language.clone()]);
            bundle.set_use_isolating(false);
            if let Err(errors) = bundle.add_resource(resource) {
                tracing::error!(language = tag, ?errors, "page translation has duplicates");
            }
            texts.push(Texts { tag, bundle });
            available.push(language);
        }
        Catalog { texts, available }
    })
}

/// English, the fallback.
pub fn english() -> &'static Texts {
    &catalog().texts[0]
}

/// The translation for the platform's `user_locale`, or else the browser's
/// `Accept-Language`, or else English.
pub fn negotiate(user_locale: Option<&str>, accept_language: Option<&str>) -> &'static Texts {
    if let Some(tag) = user_locale.filter(|tag| !tag.trim().is_empty()) {
        return best(std::iter::once(tag));
    }
    match accept_language {
        Some(header) if header.len() <= 1024 => best(
            header
                .split(',')
                .take(MAX_ACCEPT_ENTRIES)
                .filter_map(|entry| {
                    let mut parts = entry.split(';');
                    let tag = parts.next()?.trim();
                    // `q=0` means "not this one"; other weights keep the listed order,
                    // which is what browsers send.
                    let refused = parts.any(|p| {
                        let p = p.trim();
                        p.strip_prefix("q=")
                            .and_then(|q| q.parse::<f32>().ok())
                            .is_some_and(|q| q <= 0.0)
                    });
                    (!refused && tag != "*").then_some(tag)
                }),
        ),
        _ => english(),
    }
}

/// The translation of a tag [`negotiate`] picked before (e.g. carried in a form), English
/// for anything else.
pub fn by_tag(tag: &str) -> &'static Texts {
    catalog()
        .texts
        .iter()
        .find(|texts| texts.tag == tag)
        .unwrap_or_else(english)
}

fn best<'a>(tags: impl Iterator<Item = &'a str>) -> &'static Texts {
    let requested: Vec<LanguageIdentifier> = tags.filter_map(parse_tag).collect();
    if requested.is_empty() {
        return english();
    }
    let catalog = catalog();
    let default = &catalog.available[0];
    let chosen = negotiate_languages(
        &requested,
        &catalog.available,
        Some(default),
        NegotiationStrategy::Lookup,
    );
    chosen
        .first()
        .and_then(|language| {
            catalog
                .available
                .iter()
                .position(|available| available == *language)
        })
        .map_or_else(english, |index| &catalog.texts[index])
}

/// A requested tag as a language identifier, `None` for anything that is not a sane tag or
/// asks for Simplified Chinese (which has no translation: see the module header).
fn parse_tag(tag: &str) -> Option<LanguageIdentifier> {
    let tag = tag.trim();
    if tag.is_empty()
        || tag.len() > MAX_TAG_LEN
        || !tag
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
    {
        return None;
    }
    let mut language: LanguageIdentifier = tag.replace('_', "-").parse().ok()?;
    if language.language.as_str() == "zh" {
        // The script decides; without one, the regions that write Traditional characters.
        let traditional = match language.script.map(|script| script.as_str().to_owned()) {
            Some(script) => script == "Hant",
            None => language
                .region
                .is_some_and(|region| ["TW", "HK", "MO"].contains(&region.as_str())),
        };
        if !traditional {
            return None;
        }
        language = "zh-TW".parse().ok()?;
    }
    if language.language.as_str() == "pt" {
        language = "pt-BR".parse().ok()?;
    }
    Some(language)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_translation_parses_and_has_exactly_the_english_messages() {
        let english_ids = {
            let mut ids = english().message_ids();
            ids.sort();
            ids
        };
        assert!(english_ids.len() > 40, "{english_ids:?}");
        for (tag, source) in LANGUAGES {
            if let Err((_, errors)) = FluentResource::try_new((*source).to_owned()) {
                panic!("{tag}.ftl does not parse: {errors:?}");
            }
            let mut ids = by_tag(tag).message_ids();
            ids.sort();
            let missing: Vec<_> = english_ids.iter().filter(|id| !ids.contains(id)).collect();
            let extra: Vec<_> = ids.iter().filter(|id| !english_ids.contains(id)).collect();
            assert!(missing.is_empty(), "{tag} lacks {missing:?}");
            assert!(extra.is_empty(), "{tag} has extra {extra:?}");
            let mut unique = ids.clone();
            unique.dedup();
            assert_eq!(unique.len(), ids.len(), "{tag} repeats a message");
        }
    }

    /// The variables each message may use: every message formats without error with them,
    /// and uses each variable the English text uses.
    #[test]
    fn every_message_formats_with_its_variables_in_every_language() {
        let variables = [
            ("platform", "Google <Home>"),
            ("company", "Acme & Co"),
            ("name", "Acme Home"),
            ("scope", "thermostat.read"),
            ("email", "ada@example.com"),
            ("date", "2026-11-23"),
        ];
        let mut args = FluentArgs::new();
        for (name, value) in variables {
            args.set(name, FluentValue::from(value));
        }
        for id in english().message_ids() {
            let english_text = english().try_format(&id, Some(&args)).unwrap();
            for (tag, _) in LANGUAGES {
                let text = by_tag(tag)
                    .try_format(&id, Some(&args))
                    .unwrap_or_else(|problem| panic!("{tag}: {problem}"));
                assert!(!text.trim().is_empty(), "{tag} {id} is empty");
                assert!(!text.contains('{'), "{tag} {id}: {text}");
                assert!(
                    !text.contains('\u{2068}') && !text.contains('\u{2069}'),
                    "{tag} {id} has isolation marks"
                );
                for (_, value) in variables {
                    assert_eq!(
                        english_text.contains(value),
                        text.contains(value),
                        "{tag} {id} does not use the same variables as English: {text}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_error_page_refusal_has_a_message() {
        for refusal in crate::oauth::authorize::Refusal::ALL {
            for (tag, _) in LANGUAGES {
                by_tag(tag)
                    .try_format(refusal.message_id(), None)
                    .unwrap_or_else(|problem| panic!("{tag}: {problem}"));
            }
        }
    }

    #[test]
    fn a_missing_message_shows_the_id_not_a_panic() {
        assert_eq!(by_tag("de").text("no-such-message"), "no-such-message");
    }

    #[test]
    fn negotiation_table() {
        let cases: &[(Option<&str>, Option<&str>, &str)] = &[
            (Some("en-US"), None, "en"),
            (Some("en-GB"), None, "en"),
            (Some("de"), None, "de"),
            (Some("de-AT"), None, "de"),
            (Some("de_CH"), None, "de"),
            (Some("DE-de"), None, "de"),
            (Some("fr-CA"), None, "fr"),
            (Some("es-419"), None, "es"),
            (Some("es-MX"), None, "es"),
            (Some("it-IT"), None, "it"),
            (Some("nl-BE"), None, "nl"),
            (Some("pt-BR"), None, "pt-BR"),
            (Some("pt"), None, "pt-BR"),
            (Some("pt-PT"), None, "pt-BR"),
            (Some("ja-JP"), None, "ja"),
            (Some("ko-KR"), None, "ko"),
            (Some("zh-TW"), None, "zh-TW"),
            (Some("zh-Hant"), None, "zh-TW"),
            (Some("zh-Hant-TW"), None, "zh-TW"),
            (Some("zh-HK"), None, "zh-TW"),
            (Some("zh-MO"), None, "zh-TW"),
            (Some("zh-CN"), None, "en"),
            (Some("zh"), None, "en"),
            (Some("zh-Hans"), None, "en"),
            (Some("zh-SG"), None, "en"),
            (Some("sv-SE"), None, "en"),
            (Some("xx-YY"), None, "en"),
            (Some(""), None, "en"),
            (None, None, "en"),
            // Hostile values: never an error, always English.
            (Some("../../etc/passwd"), None, "en"),
            (Some("<script>alert(1)</script>"), None, "en"),
            (Some("de\u{0}"), None, "en"),
            (Some("de\r\nSet-Cookie: x=1"), None, "en"),
            (Some(&*"de-".repeat(1000)), None, "en"),
            (Some("de-AT-x-"), None, "en"),
            (Some("🙂"), None, "en"),
            // The platform's user_locale wins over the browser's.
            (Some("fr"), Some("de-DE,de;q=0.9"), "fr"),
            (None, Some("de-DE,de;q=0.9,en;q=0.8"), "de"),
            (None, Some("sv-SE,nl;q=0.8,en;q=0.5"), "nl"),
            (None, Some("zh-CN,zh;q=0.9,ja;q=0.8"), "ja"),
            (None, Some("ja;q=0,ko"), "ko"),
            (None, Some("*"), "en"),
            (None, Some(&*"de,".repeat(2000)), "en"),
            (None, Some("<script>,\u{7}"), "en"),
        ];
        for (user_locale, accept, expected) in cases {
            assert_eq!(
                negotiate(*user_locale, *accept).tag(),
                *expected,
                "{user_locale:?} / {accept:?}"
            );
        }
    }

    #[test]
    fn placeables_are_plain_text_for_the_template_to_escape() {
        let text = by_tag("de").with("signin-heading", &[("company", "A <b>&amp;</b>")]);
        assert!(text.contains("A <b>&amp;</b>"), "{text}");
    }
}
