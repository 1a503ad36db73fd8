# linkd's pages in English, the reference translation and the fallback.
# Variables: $platform (the platform linking, e.g. Google), $company (the integrator),
# $name (an integration or identity provider), $scope, $email, $date (YYYY-MM-DD).
# Keep "Agree and link" and the authorization statement's meaning in every language: the
# platform's linking policy requires them.

footer = Account linking

## Sign-in page
signin-title = Sign in
signin-heading = Sign in to { $company }
signin-lead = Sign in to link your { $company } account to { $platform }.
account-signin-lead = Sign in to see and manage the services linked to your account.
email-label = Email
password-label = Password
signin-button = Sign in
forgot-password = Forgot password?
no-account = No account yet?
signup-link = Create one
signin-failed = That email and password do not match an account.
signin-throttled = Too many attempts. Wait a few minutes and try again.
continue-with = Continue with { $name }
or-divider = or

## Consent page
consent-title = Link your account
consent-heading = Link your { $company } account to { $platform }
consent-lead = { $platform } will be able to see your account details below and control your { $company } devices.
signed-in-as = Signed in as
shared-heading = What { $platform } will get
authorization-statement = By linking, you authorize { $platform } to access and control your { $company } devices.
privacy-policy = Privacy policy
agree-button = Agree and link
cancel-button = Cancel
switch-account = Not you? Switch account
share-id = Your account ID
share-id-why = so { $platform } can tell your account apart from others
share-email = Your email address
share-email-why = so you can recognise the linked account in { $platform }
share-profile = Your name and profile picture
share-profile-why = to show the linked account in { $platform }
share-devices = Control of your devices
share-devices-why = so { $platform } can control them when you ask
share-other = Access named “{ $scope }”
share-other-why = a permission { $company } defines for { $platform }; { $company } can tell you what it covers

## Error page
error-title = This link request cannot be completed
error-help = Return to the app you came from and start linking again.
service-unavailable = The service is briefly unavailable. Try again in a moment.
form-expired = The form expired. Go back and start again.
form-malformed = The form is malformed.
request-malformed = The request is malformed.
request-no-client = The request does not name a client.
request-unknown-client = The request names an unknown client.
request-no-redirect = The request has no redirect address.
request-repeated = The request names its client or redirect address more than once.
request-unregistered-redirect = The redirect address is not registered for this client.
provider-unavailable = { $name } is not answering right now. Try again in a few minutes.
provider-failed = Signing in with { $name } did not work. Return to the app you came from and start linking again.
provider-denied = You cancelled signing in with { $name }.
signin-expired = This sign-in has expired or was started in another browser. Return to the app you came from and start linking again.
provider-email-taken = Another account already uses the email address { $email }. Sign in with your password instead, or ask { $company } for help.
signin-not-offered = This way of signing in is not offered here.
password-signin-off = This app does not sign in with a password. Go back and choose how to continue.

## Account page
account-title = Your linked services
no-links = Nothing is linked to your account.
links-appear = A service appears here once { $platform } has finished linking: after you choose “Agree and link”, { $platform } exchanges the one-time code it received for access to your account, usually within seconds. If it does not appear, start linking again from { $platform }.
link-detail = Linked to { $platform } since { $date }
unlink-button = Unlink
signout-button = Sign out

## Unlink confirmation
unlink-title = Unlink { $name }?
unlink-explain = { $platform } will no longer be able to see your account or control your devices through { $name }. You can link again at any time from { $platform }.
unlink-confirm = Unlink
unlink-keep = Keep linked
