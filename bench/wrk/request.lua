-- One fixed request for wrk, described by the environment (tokens never appear on a command
-- line): BENCH_METHOD, BENCH_PATH, BENCH_BODY, BENCH_CONTENT_TYPE, BENCH_AUTHORIZATION.
-- BENCH_DELAY_MS > 0 makes each connection wait that long (on average) before each request,
-- so that the offered rate is connections * 1000 / (BENCH_DELAY_MS + latency) requests per
-- second.
wrk.method = os.getenv("BENCH_METHOD") or "GET"
wrk.path = os.getenv("BENCH_PATH") or "/"
local body = os.getenv("BENCH_BODY")
if body and body ~= "" then
  wrk.body = body
end
local content_type = os.getenv("BENCH_CONTENT_TYPE")
if content_type and content_type ~= "" then
  wrk.headers["Content-Type"] = content_type
end
local authorization = os.getenv("BENCH_AUTHORIZATION")
if authorization and authorization ~= "" then
  wrk.headers["Authorization"] = authorization
end

local delay_ms = tonumber(os.getenv("BENCH_DELAY_MS") or "0") or 0
if delay_ms > 0 then
  -- wrk takes whole milliseconds: alternate between the two nearest so that the mean is
  -- the fractional delay asked for.
  local whole = math.floor(delay_ms)
  local fraction = delay_ms - whole
  math.randomseed(os.time())
  function delay()
    if math.random() < fraction then
      return whole + 1
    end
    return whole
  end
end

-- One machine-readable line after the human summary, for bench/run.
function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d non2xx=%d socket_errors=%d\n",
    summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    errors.status, errors.connect + errors.read + errors.write + errors.timeout))
end
