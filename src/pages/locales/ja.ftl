# linkd's pages in Japanese.

footer = アカウントのリンク

## Sign-in page
signin-title = ログイン
signin-heading = { $company } にログイン
signin-lead = ログインして、{ $company } アカウントを { $platform } にリンクします。
account-signin-lead = ログインすると、アカウントにリンクされているサービスを確認、管理できます。
email-label = メールアドレス
password-label = パスワード
signin-button = ログイン
forgot-password = パスワードをお忘れの場合
no-account = アカウントをお持ちでない場合
signup-link = 新規登録
signin-failed = メールアドレスまたはパスワードが正しくありません。
signin-throttled = 試行回数が多すぎます。数分待ってからもう一度お試しください。
continue-with = { $name } で続行
or-divider = または

## Consent page
consent-title = アカウントをリンク
consent-heading = { $company } アカウントを { $platform } にリンク
consent-lead = { $platform } は、以下のアカウント情報を参照し、{ $company } のデバイスを操作できるようになります。
signed-in-as = ログイン中のアカウント:
shared-heading = { $platform } に提供される情報
authorization-statement = リンクすると、{ $platform } が { $company } のデバイスにアクセスして操作することを許可したことになります。
privacy-policy = プライバシー ポリシー
agree-button = 同意してリンク
cancel-button = キャンセル
switch-account = ご本人でない場合は、アカウントを切り替える
share-id = アカウント ID
share-id-why = { $platform } があなたのアカウントを他のアカウントと区別するため
share-email = メールアドレス
share-email-why = { $platform } でリンクしたアカウントを確認できるようにするため
share-profile = 名前とプロフィール写真
share-profile-why = { $platform } でリンクしたアカウントを表示するため
share-devices = デバイスの操作
share-devices-why = あなたの指示に応じて { $platform } がデバイスを操作するため
share-other = 「{ $scope }」へのアクセス
share-other-why = { $company } が { $platform } 向けに定めた権限です。対象の範囲は { $company } にお問い合わせください

## Error page
error-title = このリンク リクエストを完了できません
error-help = 元のアプリに戻り、もう一度リンクを開始してください。
service-unavailable = サービスが一時的に利用できません。しばらくしてからもう一度お試しください。
form-expired = フォームの有効期限が切れました。前のページに戻って、最初からやり直してください。
form-malformed = フォームの形式が正しくありません。
request-malformed = リクエストの形式が正しくありません。
request-no-client = リクエストにクライアントが指定されていません。
request-unknown-client = リクエストに不明なクライアントが指定されています。
request-no-redirect = リクエストにリダイレクト先のアドレスがありません。
request-repeated = リクエストでクライアントまたはリダイレクト先のアドレスが複数回指定されています。
request-unregistered-redirect = このリダイレクト先のアドレスは、このクライアントに登録されていません。
provider-unavailable = { $name } が現在応答していません。数分後にもう一度お試しください。
provider-failed = { $name } でログインできませんでした。元のアプリに戻り、もう一度リンクを開始してください。
provider-denied = { $name } でのログインをキャンセルしました。
signin-expired = このログインは有効期限が切れたか、別のブラウザで開始されました。元のアプリに戻り、もう一度リンクを開始してください。
provider-email-taken = メールアドレス { $email } は別のアカウントで使用されています。代わりにパスワードでログインするか、{ $company } にお問い合わせください。
signin-not-offered = このログイン方法はここではご利用いただけません。
password-signin-off = このアプリではパスワードでログインできません。前の画面に戻り、続ける方法を選んでください。

## Account page
account-title = リンク済みのサービス
no-links = アカウントにリンクされているサービスはありません。
links-appear = { $platform } がリンクを完了すると、ここにサービスが表示されます。「同意してリンク」を選ぶと、{ $platform } は受け取ったワンタイム コードをアカウントへのアクセス権と交換します。通常は数秒で完了します。表示されない場合は、{ $platform } からもう一度リンクしてください。
link-detail = { $platform } にリンク済み（{ $date } から）
unlink-button = リンク解除
signout-button = ログアウト

## Unlink confirmation
unlink-title = { $name } のリンクを解除しますか?
unlink-explain = { $platform } は { $name } を通じてあなたのアカウントを参照したり、デバイスを操作したりできなくなります。{ $platform } からいつでも再度リンクできます。
unlink-confirm = リンク解除
unlink-keep = リンクを維持
