# linkd's pages in Dutch.

footer = Accounts koppelen

## Sign-in page
signin-title = Inloggen
signin-heading = Inloggen bij { $company }
signin-lead = Log in om je { $company }-account aan { $platform } te koppelen.
account-signin-lead = Log in om de diensten te bekijken en te beheren die aan je account zijn gekoppeld.
email-label = E-mailadres
password-label = Wachtwoord
signin-button = Inloggen
forgot-password = Wachtwoord vergeten?
no-account = Nog geen account?
signup-link = Maak er een aan
signin-failed = Dit e-mailadres en wachtwoord horen niet bij een account.
signin-throttled = Te veel pogingen. Wacht een paar minuten en probeer het opnieuw.
continue-with = Doorgaan met { $name }
or-divider = of

## Consent page
consent-title = Account koppelen
consent-heading = Koppel je { $company }-account aan { $platform }
consent-lead = { $platform } kan dan de accountgegevens hieronder zien en je { $company }-apparaten bedienen.
signed-in-as = Ingelogd als
shared-heading = Wat { $platform } krijgt
authorization-statement = Door te koppelen geef je { $platform } toestemming om je { $company }-apparaten te openen en te bedienen.
privacy-policy = Privacybeleid
agree-button = Akkoord en koppelen
cancel-button = Annuleren
switch-account = Ben jij dit niet? Wissel van account
share-id = Je account-ID
share-id-why = zodat { $platform } je account van andere kan onderscheiden
share-email = Je e-mailadres
share-email-why = zodat je het gekoppelde account in { $platform } herkent
share-profile = Je naam en profielfoto
share-profile-why = om het gekoppelde account in { $platform } te tonen
share-devices = Bediening van je apparaten
share-devices-why = zodat { $platform } ze kan bedienen wanneer je erom vraagt
share-other = Toegang met de naam ‘{ $scope }’
share-other-why = een machtiging die { $company } voor { $platform } vastlegt; { $company } kan je vertellen wat die inhoudt

## Error page
error-title = Dit koppelverzoek kan niet worden voltooid
error-help = Ga terug naar de app waar je vandaan kwam en begin opnieuw met koppelen.
service-unavailable = De dienst is even niet beschikbaar. Probeer het zo opnieuw.
form-expired = Het formulier is verlopen. Ga terug en begin opnieuw.
form-malformed = Het formulier is ongeldig.
request-malformed = Het verzoek is ongeldig.
request-no-client = Het verzoek noemt geen client.
request-unknown-client = Het verzoek noemt een onbekende client.
request-no-redirect = Het verzoek heeft geen doorstuuradres.
request-repeated = Het verzoek noemt de client of het doorstuuradres meer dan eens.
request-unregistered-redirect = Het doorstuuradres is niet geregistreerd voor deze client.
provider-unavailable = { $name } reageert op dit moment niet. Probeer het over een paar minuten opnieuw.
provider-failed = Inloggen met { $name } is niet gelukt. Ga terug naar de app waar je vandaan kwam en begin opnieuw met koppelen.
provider-denied = Je hebt het inloggen met { $name } geannuleerd.
signin-expired = Deze inlogpoging is verlopen of in een andere browser gestart. Ga terug naar de app waar je vandaan kwam en begin opnieuw met koppelen.
provider-email-taken = Een ander account gebruikt het e-mailadres { $email } al. Log in plaats daarvan in met je wachtwoord, of vraag { $company } om hulp.
signin-not-offered = Deze manier van inloggen wordt hier niet aangeboden.
password-signin-off = Deze app biedt geen inloggen met wachtwoord. Ga terug en kies hoe je verder wilt gaan.

## Account page
account-title = Je gekoppelde diensten
no-links = Er is niets aan je account gekoppeld.
links-appear = Een dienst verschijnt hier zodra { $platform } het koppelen heeft voltooid: nadat je ‘Akkoord en koppelen’ hebt gekozen, wisselt { $platform } de ontvangen eenmalige code in voor toegang tot je account, meestal binnen enkele seconden. Verschijnt hij niet, begin dan opnieuw met koppelen vanuit { $platform }.
link-detail = Sinds { $date } gekoppeld aan { $platform }
unlink-button = Ontkoppelen
signout-button = Uitloggen

## Unlink confirmation
unlink-title = { $name } ontkoppelen?
unlink-explain = { $platform } kan dan via { $name } je account niet meer zien en je apparaten niet meer bedienen. Je kunt altijd opnieuw koppelen vanuit { $platform }.
unlink-confirm = Ontkoppelen
unlink-keep = Gekoppeld laten
