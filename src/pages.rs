//! The HTML pages of the linking flow, one typed view per page, rendered from `templates/`
//! with askama's auto-escaping. Wording follows the interface's linking-page policy
//! ("Authentication" 5 and 6): the account is linked to the platform (not one of its
//! products), an authorization sentence, the integration's name and logo, what is shared
//! and why, a privacy-policy link, "Agree and link", Cancel, and a way to switch account.
//!
//! Texts are Fluent messages in ten languages ([`i18n`]), chosen by the platform's
//! `user_locale`. A view holds a [`PageText`]; templates ask it for messages by id, and
//! askama escapes what it returns, the values of placeables included, exactly once.

pub mod i18n;

use askama::Template;

pub use i18n::Texts;

/// The texts of one rendered page: a language, and the platform and company every message
/// may name.
#[derive(Debug, Clone)]
pub struct PageText {
    texts: &'static Texts,
    platform: String,
    company: String,
}

impl PageText {
    /// The texts of `texts` naming `platform` and `company`.
    pub fn new(texts: &'static Texts, platform: &str, company: &str) -> Self {
        Self {
            texts,
            platform: platform.to_owned(),
            company: company.to_owned(),
        }
    }

    /// The language's BCP 47 tag, for `<html lang>` and forms that carry the language on.
    pub fn lang(&self) -> &'static str {
        self.texts.tag()
    }

    /// The language.
    pub fn texts(&self) -> &'static Texts {
        self.texts
    }

    /// Message `id`, with `$platform` and `$company`.
    pub fn t(&self, id: &str) -> String {
        self.with(id, "", "")
    }

    /// Message `id`, with `$platform`, `$company` and one more variable.
    pub fn with(&self, id: &str, name: &str, value: &str) -> String {
        let mut variables = vec![
            ("platform", self.platform.as_str()),
            ("company", self.company.as_str()),
        ];
        if !name.is_empty() {
            variables.push((name, value));
        }
        self.texts.with(id, &variables)
    }
}

/// The integration as the pages show it.
#[derive(Debug, Clone)]
pub struct Branding {
    /// Company name.
    pub company: String,
    /// Integration display name.
    pub name: String,
    /// Logo URL (https).
    pub logo_url: Option<String>,
    /// Privacy policy URL.
    pub privacy_policy_url: Option<String>,
    /// Sign-up URL.
    pub signup_url: Option<String>,
    /// Where a person who forgot their password can reset it.
    pub forgot_password_url: Option<String>,
}

/// A "Continue with {name}" button of the sign-in page: one identity provider.
#[derive(Debug, Clone)]
pub struct ContinueWith {
    /// The provider's display name.
    pub name: String,
    /// Where the button leads (linkd's own start of that provider's sign-in).
    pub href: String,
}

/// The sign-in page.
#[derive(Debug, Template)]
#[template(path = "signin.html")]
pub struct SignInPage {
    /// Texts.
    pub locale: PageText,
    /// The integration, when this sign-in links an account (shows its branding, the
    /// authorization sentence, its links and Cancel); `None` for the account page's sign-in.
    pub client: Option<Branding>,
    /// CSRF token bound to the pre-session.
    pub csrf: String,
    /// The authorization request's parameters as received (its query string), which the
    /// form carries forward. Not signed: every step validates it again from scratch.
    pub request: String,
    /// Email to pre-fill after a failed attempt.
    pub email: String,
    /// The generic failure message, if the last attempt failed.
    pub error: Option<String>,
    /// "Continue with {name}" buttons, one per identity provider offered here (empty: none).
    pub continue_with: Vec<ContinueWith>,
    /// Whether the email + password form is shown (false when the client signs in only
    /// through its provider).
    pub password_form: bool,
}

/// One line of the shared-data list.
#[derive(Debug, Clone)]
pub struct SharedItem {
    /// The scope the line stands for (`openid` for the account ID).
    pub scope: String,
    /// What is shared.
    pub what: String,
    /// Why.
    pub why: String,
}

/// The consent page.
#[derive(Debug, Template)]
#[template(path = "consent.html")]
pub struct ConsentPage {
    /// Texts.
    pub locale: PageText,
    /// The integration.
    pub client: Branding,
    /// The signed-in user's email.
    pub user_email: String,
    /// What is shared and why.
    pub shared: Vec<SharedItem>,
    /// CSRF token bound to the session.
    pub csrf: String,
    /// The authorization request's parameters as received (its query string). Not signed:
    /// every step validates it again from scratch.
    pub request: String,
}

impl ConsentPage {
    /// The shared-data list of a request for `scopes`: the account ID always (it goes with
    /// every link), then one line per other scope, a scope of the integration's own named
    /// as it is, never left out.
    pub fn shared_items<'a>(
        locale: &PageText,
        scopes: impl Iterator<Item = &'a str>,
    ) -> Vec<SharedItem> {
        let mut items = vec![SharedItem {
            scope: "openid".to_owned(),
            what: locale.t("share-id"),
            why: locale.t("share-id-why"),
        }];
        for scope in scopes {
            let (what, why) = match scope {
                "openid" => continue,
                "email" => (locale.t("share-email"), locale.t("share-email-why")),
                "profile" => (locale.t("share-profile"), locale.t("share-profile-why")),
                "devices" => (locale.t("share-devices"), locale.t("share-devices-why")),
                other => (
                    locale.with("share-other", "scope", other),
                    locale.t("share-other-why"),
                ),
            };
            items.push(SharedItem {
                scope: scope.to_owned(),
                what,
                why,
            });
        }
        items
    }
}

/// The error page shown when linkd must not redirect.
#[derive(Debug, Template)]
#[template(path = "error.html")]
pub struct ErrorPage {
    /// Texts.
    pub locale: PageText,
    /// What went wrong, in words for a person.
    pub message: String,
}

/// One linked integration on the account page.
#[derive(Debug, Clone)]
pub struct LinkView {
    /// Integration name.
    pub name: String,
    /// Date linked (UTC, `YYYY-MM-DD`).
    pub since: String,
    /// Grant id the Unlink button revokes.
    pub grant_id: String,
}

/// Where the account page is served; a sign-in without an authorization request lands there.
pub const ACCOUNT_PATH: &str = "/account";
/// Where Unlink is asked for (GET: the confirmation page) and done (POST).
pub const UNLINK_PATH: &str = "/account/unlink";

/// The account page.
#[derive(Debug, Template)]
#[template(path = "account.html")]
pub struct AccountPage {
    /// Texts.
    pub locale: PageText,
    /// The signed-in user's email.
    pub user_email: String,
    /// Linked integrations.
    pub links: Vec<LinkView>,
    /// CSRF token bound to the session.
    pub csrf: String,
}

/// The page that asks before Unlink.
#[derive(Debug, Template)]
#[template(path = "unlink.html")]
pub struct UnlinkPage {
    /// Texts.
    pub locale: PageText,
    /// The link Unlink ends.
    pub link: LinkView,
    /// CSRF token bound to the session.
    pub csrf: String,
}

/// Content-Security-Policy of the pages. Forms may post to linkd itself and, on every page
/// that posts a form inside an authorization request (sign-in, consent), navigate to the
/// validated redirect URI's origin: Chromium checks every redirect after a form POST
/// against `form-action`.
pub fn content_security_policy(redirect_origin: Option<&str>) -> String {
    let form_action = match redirect_origin {
        Some(origin) => format!("'self' {origin}"),
        None => "'self'".to_owned(),
    };
    format!(
        "default-src 'none'; style-src 'self'; img-src https: data:; form-action {form_action}; frame-ancestors 'none'; base-uri 'none'"
    )
}

/// The stylesheet every page links to; served by linkd so the CSP can stay `style-src 'self'`.
pub const STYLESHEET: &str = include_str!("../assets/linkd.css");
/// Where the stylesheet is served.
pub const STYLESHEET_PATH: &str = "/assets/linkd.css";

#[cfg(test)]
mod tests {
    use super::*;

    fn branding() -> Branding {
        Branding {
            company: "Acme <Lights>".into(),
            name: "Acme Home".into(),
            logo_url: Some("https://acme.example/logo.png".into()),
            privacy_policy_url: Some("https://acme.example/privacy".into()),
            signup_url: Some("https://acme.example/signup".into()),
            forgot_password_url: Some("https://acme.example/forgot?a=1&b=2".into()),
        }
    }

    fn english(company: &str) -> PageText {
        PageText::new(i18n::english(), "Google", company)
    }

    fn sign_in(client: Option<Branding>) -> SignInPage {
        SignInPage {
            locale: english("Acme <Lights>"),
            client,
            csrf: "c".into(),
            request: "r".into(),
            email: String::new(),
            error: None,
            continue_with: Vec::new(),
            password_form: true,
        }
    }

    #[test]
    fn pages_escape_what_they_show_exactly_once() {
        let page = SignInPage {
            email: "\"><script>alert(1)</script>".into(),
            ..sign_in(Some(branding()))
        };
        let html = page.render().unwrap();
        assert!(!html.contains("<script>alert(1)"), "{html}");
        assert!(!html.contains("<Lights>"), "{html}");
        // The company reaches the page through a Fluent placeable and directly: escaped
        // once in both, never twice.
        assert!(html.contains("Sign in to Acme &#60;Lights&#62;"), "{html}");
        assert!(!html.contains("&amp;#60;"), "{html}");
        assert!(
            html.contains("https://acme.example/forgot?a=1&#38;b=2"),
            "{html}"
        );
        assert!(!html.contains('\u{2068}'), "isolation marks in {html}");
    }

    #[test]
    fn the_linking_sign_in_page_has_cancel_and_the_client_links() {
        let html = sign_in(Some(branding())).render().unwrap();
        for needle in [
            "value=\"cancel\">Cancel</button>",
            ">Forgot password?</a>",
            "href=\"https://acme.example/signup\">Create one</a>",
            "href=\"https://acme.example/privacy\">Privacy policy</a>",
            "you authorize Google to access and control your Acme &#60;Lights&#62; devices",
            "<html lang=\"en\">",
        ] {
            assert!(html.contains(needle), "{needle} missing from {html}");
        }
        assert!(!html.contains("continue"), "no provider, no button: {html}");
        let bare = Branding {
            privacy_policy_url: None,
            signup_url: None,
            forgot_password_url: None,
            ..branding()
        };
        let html = sign_in(Some(bare)).render().unwrap();
        for absent in ["Forgot password?", "Create one", "Privacy policy"] {
            assert!(!html.contains(absent), "{absent} shown without its URL");
        }
    }

    #[test]
    fn the_account_sign_in_page_has_no_cancel_and_no_repeated_title() {
        let html = sign_in(None).render().unwrap();
        assert!(!html.contains("cancel"), "{html}");
        assert!(!html.contains("authorize Google"), "{html}");
        assert_eq!(html.matches("Your linked services").count(), 0, "{html}");
        assert!(html.contains("<h1>Sign in</h1>"), "{html}");
        assert!(
            html.contains("see and manage the services linked"),
            "{html}"
        );
    }

    #[test]
    fn continue_with_buttons_come_before_the_form_with_a_divider() {
        let page = SignInPage {
            locale: PageText::new(i18n::by_tag("de"), "Google", "Acme"),
            continue_with: vec![ContinueWith {
                name: "Acme <ID>".into(),
                href: "/signin/acme-id/start?request=a%3Db&x=1".into(),
            }],
            ..sign_in(Some(branding()))
        };
        let html = page.render().unwrap();
        let button = html
            .find("<a class=\"button primary continue\" href=\"/signin/acme-id/start?request=a%3Db&#38;x=1\">Weiter mit Acme &#60;ID&#62;</a>")
            .unwrap_or_else(|| panic!("{html}"));
        let divider = html.find(">oder</span>").unwrap();
        let form = html
            .find("<form method=\"post\" action=\"/authorize/signin\" class=\"form\"")
            .unwrap();
        assert!(button < divider && divider < form, "{html}");

        let only_provider = SignInPage {
            password_form: false,
            ..page
        };
        let html = only_provider.render().unwrap();
        assert!(html.contains("Weiter mit Acme"), "{html}");
        assert!(!html.contains("type=\"password\""), "{html}");
        assert!(!html.contains(">oder<"), "{html}");
        assert!(
            html.contains("value=\"cancel\">Abbrechen</button>"),
            "{html}"
        );
    }

    #[test]
    fn consent_page_carries_the_policy_elements() {
        let locale = PageText::new(i18n::english(), "Google", "Acme");
        let page = ConsentPage {
            shared: ConsentPage::shared_items(
                &locale,
                ["openid", "email", "acme.thermostat"].into_iter(),
            ),
            locale,
            client: branding(),
            user_email: "a@example.com".into(),
            csrf: "c".into(),
            request: "r".into(),
        };
        let html = page.render().unwrap();
        for needle in [
            "Link your Acme account to Google",
            "you authorize Google to access and control your Acme devices",
            "Agree and link",
            "Cancel",
            "Privacy policy",
            "https://acme.example/logo.png",
            "Switch account",
            "Your account ID",
            "Your email address",
            "Access named “acme.thermostat”",
        ] {
            assert!(html.contains(needle), "{needle} missing");
        }
    }

    #[test]
    fn an_account_without_links_says_when_one_appears() {
        let page = AccountPage {
            locale: english(""),
            user_email: "a@example.com".into(),
            links: Vec::new(),
            csrf: "c".into(),
        };
        let html = page.render().unwrap();
        assert!(html.contains("Nothing is linked"), "{html}");
        assert!(html.contains("once Google has finished linking"), "{html}");
        assert!(html.contains("exchanges the one-time code"), "{html}");

        let linked = AccountPage {
            links: vec![LinkView {
                name: "Acme Home".into(),
                since: "2026-11-23".into(),
                grant_id: "g 1".into(),
            }],
            ..page
        };
        let html = linked.render().unwrap();
        assert!(!html.contains("finished linking"), "{html}");
        assert!(html.contains("<strong>Acme Home</strong>"), "{html}");
        assert!(html.contains("Linked to Google since 2026-11-23"), "{html}");
        // Unlink asks first: the button opens the confirmation page (GET), it does not post.
        assert!(
            html.contains("<form method=\"get\" action=\"/account/unlink\">"),
            "{html}"
        );
        assert!(
            !html.contains("method=\"post\" action=\"/account/unlink\""),
            "{html}"
        );
        assert!(html.contains("name=\"grant\" value=\"g 1\""), "{html}");
        // The title once in the card (and once in <title>).
        assert_eq!(html.matches("Your linked services").count(), 2, "{html}");
    }

    #[test]
    fn the_unlink_page_says_what_unlinking_does() {
        let page = UnlinkPage {
            locale: PageText::new(i18n::by_tag("fr"), "Google", ""),
            link: LinkView {
                name: "Acme Home".into(),
                since: "2026-11-23".into(),
                grant_id: "g1".into(),
            },
            csrf: "c".into(),
        };
        let html = page.render().unwrap();
        for needle in [
            "<html lang=\"fr\">",
            "<h1>Dissocier Acme Home\u{202f}?</h1>",
            "Google ne pourra plus voir votre compte",
            "name=\"grant\" value=\"g1\"",
            "name=\"csrf\" value=\"c\"",
            ">Dissocier</button>",
            "href=\"/account?user_locale=fr\">Garder l’association</a>",
        ] {
            assert!(html.contains(needle), "{needle} missing from {html}");
        }
    }
}
