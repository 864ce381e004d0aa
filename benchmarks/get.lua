-- wrk script for benchmarks/run: GET PATH as USERS different users in turn.
-- Arguments: PATH KEY USERS PREFIX. With KEY "-" no Authorization is sent (GET /healthz).
-- Prints one machine-readable line (BERTH-RESULT) that benchmarks/run turns into its table.
function init(args)
  path = args[1]
  key = args[2]
  users = tonumber(args[3])
  prefix = args[4]
  position = 0
end

function request()
  position = position + 1
  if key == "-" then return wrk.format("GET", path) end
  return wrk.format("GET", path, {
    ["Authorization"] = "Bearer " .. key,
    ["X-User-Id"] = prefix .. (position % users),
  })
end

function done(summary, latency, requests)
  io.write(string.format("BERTH-RESULT %d %d %.1f %.1f %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99),
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
