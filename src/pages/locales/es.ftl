# linkd's pages in Spanish.

footer = Vinculación de cuentas

## Sign-in page
signin-title = Iniciar sesión
signin-heading = Inicia sesión en { $company }
signin-lead = Inicia sesión para vincular tu cuenta de { $company } con { $platform }.
account-signin-lead = Inicia sesión para ver y gestionar los servicios vinculados a tu cuenta.
email-label = Correo electrónico
password-label = Contraseña
signin-button = Iniciar sesión
forgot-password = ¿Has olvidado tu contraseña?
no-account = ¿Aún no tienes cuenta?
signup-link = Crear una
signin-failed = Ese correo electrónico y esa contraseña no corresponden a ninguna cuenta.
signin-throttled = Demasiados intentos. Espera unos minutos y vuelve a intentarlo.
continue-with = Continuar con { $name }
or-divider = o

## Consent page
consent-title = Vincular tu cuenta
consent-heading = Vincula tu cuenta de { $company } con { $platform }
consent-lead = { $platform } podrá ver los datos de tu cuenta que se indican abajo y controlar tus dispositivos de { $company }.
signed-in-as = Sesión iniciada como
shared-heading = Qué recibirá { $platform }
authorization-statement = Al vincular la cuenta, autorizas a { $platform } a acceder a tus dispositivos de { $company } y a controlarlos.
privacy-policy = Política de privacidad
agree-button = Aceptar y vincular
cancel-button = Cancelar
switch-account = ¿No eres tú? Cambiar de cuenta
share-id = El ID de tu cuenta
share-id-why = para que { $platform } distinga tu cuenta de las demás
share-email = Tu dirección de correo electrónico
share-email-why = para que reconozcas la cuenta vinculada en { $platform }
share-profile = Tu nombre y tu foto de perfil
share-profile-why = para mostrar la cuenta vinculada en { $platform }
share-devices = El control de tus dispositivos
share-devices-why = para que { $platform } los controle cuando se lo pidas
share-other = Acceso denominado «{ $scope }»
share-other-why = un permiso que { $company } define para { $platform }; { $company } puede explicarte qué abarca

## Error page
error-title = No se puede completar esta solicitud de vinculación
error-help = Vuelve a la aplicación de la que vienes y empieza a vincular de nuevo.
service-unavailable = El servicio no está disponible en este momento. Vuelve a intentarlo enseguida.
form-expired = El formulario ha caducado. Vuelve atrás y empieza de nuevo.
form-malformed = El formulario no es válido.
request-malformed = La solicitud no es válida.
request-no-client = La solicitud no indica ningún cliente.
request-unknown-client = La solicitud indica un cliente desconocido.
request-no-redirect = La solicitud no tiene dirección de redirección.
request-repeated = La solicitud indica su cliente o su dirección de redirección más de una vez.
request-unregistered-redirect = La dirección de redirección no está registrada para este cliente.
provider-unavailable = { $name } no responde en este momento. Vuelve a intentarlo dentro de unos minutos.
provider-failed = No se ha podido iniciar sesión con { $name }. Vuelve a la aplicación de la que vienes y empieza a vincular de nuevo.
provider-denied = Has cancelado el inicio de sesión con { $name }.
signin-expired = Este inicio de sesión ha caducado o se empezó en otro navegador. Vuelve a la aplicación de la que vienes y empieza a vincular de nuevo.
provider-email-taken = Otra cuenta ya usa la dirección de correo electrónico { $email }. Inicia sesión con tu contraseña o pide ayuda a { $company }.
signin-not-offered = Esta forma de iniciar sesión no está disponible aquí.
password-signin-off = Esta aplicación no permite iniciar sesión con contraseña. Vuelve atrás y elige cómo continuar.

## Account page
account-title = Tus servicios vinculados
no-links = No hay nada vinculado a tu cuenta.
links-appear = Un servicio aparece aquí en cuanto { $platform } termina la vinculación: después de que elijas «Aceptar y vincular», { $platform } canjea el código de un solo uso que ha recibido por acceso a tu cuenta, normalmente en unos segundos. Si no aparece, vuelve a vincular desde { $platform }.
link-detail = Vinculado con { $platform } desde el { $date }
unlink-button = Desvincular
signout-button = Cerrar sesión

## Unlink confirmation
unlink-title = ¿Desvincular { $name }?
unlink-explain = { $platform } ya no podrá ver tu cuenta ni controlar tus dispositivos a través de { $name }. Puedes volver a vincularlo cuando quieras desde { $platform }.
unlink-confirm = Desvincular
unlink-keep = Mantener vinculado
