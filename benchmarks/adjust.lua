-- wrk script for benchmarks/webhooks.sh: POST /api/admin/credits/adjustments, each for a user of its
-- own (so each write makes one credits.changed event with a subject of its own), for wrk's duration.
-- Arguments: KEY PREFIX.
local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end

function init(args)
  key = args[1]
  prefix = args[2] .. id .. "-"
  sent = 0
end

function request()
  sent = sent + 1
  local body = string.format('{"userId":"%s%d","amount":1,"reason":"webhook benchmark"}', prefix, sent)
  return wrk.format("POST", "/api/admin/credits/adjustments",
    { ["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json" }, body)
end

function response(status, headers, body)
  if status ~= 201 and status ~= 200 then io.write("BERTH-REFUSED " .. status .. " " .. body .. "\n") end
end

function done(summary, latency, requests)
  io.write(string.format("BERTH-RESULT %d %d %.1f %.1f %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99),
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
