# linkd's pages in French.

footer = Association de comptes

## Sign-in page
signin-title = Connexion
signin-heading = Se connecter à { $company }
signin-lead = Connectez-vous pour associer votre compte { $company } à { $platform }.
account-signin-lead = Connectez-vous pour voir et gérer les services associés à votre compte.
email-label = Adresse e-mail
password-label = Mot de passe
signin-button = Se connecter
forgot-password = Mot de passe oublié ?
no-account = Pas encore de compte ?
signup-link = Créer un compte
signin-failed = Cette adresse e-mail et ce mot de passe ne correspondent à aucun compte.
signin-throttled = Trop de tentatives. Patientez quelques minutes, puis réessayez.
continue-with = Continuer avec { $name }
or-divider = ou

## Consent page
consent-title = Associer votre compte
consent-heading = Associer votre compte { $company } à { $platform }
consent-lead = { $platform } pourra voir les informations de compte ci-dessous et contrôler vos appareils { $company }.
signed-in-as = Connecté en tant que
shared-heading = Ce que { $platform } recevra
authorization-statement = En associant votre compte, vous autorisez { $platform } à accéder à vos appareils { $company } et à les contrôler.
privacy-policy = Politique de confidentialité
agree-button = Accepter et associer
cancel-button = Annuler
switch-account = Ce n’est pas vous ? Changer de compte
share-id = L’identifiant de votre compte
share-id-why = pour que { $platform } distingue votre compte des autres
share-email = Votre adresse e-mail
share-email-why = pour que vous reconnaissiez le compte associé dans { $platform }
share-profile = Votre nom et votre photo de profil
share-profile-why = pour afficher le compte associé dans { $platform }
share-devices = Le contrôle de vos appareils
share-devices-why = pour que { $platform } les contrôle lorsque vous le demandez
share-other = L’accès nommé « { $scope } »
share-other-why = une autorisation que { $company } définit pour { $platform } ; { $company } peut vous dire ce qu’elle couvre

## Error page
error-title = Cette demande d’association ne peut pas aboutir
error-help = Revenez à l’application d’où vous venez et recommencez l’association.
service-unavailable = Le service est momentanément indisponible. Réessayez dans un instant.
form-expired = Le formulaire a expiré. Revenez en arrière et recommencez.
form-malformed = Le formulaire est mal formé.
request-malformed = La demande est mal formée.
request-no-client = La demande ne désigne aucun client.
request-unknown-client = La demande désigne un client inconnu.
request-no-redirect = La demande n’indique aucune adresse de redirection.
request-repeated = La demande indique son client ou son adresse de redirection plus d’une fois.
request-unregistered-redirect = L’adresse de redirection n’est pas enregistrée pour ce client.
provider-unavailable = { $name } ne répond pas pour le moment. Réessayez dans quelques minutes.
provider-failed = La connexion avec { $name } n’a pas fonctionné. Revenez à l’application d’où vous venez et recommencez l’association.
provider-denied = Vous avez annulé la connexion avec { $name }.
signin-expired = Cette connexion a expiré ou a été commencée dans un autre navigateur. Revenez à l’application d’où vous venez et recommencez l’association.
provider-email-taken = Un autre compte utilise déjà l’adresse e-mail { $email }. Connectez-vous plutôt avec votre mot de passe ou demandez de l’aide à { $company }.
signin-not-offered = Ce mode de connexion n’est pas proposé ici.
password-signin-off = Cette application ne propose pas de connexion par mot de passe. Revenez en arrière et choisissez comment continuer.

## Account page
account-title = Vos services associés
no-links = Aucun service n’est associé à votre compte.
links-appear = Un service apparaît ici dès que { $platform } a terminé l’association : après que vous avez choisi « Accepter et associer », { $platform } échange le code à usage unique reçu contre l’accès à votre compte, en général en quelques secondes. S’il n’apparaît pas, recommencez l’association depuis { $platform }.
link-detail = Associé à { $platform } depuis le { $date }
unlink-button = Dissocier
signout-button = Se déconnecter

## Unlink confirmation
unlink-title = Dissocier { $name } ?
unlink-explain = { $platform } ne pourra plus voir votre compte ni contrôler vos appareils via { $name }. Vous pourrez les associer de nouveau à tout moment depuis { $platform }.
unlink-confirm = Dissocier
unlink-keep = Garder l’association
