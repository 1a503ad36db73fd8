# linkd's pages in Korean.

footer = 계정 연결

## Sign-in page
signin-title = 로그인
signin-heading = { $company }에 로그인
signin-lead = 로그인하여 { $company } 계정을 { $platform }에 연결하세요.
account-signin-lead = 로그인하면 계정에 연결된 서비스를 확인하고 관리할 수 있습니다.
email-label = 이메일
password-label = 비밀번호
signin-button = 로그인
forgot-password = 비밀번호를 잊으셨나요?
no-account = 아직 계정이 없으신가요?
signup-link = 계정 만들기
signin-failed = 이메일과 비밀번호가 일치하는 계정이 없습니다.
signin-throttled = 시도 횟수가 너무 많습니다. 몇 분 후에 다시 시도하세요.
continue-with = { $name }(으)로 계속하기
or-divider = 또는

## Consent page
consent-title = 계정 연결
consent-heading = { $company } 계정을 { $platform }에 연결
consent-lead = { $platform }에서 아래 계정 정보를 확인하고 { $company } 기기를 제어할 수 있게 됩니다.
signed-in-as = 로그인한 계정:
shared-heading = { $platform }에 제공되는 정보
authorization-statement = 연결하면 { $platform }이(가) { $company } 기기에 액세스하고 제어하도록 승인하게 됩니다.
privacy-policy = 개인정보처리방침
agree-button = 동의 및 연결
cancel-button = 취소
switch-account = 본인이 아니신가요? 계정 전환
share-id = 계정 ID
share-id-why = { $platform }에서 내 계정을 다른 계정과 구분하기 위해
share-email = 이메일 주소
share-email-why = { $platform }에서 연결된 계정을 알아볼 수 있도록
share-profile = 이름 및 프로필 사진
share-profile-why = { $platform }에 연결된 계정을 표시하기 위해
share-devices = 기기 제어
share-devices-why = 요청할 때 { $platform }에서 기기를 제어할 수 있도록
share-other = '{ $scope }' 액세스
share-other-why = { $company }에서 { $platform }용으로 정의한 권한입니다. 포함되는 범위는 { $company }에 문의하세요

## Error page
error-title = 이 연결 요청을 완료할 수 없습니다
error-help = 이전 앱으로 돌아가 연결을 다시 시작하세요.
service-unavailable = 서비스를 잠시 사용할 수 없습니다. 잠시 후 다시 시도하세요.
form-expired = 양식이 만료되었습니다. 뒤로 돌아가 처음부터 다시 시작하세요.
form-malformed = 양식 형식이 올바르지 않습니다.
request-malformed = 요청 형식이 올바르지 않습니다.
request-no-client = 요청에 클라이언트가 지정되지 않았습니다.
request-unknown-client = 요청에 알 수 없는 클라이언트가 지정되었습니다.
request-no-redirect = 요청에 리디렉션 주소가 없습니다.
request-repeated = 요청에 클라이언트 또는 리디렉션 주소가 두 번 이상 지정되었습니다.
request-unregistered-redirect = 이 리디렉션 주소는 이 클라이언트에 등록되어 있지 않습니다.
provider-unavailable = 지금은 { $name }에서 응답하지 않습니다. 몇 분 후에 다시 시도하세요.
provider-failed = { $name }(으)로 로그인하지 못했습니다. 이전 앱으로 돌아가 연결을 다시 시작하세요.
provider-denied = { $name }(으)로 로그인을 취소했습니다.
signin-expired = 이 로그인은 만료되었거나 다른 브라우저에서 시작되었습니다. 이전 앱으로 돌아가 연결을 다시 시작하세요.
provider-email-taken = 다른 계정에서 이미 이메일 주소 { $email }을(를) 사용하고 있습니다. 대신 비밀번호로 로그인하거나 { $company }에 도움을 요청하세요.
signin-not-offered = 이 로그인 방법은 여기에서 제공되지 않습니다.
password-signin-off = 이 앱은 비밀번호 로그인을 제공하지 않습니다. 이전 화면으로 돌아가 계속할 방법을 선택하세요.

## Account page
account-title = 연결된 서비스
no-links = 계정에 연결된 서비스가 없습니다.
links-appear = { $platform }에서 연결을 완료하면 여기에 서비스가 표시됩니다. '동의 및 연결'을 선택하면 { $platform }이(가) 받은 일회용 코드를 계정 액세스 권한으로 교환하며, 보통 몇 초 안에 완료됩니다. 표시되지 않으면 { $platform }에서 다시 연결하세요.
link-detail = { $date }부터 { $platform }에 연결됨
unlink-button = 연결 해제
signout-button = 로그아웃

## Unlink confirmation
unlink-title = { $name } 연결을 해제하시겠습니까?
unlink-explain = { $platform }에서 더 이상 { $name }을(를) 통해 내 계정을 확인하거나 기기를 제어할 수 없습니다. 언제든지 { $platform }에서 다시 연결할 수 있습니다.
unlink-confirm = 연결 해제
unlink-keep = 연결 유지
