-- wrk script for benchmarks/verify-purchase.sh.
-- Arguments: FILE KEY [replay]. FILE holds one request per line: user id, a tab, the JSON body.
-- First-time mode: each thread sends its own share of the lines once, then stops.
-- Replay mode: each thread cycles through the first 1000 lines (already confirmed) forever.
local threads = {}
local counter = 0

function setup(thread)
  thread:set("index", counter)
  counter = counter + 1
  table.insert(threads, thread)
  for _, each in ipairs(threads) do each:set("count", #threads) end
end

function init(args)
  local index = wrk.thread:get("index")
  key = args[2]
  replay = args[3] == "replay"
  requests = {}
  local line_number = 0
  for line in io.lines(args[1]) do
    if replay and line_number >= 1000 then break end
    local user, body = line:match("^([^\t]+)\t(.*)$")
    if user and (replay or line_number % thread_count() == index) then
      table.insert(requests, { user = user, body = body })
    end
    line_number = line_number + 1
  end
  position = 0
end

function thread_count()
  return tonumber(wrk.thread:get("count"))
end

function request()
  position = position + 1
  if position > #requests then
    if replay then
      position = 1
    else
      wrk.thread:stop()
      position = #requests
    end
  end
  local item = requests[position]
  return wrk.format("POST", "/api/verify-purchase", {
    ["Authorization"] = "Bearer " .. key,
    ["X-User-Id"] = item.user,
    ["Content-Type"] = "application/json",
  }, item.body)
end

function done(summary, latency, requests)
  io.write(string.format("wrk: %d requests, %d non-2xx/3xx, %d socket errors (connect %d, read %d, write %d, timeout %d)\n",
    summary.requests, summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout))
end
