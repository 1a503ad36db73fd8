# linkd's pages in Traditional Chinese (also served for zh-HK, zh-MO and zh-Hant).

footer = 帳戶連結

## Sign-in page
signin-title = 登入
signin-heading = 登入 { $company }
signin-lead = 登入即可將你的 { $company } 帳戶連結至 { $platform }。
account-signin-lead = 登入即可查看及管理已連結至你帳戶的服務。
email-label = 電子郵件
password-label = 密碼
signin-button = 登入
forgot-password = 忘記密碼？
no-account = 還沒有帳戶嗎？
signup-link = 立即建立
signin-failed = 這組電子郵件和密碼不符合任何帳戶。
signin-throttled = 嘗試次數過多，請稍候幾分鐘再試一次。
continue-with = 使用 { $name } 繼續
or-divider = 或

## Consent page
consent-title = 連結你的帳戶
consent-heading = 將你的 { $company } 帳戶連結至 { $platform }
consent-lead = { $platform } 將可查看下列帳戶資料，並控制你的 { $company } 裝置。
signed-in-as = 目前登入的帳戶：
shared-heading = { $platform } 將取得的資料
authorization-statement = 連結後，即表示你授權 { $platform } 存取及控制你的 { $company } 裝置。
privacy-policy = 隱私權政策
agree-button = 同意並連結
cancel-button = 取消
switch-account = 不是你嗎？切換帳戶
share-id = 你的帳戶 ID
share-id-why = 讓 { $platform } 區分你的帳戶與其他帳戶
share-email = 你的電子郵件地址
share-email-why = 讓你在 { $platform } 中認出已連結的帳戶
share-profile = 你的姓名和個人資料相片
share-profile-why = 用於在 { $platform } 中顯示已連結的帳戶
share-devices = 控制你的裝置
share-devices-why = 讓 { $platform } 在你要求時控制裝置
share-other = 名為「{ $scope }」的存取權
share-other-why = 這是 { $company } 為 { $platform } 定義的權限；詳細範圍請洽詢 { $company }

## Error page
error-title = 無法完成這項連結要求
error-help = 請返回原本的應用程式，重新開始連結。
service-unavailable = 服務暫時無法使用，請稍後再試。
form-expired = 表單已過期，請返回上一頁重新開始。
form-malformed = 表單格式不正確。
request-malformed = 要求的格式不正確。
request-no-client = 要求未指定用戶端。
request-unknown-client = 要求指定了不明的用戶端。
request-no-redirect = 要求沒有重新導向位址。
request-repeated = 要求多次指定了用戶端或重新導向位址。
request-unregistered-redirect = 這個重新導向位址未登錄於此用戶端。
provider-unavailable = { $name } 目前沒有回應，請過幾分鐘再試一次。
provider-failed = 無法使用 { $name } 登入。請返回原本的應用程式，重新開始連結。
provider-denied = 你已取消使用 { $name } 登入。
signin-expired = 這次登入已過期，或是在其他瀏覽器中開始的。請返回原本的應用程式，重新開始連結。
provider-email-taken = 電子郵件地址 { $email } 已由其他帳戶使用。請改用密碼登入，或向 { $company } 尋求協助。
signin-not-offered = 此處不提供這種登入方式。
password-signin-off = 此應用程式不提供密碼登入。請返回並選擇繼續的方式。

## Account page
account-title = 你已連結的服務
no-links = 你的帳戶目前沒有任何連結。
links-appear = { $platform } 完成連結後，服務就會顯示在這裡：在你選擇「同意並連結」後，{ $platform } 會以收到的一次性代碼換取你帳戶的存取權，通常只需幾秒鐘。如果沒有顯示，請從 { $platform } 重新連結。
link-detail = 自 { $date } 起已連結至 { $platform }
unlink-button = 解除連結
signout-button = 登出

## Unlink confirmation
unlink-title = 要解除 { $name } 的連結嗎？
unlink-explain = { $platform } 將無法再透過 { $name } 查看你的帳戶或控制你的裝置。你隨時可以從 { $platform } 重新連結。
unlink-confirm = 解除連結
unlink-keep = 保持連結
