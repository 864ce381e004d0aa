-- wrk script for benchmarks/run: GET PATH as USERS different users in turn.
-- Arguments: PATH KEY USERS PREFIX [NONCE]. With KEY "-" no Authorization is sent (GET /healthz); with
-- NONCE "1" each request sends its own X-Berth-Nonce (a signing tenant signs the answer over it).
-- Prints one machine-readable line (BERTH-RESULT) that benchmarks/run turns into its table.
function init(args)
  path = args[1]
  key = args[2]
  users = tonumber(args[3])
  prefix = args[4]
  nonce = args[5] == "1"
  position = 0
end

function request()
  position = position + 1
  if key == "-" then return wrk.format("GET", path) end
  local headers = {
    ["Authorization"] = "Bearer " .. key,
    ["X-User-Id"] = prefix .. (position % users),
  }
  if nonce then headers["X-Berth-Nonce"] = string.format("bench-%012d", position) end
  return wrk.format("GET", path, headers)
end

function done(summary, latency, requests)
  io.write(string.format("BERTH-RESULT %d %d %.1f %.1f %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99),
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
