# linkd's pages in German.

footer = Kontoverknüpfung

## Sign-in page
signin-title = Anmelden
signin-heading = Bei { $company } anmelden
signin-lead = Melde dich an, um dein { $company }-Konto mit { $platform } zu verknüpfen.
account-signin-lead = Melde dich an, um die mit deinem Konto verknüpften Dienste zu sehen und zu verwalten.
email-label = E-Mail-Adresse
password-label = Passwort
signin-button = Anmelden
forgot-password = Passwort vergessen?
no-account = Noch kein Konto?
signup-link = Jetzt registrieren
signin-failed = Diese E-Mail-Adresse und dieses Passwort passen zu keinem Konto.
signin-throttled = Zu viele Versuche. Warte ein paar Minuten und versuche es dann erneut.
continue-with = Weiter mit { $name }
or-divider = oder

## Consent page
consent-title = Konto verknüpfen
consent-heading = Dein { $company }-Konto mit { $platform } verknüpfen
consent-lead = { $platform } kann dann die unten aufgeführten Kontodaten sehen und deine { $company }-Geräte steuern.
signed-in-as = Angemeldet als
shared-heading = Was { $platform } erhält
authorization-statement = Mit der Verknüpfung erlaubst du { $platform }, auf deine { $company }-Geräte zuzugreifen und sie zu steuern.
privacy-policy = Datenschutzerklärung
agree-button = Zustimmen und verknüpfen
cancel-button = Abbrechen
switch-account = Nicht du? Konto wechseln
share-id = Deine Konto-ID
share-id-why = damit { $platform } dein Konto von anderen unterscheiden kann
share-email = Deine E-Mail-Adresse
share-email-why = damit du das verknüpfte Konto in { $platform } wiedererkennst
share-profile = Dein Name und dein Profilbild
share-profile-why = um das verknüpfte Konto in { $platform } anzuzeigen
share-devices = Steuerung deiner Geräte
share-devices-why = damit { $platform } sie steuern kann, wenn du darum bittest
share-other = Zugriff namens „{ $scope }“
share-other-why = eine Berechtigung, die { $company } für { $platform } festlegt; { $company } kann dir sagen, was sie umfasst

## Error page
error-title = Diese Verknüpfungsanfrage kann nicht abgeschlossen werden
error-help = Kehre zur App zurück, aus der du gekommen bist, und starte die Verknüpfung neu.
service-unavailable = Der Dienst ist kurz nicht erreichbar. Versuche es gleich noch einmal.
form-expired = Das Formular ist abgelaufen. Geh zurück und beginne von vorn.
form-malformed = Das Formular ist fehlerhaft.
request-malformed = Die Anfrage ist fehlerhaft.
request-no-client = Die Anfrage nennt keinen Client.
request-unknown-client = Die Anfrage nennt einen unbekannten Client.
request-no-redirect = Die Anfrage enthält keine Weiterleitungsadresse.
request-repeated = Die Anfrage nennt ihren Client oder ihre Weiterleitungsadresse mehr als einmal.
request-unregistered-redirect = Die Weiterleitungsadresse ist für diesen Client nicht registriert.
provider-unavailable = { $name } antwortet gerade nicht. Versuche es in ein paar Minuten noch einmal.
provider-failed = Die Anmeldung mit { $name } hat nicht geklappt. Kehre zur App zurück, aus der du gekommen bist, und starte die Verknüpfung neu.
provider-denied = Du hast die Anmeldung mit { $name } abgebrochen.
signin-expired = Diese Anmeldung ist abgelaufen oder wurde in einem anderen Browser begonnen. Kehre zur App zurück, aus der du gekommen bist, und starte die Verknüpfung neu.
provider-email-taken = Die E-Mail-Adresse { $email } wird bereits von einem anderen Konto verwendet. Melde dich stattdessen mit deinem Passwort an oder bitte { $company } um Hilfe.
signin-not-offered = Diese Art der Anmeldung wird hier nicht angeboten.
password-signin-off = Diese App bietet keine Anmeldung mit Passwort an. Geh zurück und wähle, wie du fortfahren möchtest.

## Account page
account-title = Deine verknüpften Dienste
no-links = Mit deinem Konto ist nichts verknüpft.
links-appear = Ein Dienst erscheint hier, sobald { $platform } die Verknüpfung abgeschlossen hat: Nachdem du „Zustimmen und verknüpfen“ gewählt hast, tauscht { $platform } den erhaltenen Einmalcode gegen Zugriff auf dein Konto ein, meist innerhalb von Sekunden. Erscheint er nicht, starte die Verknüpfung in { $platform } neu.
link-detail = Seit { $date } mit { $platform } verknüpft
unlink-button = Trennen
signout-button = Abmelden

## Unlink confirmation
unlink-title = { $name } trennen?
unlink-explain = { $platform } kann dann über { $name } weder dein Konto sehen noch deine Geräte steuern. Du kannst die Verknüpfung jederzeit in { $platform } wiederherstellen.
unlink-confirm = Trennen
unlink-keep = Verknüpft lassen
