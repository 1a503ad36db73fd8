# linkd's pages in Brazilian Portuguese (also served for other Portuguese locales).

footer = Vinculação de contas

## Sign-in page
signin-title = Entrar
signin-heading = Entre na sua conta { $company }
signin-lead = Entre para vincular sua conta { $company } ao { $platform }.
account-signin-lead = Entre para ver e gerenciar os serviços vinculados à sua conta.
email-label = E-mail
password-label = Senha
signin-button = Entrar
forgot-password = Esqueceu a senha?
no-account = Ainda não tem uma conta?
signup-link = Criar uma
signin-failed = Esse e-mail e essa senha não correspondem a nenhuma conta.
signin-throttled = Muitas tentativas. Aguarde alguns minutos e tente novamente.
continue-with = Continuar com { $name }
or-divider = ou

## Consent page
consent-title = Vincular sua conta
consent-heading = Vincular sua conta { $company } ao { $platform }
consent-lead = O { $platform } poderá ver os dados da conta abaixo e controlar seus dispositivos { $company }.
signed-in-as = Conectado como
shared-heading = O que o { $platform } vai receber
authorization-statement = Ao vincular, você autoriza o { $platform } a acessar e controlar seus dispositivos { $company }.
privacy-policy = Política de privacidade
agree-button = Concordar e vincular
cancel-button = Cancelar
switch-account = Não é você? Trocar de conta
share-id = O ID da sua conta
share-id-why = para que o { $platform } diferencie sua conta das demais
share-email = Seu endereço de e-mail
share-email-why = para que você reconheça a conta vinculada no { $platform }
share-profile = Seu nome e sua foto de perfil
share-profile-why = para mostrar a conta vinculada no { $platform }
share-devices = O controle dos seus dispositivos
share-devices-why = para que o { $platform } os controle quando você pedir
share-other = Acesso chamado “{ $scope }”
share-other-why = uma permissão que a { $company } define para o { $platform }; a { $company } pode explicar o que ela abrange

## Error page
error-title = Não é possível concluir esta solicitação de vinculação
error-help = Volte ao app de onde você veio e comece a vinculação de novo.
service-unavailable = O serviço está indisponível no momento. Tente novamente em instantes.
form-expired = O formulário expirou. Volte e comece de novo.
form-malformed = O formulário é inválido.
request-malformed = A solicitação é inválida.
request-no-client = A solicitação não indica nenhum cliente.
request-unknown-client = A solicitação indica um cliente desconhecido.
request-no-redirect = A solicitação não tem endereço de redirecionamento.
request-repeated = A solicitação indica o cliente ou o endereço de redirecionamento mais de uma vez.
request-unregistered-redirect = O endereço de redirecionamento não está registrado para este cliente.
provider-unavailable = { $name } não está respondendo agora. Tente novamente em alguns minutos.
provider-failed = Não foi possível entrar com { $name }. Volte ao app de onde você veio e comece a vinculação de novo.
provider-denied = Você cancelou a entrada com { $name }.
signin-expired = Esta entrada expirou ou foi iniciada em outro navegador. Volte ao app de onde você veio e comece a vinculação de novo.
provider-email-taken = Outra conta já usa o endereço de e-mail { $email }. Entre com sua senha ou peça ajuda à { $company }.
signin-not-offered = Esta forma de entrar não está disponível aqui.
password-signin-off = Este app não oferece entrada com senha. Volte e escolha como continuar.

## Account page
account-title = Seus serviços vinculados
no-links = Nada está vinculado à sua conta.
links-appear = Um serviço aparece aqui assim que o { $platform } conclui a vinculação: depois que você escolhe “Concordar e vincular”, o { $platform } troca o código de uso único recebido por acesso à sua conta, geralmente em segundos. Se ele não aparecer, comece a vinculação de novo pelo { $platform }.
link-detail = Vinculado ao { $platform } desde { $date }
unlink-button = Desvincular
signout-button = Sair

## Unlink confirmation
unlink-title = Desvincular { $name }?
unlink-explain = O { $platform } não poderá mais ver sua conta nem controlar seus dispositivos por meio de { $name }. Você pode vincular de novo a qualquer momento pelo { $platform }.
unlink-confirm = Desvincular
unlink-keep = Manter vinculado
