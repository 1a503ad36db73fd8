//! The HTML pages of the linking flow, one typed view per page, rendered from `templates/`
//! with askama's auto-escaping. Wording follows the interface's linking-page policy
//! ("Authentication" 5 and 6): the account is linked to the platform (not one of its
//! products), an authorization sentence, the integration's name and logo, what is shared
//! and why, a privacy-policy link, "Agree and link", Cancel, and a way to switch account.
//!
//! Texts come from a [`Locale`] chosen by the platform's `user_locale`; English is the
//! fallback and the only translation so far. Adding one is adding a `Locale` constant and a
//! line in [`TRANSLATIONS`].

use askama::Template;

/// Every fixed text of the pages in one language. `{platform}` and `{company}` are
/// replaced when a page is rendered.
#[derive(Debug)]
pub struct Locale {
    /// BCP 47 tag for `<html lang>`.
    pub lang: &'static str,
    /// Sign-in page title.
    pub signin_title: &'static str,
    /// Sign-in page heading.
    pub signin_heading: &'static str,
    /// Sign-in page lead sentence.
    pub signin_lead: &'static str,
    /// Email field label.
    pub email_label: &'static str,
    /// Password field label.
    pub password_label: &'static str,
    /// Sign-in button.
    pub signin_button: &'static str,
    /// Text before the sign-up link.
    pub no_account: &'static str,
    /// Sign-up link.
    pub signup_link: &'static str,
    /// The one message for every failed sign-in (never says which part was wrong).
    pub signin_failed: &'static str,
    /// Shown when sign-in is throttled.
    pub signin_throttled: &'static str,
    /// Consent page title.
    pub consent_title: &'static str,
    /// Consent page heading.
    pub consent_heading: &'static str,
    /// Consent page lead sentence.
    pub consent_lead: &'static str,
    /// "Signed in as".
    pub signed_in_as: &'static str,
    /// Heading of the shared-data list.
    pub shared_heading: &'static str,
    /// The authorization sentence required by the linking policy.
    pub authorization_statement: &'static str,
    /// Privacy-policy link text.
    pub privacy_policy: &'static str,
    /// Agree button.
    pub agree_button: &'static str,
    /// Cancel button.
    pub cancel_button: &'static str,
    /// Switch-account button.
    pub switch_account: &'static str,
    /// Shared item: account identifier.
    pub share_id: &'static str,
    /// Why the identifier is shared.
    pub share_id_why: &'static str,
    /// Shared item: email address.
    pub share_email: &'static str,
    /// Why the email is shared.
    pub share_email_why: &'static str,
    /// Shared item: name and picture.
    pub share_profile: &'static str,
    /// Why the profile is shared.
    pub share_profile_why: &'static str,
    /// Shared item: device control.
    pub share_devices: &'static str,
    /// Why device control is shared.
    pub share_devices_why: &'static str,
    /// Shared item: a scope the integration defines; `{scope}` is its name.
    pub share_other: &'static str,
    /// Why such a scope is shared.
    pub share_other_why: &'static str,
    /// Error page title.
    pub error_title: &'static str,
    /// Error page help text.
    pub error_help: &'static str,
    /// Account page title.
    pub account_title: &'static str,
    /// Heading of the linked-integrations list.
    pub linked_heading: &'static str,
    /// Shown when nothing is linked.
    pub no_links: &'static str,
    /// Shown under [`Locale::no_links`]: when a link appears after "Agree and link".
    pub links_appear: &'static str,
    /// "Linked since".
    pub linked_since: &'static str,
    /// Unlink button.
    pub unlink_button: &'static str,
    /// Sign-out button.
    pub signout_button: &'static str,
    /// Page footer.
    pub footer: &'static str,
}

/// English.
pub const ENGLISH: Locale = Locale {
    lang: "en",
    signin_title: "Sign in",
    signin_heading: "Sign in to {company}",
    signin_lead: "Sign in to link your {company} account to {platform}.",
    email_label: "Email",
    password_label: "Password",
    signin_button: "Sign in",
    no_account: "No account yet?",
    signup_link: "Create one",
    signin_failed: "That email and password do not match an account.",
    signin_throttled: "Too many attempts. Wait a few minutes and try again.",
    consent_title: "Link your account",
    consent_heading: "Link your {company} account to {platform}",
    consent_lead: "{platform} will be able to see your account details below and control your {company} devices.",
    signed_in_as: "Signed in as",
    shared_heading: "What {platform} will get",
    authorization_statement: "By linking, you authorize {platform} to access and control your {company} devices.",
    privacy_policy: "Privacy policy",
    agree_button: "Agree and link",
    cancel_button: "Cancel",
    switch_account: "Not you? Switch account",
    share_id: "Your account ID",
    share_id_why: "so {platform} can tell your account apart from others",
    share_email: "Your email address",
    share_email_why: "so you can recognise the linked account in {platform}",
    share_profile: "Your name and profile picture",
    share_profile_why: "to show the linked account in {platform}",
    share_devices: "Control of your devices",
    share_devices_why: "so {platform} can control them when you ask",
    share_other: "Access named “{scope}”",
    share_other_why: "a permission {company} defines for {platform}; {company} can tell you what it covers",
    error_title: "This link request cannot be completed",
    error_help: "Return to the app you came from and start linking again.",
    account_title: "Your linked services",
    linked_heading: "Linked",
    no_links: "Nothing is linked to your account.",
    links_appear: "A service appears here once {platform} has finished linking: after you choose “Agree and link”, {platform} exchanges the one-time code it received for access to your account, usually within seconds. If it does not appear, start linking again from {platform}.",
    linked_since: "Linked since",
    unlink_button: "Unlink",
    signout_button: "Sign out",
    footer: "Account linking",
};

/// Every translation, by primary language subtag. Adding a language is adding a line.
pub const TRANSLATIONS: &[(&str, &Locale)] = &[("en", &ENGLISH)];

/// The locale for a platform `user_locale` such as `en-US`; English when no translation
/// exists.
pub fn locale_for(user_locale: Option<&str>) -> &'static Locale {
    let language = user_locale
        .and_then(|tag| tag.split(['-', '_']).next())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    TRANSLATIONS
        .iter()
        .find(|(subtag, _)| *subtag == language)
        .map_or(&ENGLISH, |(_, locale)| locale)
}

/// Replaces `{platform}` and `{company}` in a locale text.
pub fn fill(text: &str, platform: &str, company: &str) -> String {
    text.replace("{platform}", platform)
        .replace("{company}", company)
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
}

/// Fields every page view carries for the base template.
#[derive(Debug)]
pub struct PageLocale {
    /// `<html lang>`.
    pub lang: &'static str,
    /// Footer text.
    pub footer: &'static str,
    /// Sign-in texts, filled.
    pub signin_title: &'static str,
    /// Filled heading.
    pub signin_heading: String,
    /// Filled lead.
    pub signin_lead: String,
    /// Email label.
    pub email_label: &'static str,
    /// Password label.
    pub password_label: &'static str,
    /// Sign-in button.
    pub signin_button: &'static str,
    /// Before the sign-up link.
    pub no_account: &'static str,
    /// Sign-up link.
    pub signup_link: &'static str,
    /// Authorization sentence, filled.
    pub authorization_statement: String,
    /// Consent title.
    pub consent_title: &'static str,
    /// Signed in as.
    pub signed_in_as: &'static str,
    /// Shared-data heading, filled.
    pub shared_heading: String,
    /// Privacy policy link text.
    pub privacy_policy: &'static str,
    /// Agree button.
    pub agree_button: &'static str,
    /// Cancel button.
    pub cancel_button: &'static str,
    /// Switch account button.
    pub switch_account: &'static str,
    /// Error title.
    pub error_title: &'static str,
    /// Error help.
    pub error_help: &'static str,
    /// Account page title.
    pub account_title: &'static str,
    /// Linked heading.
    pub linked_heading: &'static str,
    /// Nothing linked.
    pub no_links: &'static str,
    /// When a link appears, filled.
    pub links_appear: String,
    /// Linked since.
    pub linked_since: &'static str,
    /// Unlink button.
    pub unlink_button: &'static str,
    /// Sign out button.
    pub signout_button: &'static str,
}

impl PageLocale {
    /// The page texts of `locale` with `platform` and `company` filled in.
    pub fn new(locale: &'static Locale, platform: &str, company: &str) -> Self {
        let filled = |text: &str| fill(text, platform, company);
        Self {
            lang: locale.lang,
            footer: locale.footer,
            signin_title: locale.signin_title,
            signin_heading: filled(locale.signin_heading),
            signin_lead: filled(locale.signin_lead),
            email_label: locale.email_label,
            password_label: locale.password_label,
            signin_button: locale.signin_button,
            no_account: locale.no_account,
            signup_link: locale.signup_link,
            authorization_statement: filled(locale.authorization_statement),
            consent_title: locale.consent_title,
            signed_in_as: locale.signed_in_as,
            shared_heading: filled(locale.shared_heading),
            privacy_policy: locale.privacy_policy,
            agree_button: locale.agree_button,
            cancel_button: locale.cancel_button,
            switch_account: locale.switch_account,
            error_title: locale.error_title,
            error_help: locale.error_help,
            account_title: locale.account_title,
            linked_heading: locale.linked_heading,
            no_links: locale.no_links,
            links_appear: filled(locale.links_appear),
            linked_since: locale.linked_since,
            unlink_button: locale.unlink_button,
            signout_button: locale.signout_button,
        }
    }
}

/// The sign-in page.
#[derive(Debug, Template)]
#[template(path = "signin.html")]
pub struct SignInPage {
    /// Texts.
    pub locale: PageLocale,
    /// Heading.
    pub heading: String,
    /// Lead sentence.
    pub lead: String,
    /// Whether this sign-in links an account (shows the authorization sentence).
    pub linking: bool,
    /// The integration.
    pub client: Branding,
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

/// A "Continue with {name}" button of the sign-in page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContinueWith {
    /// The identity provider's display name.
    pub name: String,
    /// Where the button leads: `/signin/{provider id}/start?…`.
    pub href: String,
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
    pub locale: PageLocale,
    /// The integration.
    pub client: Branding,
    /// Heading naming company and platform.
    pub consent_heading: String,
    /// Lead sentence.
    pub consent_lead: String,
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

/// The error page shown when linkd must not redirect.
#[derive(Debug, Template)]
#[template(path = "error.html")]
pub struct ErrorPage {
    /// Texts.
    pub locale: PageLocale,
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

/// The account page.
#[derive(Debug, Template)]
#[template(path = "account.html")]
pub struct AccountPage {
    /// Texts.
    pub locale: PageLocale,
    /// The signed-in user's email.
    pub user_email: String,
    /// Linked integrations.
    pub links: Vec<LinkView>,
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
            signup_url: None,
        }
    }

    #[test]
    fn pages_escape_what_they_show() {
        let page = SignInPage {
            heading: "h".into(),
            lead: "l".into(),
            linking: true,
            locale: PageLocale::new(&ENGLISH, "Google", "Acme <Lights>"),
            client: branding(),
            csrf: "c".into(),
            request: "r".into(),
            email: "\"><script>alert(1)</script>".into(),
            error: None,
            continue_with: vec![ContinueWith {
                name: "<b>Acme</b>".into(),
                href: "/signin/acme/start?account=1".into(),
            }],
            password_form: true,
        };
        let html = page.render().unwrap();
        assert!(!html.contains("<script>alert(1)"), "{html}");
        assert!(!html.contains("<b>Acme"), "{html}");
        assert!(html.contains("Continue with"), "{html}");
        assert!(html.contains("Acme &#60;Lights&#62;") || html.contains("Acme &lt;Lights&gt;"));
    }

    #[test]
    fn consent_page_carries_the_policy_elements() {
        let locale = PageLocale::new(&ENGLISH, "Google", "Acme");
        let page = ConsentPage {
            consent_heading: fill(ENGLISH.consent_heading, "Google", "Acme"),
            consent_lead: fill(ENGLISH.consent_lead, "Google", "Acme"),
            locale,
            client: branding(),
            user_email: "a@example.com".into(),
            shared: vec![SharedItem {
                scope: "email".into(),
                what: "Your email address".into(),
                why: "why".into(),
            }],
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
        ] {
            assert!(html.contains(needle), "{needle} missing");
        }
    }

    #[test]
    fn an_account_without_links_says_when_one_appears() {
        let page = AccountPage {
            locale: PageLocale::new(&ENGLISH, "Google", ""),
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
                grant_id: "g".into(),
            }],
            ..page
        };
        let html = linked.render().unwrap();
        assert!(!html.contains("finished linking"), "{html}");
    }

    #[test]
    fn unknown_locales_fall_back_to_english() {
        assert_eq!(locale_for(Some("xx-YY")).lang, "en");
        assert_eq!(locale_for(Some("en-GB")).lang, "en");
        assert_eq!(locale_for(None).lang, "en");
    }
}
