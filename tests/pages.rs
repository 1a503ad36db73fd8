//! The pages as a person sees them, in every language: a real headless Chromium, 390 px wide
//! like a phone, renders every page of linkd (sign-in with and without an error, consent with
//! every kind of shared item, the account page without and with a link, the Unlink
//! confirmation, the account page's sign-in and the error page) in each of the ten
//! translations and checks the language, that every text is translated and complete, and
//! that nothing reaches past the screen's right edge. Then Cancel on the sign-in page, the
//! client's links on it, and Unlink's confirmation step, on both stores.

use std::sync::Arc;

use browser::{Browser, Platform, query_of};
use linkd::app::App;
use linkd::pages::{PageText, i18n};
use linkd::store::{ClientScopes, ClientSettings, LinkRecord};

use crate::support::linkd::TestServer;
use crate::support::{PASSWORD, browser, encode, flow, provision, redis_server};

/// Wide enough for every integration name, narrow as a common phone.
const PHONE_WIDTH: u32 = 390;
const STATE: &str = "xyz-state_1";

struct Setup {
    server: TestServer,
    platform: Platform,
    _redis: Option<redis_server::RedisServer>,
}

impl Setup {
    fn app(&self) -> &Arc<App> {
        self.server.server.app()
    }

    fn base(&self) -> String {
        format!("https://localhost:{}", self.server.address.port())
    }

    fn authorize_url(&self, extra: &str) -> String {
        format!(
            "{}/authorize?client_id=acme&redirect_uri={}&state={STATE}&response_type=code{extra}",
            self.base(),
            encode(&format!("{}/r/acme-project", self.platform.base())),
        )
    }
}

async fn setup(redis: bool) -> Setup {
    let platform = Platform::start().await;
    let bases = vec![platform.base()];
    let (server, redis) = TestServer::start_on_store(redis, move |settings| {
        settings.oauth.redirect_bases = bases;
    })
    .await;
    let app = server.server.app();
    provision::acme(
        app,
        Some("Acme Smart Home Comfort Thermostat Collection"),
        None,
        ClientSettings {
            company_name: Some("Acme Heating & Ventilation".to_owned()),
            privacy_policy_url: Some("https://acme.example/privacy".to_owned()),
            signup_url: Some("https://acme.example/signup".to_owned()),
            forgot_password_url: Some("https://acme.example/forgot".to_owned()),
            scopes: ClientScopes(
                [
                    "openid",
                    "email",
                    "profile",
                    "devices",
                    "acme.thermostat.schedule",
                ]
                .map(str::to_owned)
                .to_vec(),
            ),
            ..ClientSettings::default()
        },
    )
    .await;
    provision::user(
        app,
        "ada.lovelace.with.a.long.address@example.com",
        PASSWORD,
        linkd::users::Profile::default(),
    )
    .await;
    Setup {
        server,
        platform,
        _redis: redis,
    }
}

const EMAIL: &str = "ada.lovelace.with.a.long.address@example.com";
const SCOPES: &str = "&scope=openid%20email%20profile%20devices%20acme.thermostat.schedule";

/// What the page in the browser shows, measured in the browser.
#[derive(Debug, serde::Deserialize)]
struct Rendered {
    lang: String,
    text: String,
    title: String,
    viewport: f64,
    scroll_width: f64,
    overflowing: Vec<String>,
}

const MEASURE: &str = r#"
const viewport = document.documentElement.clientWidth;
const overflowing = [];
for (const element of document.querySelectorAll('body *')) {
  const box = element.getBoundingClientRect();
  if (box.width > 0 && (box.right > viewport + 0.5 || box.left < -0.5)) {
    overflowing.push(element.tagName + '.' + element.className + ' right=' + box.right);
  }
}
return {
  lang: document.documentElement.lang,
  text: document.body.innerText,
  title: document.title,
  viewport,
  scroll_width: document.documentElement.scrollWidth,
  overflowing,
};
"#;

/// The space between the sign-in button and what is above it, in CSS pixels.
async fn gap_above_sign_in_button(browser: &Browser) -> f64 {
    let script = "const button = document.querySelector('.form .primary');
        return button.getBoundingClientRect().top
            - button.previousElementSibling.getBoundingClientRect().bottom;";
    browser
        .client
        .execute(script, vec![])
        .await
        .unwrap()
        .as_f64()
        .unwrap()
}

async fn rendered(browser: &Browser) -> Rendered {
    let value = browser.client.execute(MEASURE, vec![]).await.unwrap();
    serde_json::from_value(value).unwrap()
}

/// Checks the page in `browser` is `page` in language `tag`, whole and within the screen,
/// and that it shows each of `expected`.
async fn check(browser: &Browser, tag: &str, page: &str, expected: &[String]) -> Rendered {
    let shown = rendered(browser).await;
    let context = format!("{page} in {tag}: {}", shown.text);
    assert_eq!(shown.lang, tag, "{context}");
    assert_eq!(
        shown.viewport,
        f64::from(PHONE_WIDTH),
        "the page is not phone-sized"
    );
    assert!(
        shown.scroll_width <= shown.viewport,
        "{context}: scrolls sideways ({} > {})",
        shown.scroll_width,
        shown.viewport
    );
    assert!(
        shown.overflowing.is_empty(),
        "{context}: past the right edge: {:?}",
        shown.overflowing
    );
    let whole = format!("{}\n{}", shown.title, shown.text);
    for raw in ["{ $", "{$", "\u{2068}", "\u{2069}"] {
        assert!(!whole.contains(raw), "{context}: shows {raw:?}");
    }
    for id in i18n::english().message_ids() {
        // An id shows where a message is missing or failed (see `Texts::with`); the ids
        // all contain a hyphen, so "or" and the like cannot match ordinary words.
        if id.contains('-') {
            assert!(!whole.contains(&id), "{context}: shows message id {id}");
        }
    }
    for text in expected {
        assert!(whole.contains(text.as_str()), "{context}: {text:?} missing");
    }
    shown
}

/// Every page in every language, one browser and one server for all of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_in_every_language_fits_a_phone() {
    let setup = setup(false).await;
    let browser = Browser::start().await;
    browser
        .client
        .set_window_size(PHONE_WIDTH, 844)
        .await
        .unwrap();
    let ada = setup
        .app()
        .store
        .get_user_by_email(EMAIL)
        .await
        .unwrap()
        .unwrap();
    for (index, (tag, _)) in i18n::LANGUAGES.iter().enumerate() {
        let texts = i18n::by_tag(tag);
        let page = PageText::new(texts, "Google", "Acme Heating & Ventilation");
        let account_text = PageText::new(texts, "Google", "");

        browser
            .goto(&setup.authorize_url(&format!("{SCOPES}&user_locale={tag}")))
            .await;
        check(
            &browser,
            tag,
            "sign-in",
            &[
                page.t("signin-heading"),
                page.t("signin-lead"),
                page.t("authorization-statement"),
                page.t("forgot-password"),
                page.t("signup-link"),
                page.t("privacy-policy"),
                page.t("cancel-button"),
            ],
        )
        .await;

        // A different unknown account each time, so that no account's growing delay
        // after failures slows the loop down.
        let gap = gap_above_sign_in_button(&browser).await;
        assert!(
            (16.0..=24.0).contains(&gap),
            "{tag}: {gap} px above the button"
        );
        browser
            .sign_in(&format!("nobody-{tag}@example.com"), "not the password")
            .await;
        check(&browser, tag, "failed sign-in", &[page.t("signin-failed")]).await;

        browser.sign_in(EMAIL, PASSWORD).await;
        check(
            &browser,
            tag,
            "consent",
            &[
                page.t("consent-heading"),
                page.t("share-id"),
                page.t("share-email"),
                page.t("share-profile"),
                page.t("share-devices"),
                page.with("share-other", "scope", "acme.thermostat.schedule"),
                page.t("share-other-why"),
                page.t("agree-button"),
                page.t("switch-account"),
            ],
        )
        .await;

        browser
            .goto(&format!("{}/account?user_locale={tag}", setup.base()))
            .await;
        check(
            &browser,
            tag,
            "account without links",
            &[account_text.t("no-links"), account_text.t("links-appear")],
        )
        .await;

        let grant_id = format!("00000000-0000-4000-8000-00000000000{index}");
        setup
            .app()
            .store
            .put_link(&LinkRecord {
                grant_id: grant_id.clone(),
                user_id: ada.id.clone(),
                client_id: "acme".to_owned(),
                scope: "email".to_owned(),
                created_at: 1_795_000_000,
            })
            .await
            .unwrap();
        browser
            .goto(&format!("{}/account?user_locale={tag}", setup.base()))
            .await;
        let account = check(
            &browser,
            tag,
            "account with a link",
            &[
                "Acme Smart Home Comfort Thermostat Collection".to_owned(),
                account_text.with("link-detail", "date", "2026-11-18"),
                account_text.t("unlink-button"),
            ],
        )
        .await;
        assert_eq!(
            account
                .text
                .matches(&account_text.t("account-title"))
                .count(),
            1,
            "the title once on the page: {}",
            account.text
        );

        browser.click(".links button").await;
        let name = "Acme Smart Home Comfort Thermostat Collection";
        check(
            &browser,
            tag,
            "unlink confirmation",
            &[
                account_text.with("unlink-title", "name", name),
                account_text.with("unlink-explain", "name", name),
                account_text.t("unlink-keep"),
            ],
        )
        .await;
        browser.click("button[value=unlink]").await;
        check(
            &browser,
            tag,
            "account after Unlink",
            &[account_text.t("no-links")],
        )
        .await;

        browser.click("form.switch button").await;
        check(
            &browser,
            tag,
            "the account page's sign-in",
            &[
                account_text.t("signin-title"),
                account_text.t("account-signin-lead"),
            ],
        )
        .await;
        // No authorization sentence here: the button keeps the same distance from the
        // password field.
        let gap = gap_above_sign_in_button(&browser).await;
        assert!(
            (16.0..=24.0).contains(&gap),
            "{tag}: {gap} px above the button"
        );

        browser
            .goto(&format!(
                "{}/authorize?client_id=nobody&response_type=code&user_locale={tag}",
                setup.base()
            ))
            .await;
        check(
            &browser,
            tag,
            "error",
            &[
                account_text.t("error-title"),
                account_text.t("request-unknown-client"),
                account_text.t("error-help"),
            ],
        )
        .await;
    }
    assert!(setup.platform.received.lock().unwrap().is_empty());
    browser.close().await;
}

/// Cancel on the sign-in page sends the platform `access_denied` with its state, without
/// signing in; the client's links are on the page.
async fn sign_in_cancel_and_links(redis: bool) {
    let setup = setup(redis).await;
    let browser = Browser::start().await;
    browser
        .goto(&setup.authorize_url("&user_locale=de-AT"))
        .await;
    for (css, href) in [
        ("p.forgot a", "https://acme.example/forgot"),
        ("p.alt a", "https://acme.example/signup"),
        ("p.policy a", "https://acme.example/privacy"),
    ] {
        let link = browser
            .client
            .find(fantoccini::Locator::Css(css))
            .await
            .unwrap();
        assert_eq!(link.attr("href").await.unwrap().as_deref(), Some(href));
    }
    assert_eq!(rendered(&browser).await.lang, "de");
    browser.click("button[value=cancel]").await;
    let target = setup.platform.next_redirect().await;
    let query = query_of(&target);
    assert_eq!(query["error"], "access_denied", "{target}");
    assert_eq!(query["state"], STATE, "{target}");
    assert!(!query.contains_key("code"), "{target}");
    browser.close().await;

    // A Cancel without the sign-in page's CSRF cookie is refused and goes nowhere.
    let url = setup.authorize_url("");
    let raw = url.split_once('?').unwrap().1;
    let form = [("csrf", "forged"), ("request", raw), ("action", "cancel")];
    let reply = flow::post_form(&setup.server.target(), "/authorize/signin", &form, "").await;
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert!(setup.platform.received.lock().unwrap().is_empty());
}

/// Unlink asks first: the account page's Unlink only shows what unlinking does; the link
/// ends with the confirmation page's Unlink, and Keep linked leaves it.
async fn unlink_asks_first(redis: bool) {
    let setup = setup(redis).await;
    let browser = Browser::start().await;
    let ada = setup
        .app()
        .store
        .get_user_by_email(EMAIL)
        .await
        .unwrap()
        .unwrap();
    let link = LinkRecord {
        grant_id: "00000000-0000-4000-8000-0000000000aa".to_owned(),
        user_id: ada.id.clone(),
        client_id: "acme".to_owned(),
        scope: "email".to_owned(),
        created_at: 1_795_000_000,
    };
    setup.app().store.put_link(&link).await.unwrap();
    browser
        .goto(&format!("{}/account?user_locale=ja", setup.base()))
        .await;
    browser.sign_in(EMAIL, PASSWORD).await;
    assert_eq!(rendered(&browser).await.lang, "ja");
    let links = || async { setup.app().store.list_links(&ada.id).await.unwrap().len() };

    browser.click(".links button").await;
    assert!(browser.has("button[value=unlink]").await);
    assert_eq!(links().await, 1, "asking must not unlink");
    browser.click("a.button.secondary").await;
    assert!(
        browser
            .current_url()
            .await
            .ends_with("/account?user_locale=ja")
    );
    assert_eq!(links().await, 1, "Keep linked must not unlink");

    browser.click(".links button").await;
    browser.click("button[value=unlink]").await;
    assert_eq!(links().await, 0);
    assert!(
        browser
            .current_url()
            .await
            .ends_with("/account?user_locale=ja")
    );
    assert!(
        setup
            .app()
            .store
            .is_grant_revoked(&link.grant_id)
            .await
            .unwrap()
    );

    // Asking about a grant that is not one of the user's goes back to the account page.
    browser
        .goto(&format!(
            "{}/account/unlink?grant=someone-elses",
            setup.base()
        ))
        .await;
    assert!(!browser.has("button[value=unlink]").await);
    browser.close().await;
}

on_both_stores!(sign_in_cancel_and_links, unlink_asks_first);

/// Whatever arrives as `user_locale` or `Accept-Language`, the page renders, in English when
/// nothing sensible was asked for, and the value itself is never echoed into the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_languages_get_a_page_in_english() {
    let setup = setup(false).await;
    let target = setup.server.target();
    let long = "de-".repeat(300);
    let authorize = |locale: &str| {
        let url = setup.authorize_url(&format!("&user_locale={}", encode(locale)));
        url[setup.base().len()..].to_owned()
    };
    for (locale, lang) in [
        ("<script>alert(1)</script>", "en"),
        ("../../../etc/passwd", "en"),
        ("de\u{0}\r\nSet-Cookie: a=b", "en"),
        (long.as_str(), "en"),
        ("zh-CN", "en"),
        ("zh-HK", "zh-TW"),
        ("pt-PT", "pt-BR"),
        ("de-AT", "de"),
    ] {
        let page = flow::get(&target, &authorize(locale), &[]).await;
        assert_eq!(page.status, 200, "{locale:?}: {}", page.text());
        let html = page.text();
        assert!(
            html.contains(&format!("<html lang=\"{lang}\">")),
            "{locale:?}: {html}"
        );
        assert!(!html.contains("<script>alert"), "{locale:?}");
        assert!(page.header("set-cookie").is_none_or(|c| !c.contains("a=b")));
    }
    // Without a user_locale the browser's languages decide, hostile or not.
    for (accept, lang) in [
        ("fr-CH, fr;q=0.9, en;q=0.8", "fr"),
        ("<script>, ../", "en"),
        (long.as_str(), "en"),
    ] {
        let page = flow::get(&target, "/account", &[("accept-language", accept)]).await;
        assert_eq!(page.status, 200, "{accept:?}");
        assert!(
            page.text().contains(&format!("<html lang=\"{lang}\">")),
            "{accept:?}: {}",
            page.text()
        );
    }
    // The account page's own parameter wins over the browser.
    let page = flow::get(
        &target,
        "/account?user_locale=ko",
        &[("accept-language", "fr")],
    )
    .await;
    assert!(
        page.text().contains("<html lang=\"ko\">"),
        "{}",
        page.text()
    );
}
