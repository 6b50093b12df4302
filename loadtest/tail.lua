-- wrk script for the load-test scripts: after the run, one line with the latency tail that
-- wrk's --latency leaves out (p98 and p99.9, in microseconds), for loadtest/wrk_report.py.
-- WRK_POST_BYTES=N (environment) makes every request a POST with an N-byte body (wrk adds
-- its Content-Length). Without a request() function wrk keeps sending its one prepared
-- request (no Lua per request).
local post = tonumber(os.getenv("WRK_POST_BYTES") or "0")
if post > 0 then
  wrk.method = "POST"
  wrk.body = string.rep("p", post)
  wrk.headers["Content-Type"] = "application/octet-stream"
end

done = function(summary, latency, requests)
  io.write(string.format("tail_us p90=%d p98=%d p999=%d max=%d\n",
    latency:percentile(90), latency:percentile(98), latency:percentile(99.9), latency.max))
end
