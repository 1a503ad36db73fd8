# linkd's pages in Italian.

footer = Collegamento degli account

## Sign-in page
signin-title = Accedi
signin-heading = Accedi a { $company }
signin-lead = Accedi per collegare il tuo account { $company } a { $platform }.
account-signin-lead = Accedi per vedere e gestire i servizi collegati al tuo account.
email-label = Email
password-label = Password
signin-button = Accedi
forgot-password = Password dimenticata?
no-account = Non hai ancora un account?
signup-link = Creane uno
signin-failed = Questa email e questa password non corrispondono ad alcun account.
signin-throttled = Troppi tentativi. Attendi qualche minuto e riprova.
continue-with = Continua con { $name }
or-divider = oppure

## Consent page
consent-title = Collega il tuo account
consent-heading = Collega il tuo account { $company } a { $platform }
consent-lead = { $platform } potrà vedere i dati del tuo account indicati qui sotto e controllare i tuoi dispositivi { $company }.
signed-in-as = Accesso eseguito come
shared-heading = Cosa riceverà { $platform }
authorization-statement = Collegando l’account, autorizzi { $platform } ad accedere ai tuoi dispositivi { $company } e a controllarli.
privacy-policy = Informativa sulla privacy
agree-button = Accetta e collega
cancel-button = Annulla
switch-account = Non sei tu? Cambia account
share-id = L’ID del tuo account
share-id-why = affinché { $platform } possa distinguere il tuo account dagli altri
share-email = Il tuo indirizzo email
share-email-why = affinché tu possa riconoscere l’account collegato in { $platform }
share-profile = Il tuo nome e la tua immagine del profilo
share-profile-why = per mostrare l’account collegato in { $platform }
share-devices = Il controllo dei tuoi dispositivi
share-devices-why = affinché { $platform } possa controllarli quando lo chiedi
share-other = Accesso denominato «{ $scope }»
share-other-why = un’autorizzazione che { $company } definisce per { $platform }; { $company } può dirti cosa comprende

## Error page
error-title = Impossibile completare questa richiesta di collegamento
error-help = Torna all’app da cui sei arrivato e ricomincia il collegamento.
service-unavailable = Il servizio è momentaneamente non disponibile. Riprova tra un attimo.
form-expired = Il modulo è scaduto. Torna indietro e ricomincia.
form-malformed = Il modulo non è valido.
request-malformed = La richiesta non è valida.
request-no-client = La richiesta non indica alcun client.
request-unknown-client = La richiesta indica un client sconosciuto.
request-no-redirect = La richiesta non ha un indirizzo di reindirizzamento.
request-repeated = La richiesta indica il client o l’indirizzo di reindirizzamento più di una volta.
request-unregistered-redirect = L’indirizzo di reindirizzamento non è registrato per questo client.
provider-unavailable = { $name } non risponde in questo momento. Riprova tra qualche minuto.
provider-failed = L’accesso con { $name } non è riuscito. Torna all’app da cui sei arrivato e ricomincia il collegamento.
provider-denied = Hai annullato l’accesso con { $name }.
signin-expired = Questo accesso è scaduto oppure è stato avviato in un altro browser. Torna all’app da cui sei arrivato e ricomincia il collegamento.
provider-email-taken = Un altro account usa già l’indirizzo email { $email }. Accedi invece con la tua password oppure chiedi aiuto a { $company }.
signin-not-offered = Questo metodo di accesso non è disponibile qui.
password-signin-off = Questa app non prevede l’accesso con password. Torna indietro e scegli come continuare.

## Account page
account-title = I tuoi servizi collegati
no-links = Nessun servizio è collegato al tuo account.
links-appear = Un servizio compare qui non appena { $platform } ha completato il collegamento: dopo che hai scelto «Accetta e collega», { $platform } scambia il codice monouso ricevuto con l’accesso al tuo account, di solito in pochi secondi. Se non compare, ricomincia il collegamento da { $platform }.
link-detail = Collegato a { $platform } dal { $date }
unlink-button = Scollega
signout-button = Esci

## Unlink confirmation
unlink-title = Scollegare { $name }?
unlink-explain = { $platform } non potrà più vedere il tuo account né controllare i tuoi dispositivi tramite { $name }. Puoi ricollegarlo in qualsiasi momento da { $platform }.
unlink-confirm = Scollega
unlink-keep = Mantieni collegato
